package hubtest

import (
	"net/http"
	"net/url"
	"strings"
)

// repoLookup is what the fake knows of the repo a request names: the repo
// itself, the id it was renamed to (answered 307, also for another letter
// case), or the Hub's error for a missing or hidden repo.
type repoLookup struct {
	repo   *repo
	moved  string // the current id, when the request used an old one
	status int    // the error's status, when neither repo nor moved is set
	code   string // its X-Error-Code ("" for none)
	msg    string // its message
}

// lookup finds the repo id for request r.
func (h *Hub) lookup(r *http.Request, id string) repoLookup {
	h.mu.Lock()
	defer h.mu.Unlock()
	tok := h.bearer(r)
	rp := h.repos[id]
	if rp == nil {
		if to, found := h.renamed[id]; found {
			return repoLookup{moved: to}
		}
		for other := range h.repos {
			if strings.EqualFold(other, id) {
				return repoLookup{moved: other}
			}
		}
	}
	authorized := h.token != "" && tok == h.token
	if rp == nil || (rp.Private && !authorized) {
		if tok == "" {
			return repoLookup{status: http.StatusUnauthorized, msg: "Invalid username or password."}
		}
		return repoLookup{status: http.StatusNotFound, code: "RepoNotFound", msg: "Repository not found"}
	}
	return repoLookup{repo: rp}
}

// answer answers a request whose repo is not served under this id: 307 to
// loc(moved) for a renamed repo, the Hub's error otherwise. It returns false
// when there is a repo to serve.
func (l repoLookup) answer(w http.ResponseWriter, r *http.Request, loc func(moved string) string) bool {
	switch {
	case l.moved != "":
		renamed(w, r, loc(l.moved))
	case l.repo == nil:
		hubError(w, r, l.status, l.code, l.msg)
	default:
		return false
	}
	return true
}

func (h *Hub) serveInfo(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/models/")
	id, rev, hasRev := strings.Cut(rest, "/revision/")
	if strings.Count(id, "/") > 1 {
		hubError(w, r, http.StatusNotFound, "", "Sorry, we can't find the page you are looking for.")
		return
	}
	found := h.lookup(r, id)
	if found.answer(w, r, func(moved string) string {
		if hasRev {
			return "/api/models/" + moved + "/revision/" + url.PathEscape(rev)
		}
		return "/api/models/" + moved
	}) {
		return
	}
	rp := found.repo
	h.mu.Lock()
	validRev := !hasRev || rev == "main" || rp.commits[rev]
	h.mu.Unlock()
	if !validRev {
		hubError(w, r, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	q := r.URL.Query()
	fields, err := expandFields(q)
	if err != nil {
		hubError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	if len(fields) == 0 {
		fields = infoDefault
	}
	h.mu.Lock()
	m := h.modelJSON(rp, fields, q.Get("blobs") == "true" || q.Get("blobs") == "1")
	if hasRev && rev != "main" {
		m["sha"] = rev
	}
	h.mu.Unlock()
	writeJSON(w, r, http.StatusOK, m)
}

// renamed answers 307 to loc, the same request under a repo's new id.
func renamed(w http.ResponseWriter, r *http.Request, loc string) {
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusTemporaryRedirect)
}
