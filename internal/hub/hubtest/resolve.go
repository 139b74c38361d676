package hubtest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

func (h *Hub) serveResolve(w http.ResponseWriter, r *http.Request) {
	ep := r.URL.EscapedPath()
	i := strings.Index(ep, "/resolve/")
	idEsc, rest := ep[1:i], ep[i+len("/resolve/"):]
	revEsc, fileEsc, _ := strings.Cut(rest, "/")
	id, err1 := url.PathUnescape(idEsc)
	rev, err2 := url.PathUnescape(revEsc)
	name, err3 := url.PathUnescape(fileEsc)
	if err1 != nil || err2 != nil || err3 != nil || strings.Count(id, "/") > 1 {
		hubError(w, r, http.StatusBadRequest, "", "Invalid path")
		return
	}
	found := h.lookup(r, id)
	if found.answer(w, r, func(moved string) string { return "/" + moved + "/resolve/" + revEsc + "/" + fileEsc }) {
		return
	}
	rp := found.repo
	h.mu.Lock()
	tok := h.bearer(r)
	authorized := h.token != "" && tok == h.token
	validRev := rev == "main" || rp.commits[rev]
	sha := rp.SHA
	if rev != "main" {
		sha = rev
	}
	f := rp.files[name]
	h.mu.Unlock()
	switch {
	case rp.Disabled:
		hubError(w, r, http.StatusForbidden, "", "Access to this resource is disabled.")
		return
	case rp.Gated != "" && !authorized && tok == "":
		hubError(w, r, http.StatusUnauthorized, "GatedRepo", fmt.Sprintf(
			"Access to model %s is restricted. You must have access to it and be authenticated to access it. Please log in.", rp.ID))
		return
	case rp.Gated != "" && !authorized:
		hubError(w, r, http.StatusForbidden, "GatedRepo", fmt.Sprintf(
			"Access to model %s is restricted and you are not in the authorized list. Visit https://huggingface.co/%s to ask for access.", rp.ID, rp.ID))
		return
	case !validRev:
		hubError(w, r, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	case f == nil:
		w.Header().Set("X-Repo-Commit", sha)
		hubError(w, r, http.StatusNotFound, "EntryNotFound", "Entry not found")
		return
	}
	w.Header().Set("X-Repo-Commit", sha)
	w.Header().Set("Access-Control-Expose-Headers", "X-Repo-Commit,X-Linked-Etag,X-Linked-Size,ETag")
	if hf, ok := h.hugeFile(rp.ID, name); ok {
		serveHuge(w, r, hf)
		return
	}
	if f.lfs {
		loc := fmt.Sprintf("%s/lfs/%s?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-Signature=%s",
			h.cdn.URL, f.sha256, GitBlobSHA1([]byte(f.sha256))[:16])
		body := "Found. Redirecting to " + loc
		w.Header().Set("Location", loc)
		w.Header().Set("ETag", `"`+f.oid+`"`)
		w.Header().Set("X-Linked-Etag", `"`+f.sha256+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.data)))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusFound)
		if r.Method != http.MethodHead {
			fmt.Fprint(w, body)
		}
		return
	}
	w.Header().Set("ETag", `"`+f.oid+`"`)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename*=UTF-8''%s; filename="%s"`, url.PathEscape(path.Base(name)), path.Base(name)))
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}

func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		// S3 refuses a presigned URL that also carries an Authorization header.
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified</Message></Error>`)
		return
	}
	sha, ok := strings.CutPrefix(r.URL.Path, "/lfs/")
	if !ok || r.URL.Query().Get("X-Amz-Signature") == "" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		return
	}
	h.mu.Lock()
	data, found := h.blobs[sha]
	h.mu.Unlock()
	if !found {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code></Error>`)
		return
	}
	w.Header().Set("ETag", `"`+sha+`"`)
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}
