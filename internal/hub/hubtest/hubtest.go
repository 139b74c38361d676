// Package hubtest is a fake Hugging Face Hub for tests: two httptest
// servers on loopback, the Hub and its CDN, that answer like the real ones
// as huggingface_hub sees them.
//
// What it reproduces (checked against huggingface_hub and recorded answers
// of huggingface.co):
//
//   - GET /api/models: sort (downloads, likes, trendingScore, lastModified,
//     createdAt), direction, limit (capped at 1000 a page), filter (tags,
//     ANDed), pipeline_tag, library, author, search, expand / expand[] (an
//     unknown field is a 400), and pagination with a base64 cursor in
//     `Link: <…/api/models?…&cursor=…>; rel="next"`. Without expand the
//     default fields; with it, _id, id and the fields asked for. Siblings in
//     listings carry names only.
//   - GET /api/models/{id}[/revision/{rev}]: model info with siblings
//     (?blobs=true adds size, blobId and lfs {sha256, size, pointerSize}).
//   - GET/HEAD /{id}/resolve/{rev}/{file}: files in git answer 200 with
//     ETag (git blob sha1) and X-Repo-Commit; LFS files answer 302 to the CDN
//     with X-Linked-Etag (quoted sha256), X-Linked-Size, X-Repo-Commit and
//     the pointer's ETag. Range requests, HEAD.
//   - The CDN (/lfs/<sha256>?X-Amz-Signature=…) serves LFS content with
//     Range, and refuses a request that carries an Authorization header
//     with 400, as S3 does for presigned URLs.
//   - Renames: old ids answer 307 with a relative Location, on the API and
//     on resolve; so do ids in another letter case.
//   - Errors with the Hub's headers and bodies: a missing or private repo is
//     401 {"error":"Invalid username or password."} anonymously (no
//     X-Error-Code), 404 RepoNotFound with a token; gated files are 401
//     (anonymous) or 403 (token without access) with X-Error-Code: GatedRepo;
//     disabled repos have "disabled": true in their info and their files are
//     403 "Access to this resource is disabled."; unknown revisions are 404
//     RevisionNotFound, unknown files 404 EntryNotFound.
//   - Every Hub answer carries `RateLimit: "api";r=N;t=N` and
//     `RateLimit-Policy: "fixed window";"api";q=N;w=N` for its resource
//     (api, resolvers, pages); a spent window answers 429.
//
// Faults (429, 5xx, slow answers, truncated or corrupted bodies, dropped
// connections, malformed JSON) are injected per path prefix with Fault.
package hubtest

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Repo is one model repository served by the fake.
type Repo struct {
	ID            string // "org/name" or a legacy "name"
	SHA           string // commit of main; derived from the content when empty
	PipelineTag   string
	Library       string
	Tags          []string
	Gated         string // "", "auto" or "manual"
	Disabled      bool
	Private       bool
	Downloads     int64
	Likes         int64
	TrendingScore float64
	LastModified  time.Time         // default: 2024-01-02T03:04:05Z
	Config        map[string]any    // the "config" field of listings and model info
	Files         map[string][]byte // path → content
	LFS           map[string]bool   // files stored with LFS (served through the CDN)
	RenamedFrom   []string          // old ids that answer 307 to ID
}

// Request is one request either server received, in arrival order.
type Request struct {
	Server        string // "hub" or "cdn"
	Method        string
	Path          string // decoded path
	RawQuery      string
	Host          string
	Authorization string // the header as received ("" when absent)
	Range         string
	Status        int // status sent (0 when the connection was dropped before any answer)
}

// Hub is the fake Hub and its CDN.
type Hub struct {
	t   testing.TB
	hub *httptest.Server
	cdn *httptest.Server

	mu       sync.Mutex
	repos    map[string]*repo  // by id
	order    []string          // ids in the order added
	renamed  map[string]string // old id → id
	blobs    map[string][]byte // sha256 → content, for the CDN
	token    string
	rejected map[string]bool // tokens answered "Invalid credentials"
	log      []*Request
	faults   []*faultState
	limits   map[string]*window
	pageSize int // largest page; 0 means the Hub's 1000
}

type repo struct {
	Repo
	commits map[string]bool // every commit main has been at
	files   map[string]*file
}

type file struct {
	data    []byte
	lfs     bool
	sha256  string
	oid     string // git blob id of what git stores: the content, or the LFS pointer
	pointer []byte // LFS pointer file
}

// Rate-limit quotas per 300 s window by default: generous, so that only
// tests that ask (SetRateLimit) see them run out.
var defaultLimits = map[string]int{"api": 10000, "resolvers": 50000, "pages": 1000}

// New starts the fake Hub and CDN with repos; they are closed when the test
// ends.
func New(t testing.TB, repos ...Repo) *Hub {
	t.Helper()
	h := &Hub{
		t:        t,
		repos:    map[string]*repo{},
		renamed:  map[string]string{},
		blobs:    map[string][]byte{},
		rejected: map[string]bool{},
		limits:   map[string]*window{},
	}
	for res, q := range defaultLimits {
		h.limits[res] = &window{q: q, w: 300 * time.Second}
	}
	h.hub = httptest.NewServer(h.wrap("hub", http.HandlerFunc(h.serveHub)))
	h.cdn = httptest.NewServer(h.wrap("cdn", http.HandlerFunc(h.serveCDN)))
	t.Cleanup(func() {
		h.hub.Close()
		h.cdn.Close()
	})
	for _, r := range repos {
		h.AddRepo(r)
	}
	return h
}

// URL is the Hub's base URL (the scanner's --hub-endpoint).
func (h *Hub) URL() string { return h.hub.URL }

// CDNURL is the CDN's base URL; LFS redirects point there.
func (h *Hub) CDNURL() string { return h.cdn.URL }

// Requests returns a copy of the request log of both servers.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Request, len(h.log))
	for i, r := range h.log {
		out[i] = *r
	}
	return out
}

// ResetLog empties the request log.
func (h *Hub) ResetLog() {
	h.mu.Lock()
	h.log = nil
	h.mu.Unlock()
}

// SetToken sets the token that may read private repos and download gated
// ones. Other tokens are valid users without that access.
func (h *Hub) SetToken(tok string) {
	h.mu.Lock()
	h.token = tok
	h.mu.Unlock()
}

// RejectToken makes every request carrying tok answer 401 "Invalid
// credentials in Authorization header", as the Hub does for a bad token.
func (h *Hub) RejectToken(tok string) {
	h.mu.Lock()
	h.rejected[tok] = true
	h.mu.Unlock()
}

// SetPageSize caps listing pages at n models (the real Hub caps them at
// 1000), so that tests see pagination with few models.
func (h *Hub) SetPageSize(n int) {
	h.mu.Lock()
	h.pageSize = n
	h.mu.Unlock()
}

// SetRateLimit sets the quota of a rate-limit resource ("api",
// "resolvers", "pages") to q requests per window w, starting a new window.
func (h *Hub) SetRateLimit(resource string, q int, w time.Duration) {
	h.mu.Lock()
	h.limits[resource] = &window{q: q, w: w}
	h.mu.Unlock()
}

// AddRepo adds (or replaces) a repo.
func (h *Hub) AddRepo(r Repo) {
	h.t.Helper()
	if r.ID == "" {
		h.t.Fatalf("hubtest: repo without ID")
	}
	rp := &repo{Repo: r, commits: map[string]bool{}, files: map[string]*file{}}
	rp.Tags = slices.Clone(r.Tags)
	for _, extra := range []string{r.Library, r.PipelineTag} {
		if extra != "" && !slices.Contains(rp.Tags, extra) {
			rp.Tags = append(rp.Tags, extra)
		}
	}
	if rp.LastModified.IsZero() {
		rp.LastModified = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	names := make([]string, 0, len(r.Files))
	for name := range r.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	tree := sha1.New()
	for _, name := range names {
		data := r.Files[name]
		sum := sha256.Sum256(data)
		f := &file{data: data, lfs: r.LFS[name], sha256: hex.EncodeToString(sum[:])}
		if f.lfs {
			f.pointer = fmt.Appendf(nil, "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", f.sha256, len(data))
			f.oid = GitBlobSHA1(f.pointer)
		} else {
			f.oid = GitBlobSHA1(data)
		}
		rp.files[name] = f
		fmt.Fprintf(tree, "%s %s\n", name, f.oid)
	}
	if rp.SHA == "" {
		fmt.Fprintf(tree, "repo %s", r.ID)
		rp.SHA = hex.EncodeToString(tree.Sum(nil))
	}
	rp.commits[rp.SHA] = true

	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.repos[r.ID]; !ok {
		h.order = append(h.order, r.ID)
	}
	h.repos[r.ID] = rp
	for _, f := range rp.files {
		if f.lfs {
			h.blobs[f.sha256] = f.data
		}
	}
	for _, old := range r.RenamedFrom {
		h.renamed[old] = r.ID
	}
}

// SetSHA moves main of repo id to commit sha (same files). Earlier commits
// stay resolvable, as on the Hub.
func (h *Hub) SetSHA(id, sha string) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	rp, ok := h.repos[id]
	if !ok {
		h.t.Fatalf("hubtest: SetSHA: no repo %q", id)
	}
	rp.SHA = sha
	rp.commits[sha] = true
}

// SHA returns the commit of main of repo id.
func (h *Hub) SHA(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rp, ok := h.repos[id]; ok {
		return rp.SHA
	}
	return ""
}

// GitBlobSHA1 is git's object id of a blob: sha1("blob <len>\x00" + data),
// the ETag the Hub sends for files stored in git.
func GitBlobSHA1(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// SHA256 is the hex sha256 of data: an LFS file's X-Linked-Etag.
func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// ---- request plumbing ----

// recorder captures the status and can cut or corrupt the body. The status
// goes into the log entry before any byte leaves, so a client never sees an
// answer that the log does not have yet.
type recorder struct {
	http.ResponseWriter
	h       *Hub
	entry   *Request
	status  int
	written int64
	cut     int64 // abort the connection after this many body bytes; -1 never
	corrupt bool
	dropped bool // the connection was closed without an answer
}

func (w *recorder) WriteHeader(code int) {
	w.setStatus(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) setStatus(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	w.h.mu.Lock()
	w.entry.Status = code
	w.h.mu.Unlock()
}

func (w *recorder) Write(p []byte) (int, error) {
	w.setStatus(http.StatusOK)
	if w.corrupt && len(p) > 0 {
		q := bytes.Clone(p)
		q[0] ^= 0xff
		p = q
		w.corrupt = false
	}
	if w.cut >= 0 && w.written+int64(len(p)) > w.cut {
		keep := w.cut - w.written
		n, _ := w.ResponseWriter.Write(p[:keep])
		w.written += int64(n)
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // the client sees the connection break mid-body
	}
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	return n, err
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// wrap logs every request, applies rate limits (hub only) and faults.
func (h *Hub) wrap(server string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entry := &Request{
			Server:        server,
			Method:        r.Method,
			Path:          r.URL.Path,
			RawQuery:      r.URL.RawQuery,
			Host:          r.Host,
			Authorization: r.Header.Get("Authorization"),
			Range:         r.Header.Get("Range"),
		}
		rec := &recorder{ResponseWriter: w, h: h, entry: entry, cut: -1}
		h.mu.Lock()
		h.log = append(h.log, entry)
		h.mu.Unlock()
		defer func() {
			if rec.status == 0 && !rec.dropped {
				rec.setStatus(http.StatusOK) // a handler that wrote nothing answers 200
			}
		}()
		if server == "hub" && !h.rateLimit(rec, r) {
			return
		}
		if h.applyFault(rec, r) {
			return
		}
		next.ServeHTTP(rec, r)
	})
}

func (h *Hub) bearer(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

// hubError answers like the Hub: X-Error-Code (when code is set),
// X-Error-Message, and a JSON {"error": msg} body (API) or plain text
// (resolve).
func hubError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("X-Request-Id", "Root=1-fake-"+strconv.Itoa(status))
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, r, status, map[string]string{"error": msg})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		fmt.Fprint(w, msg)
	}
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

func (h *Hub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	rejected := h.rejected[h.bearer(r)]
	h.mu.Unlock()
	if rejected {
		hubError(w, r, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
		return
	}
	p := r.URL.Path
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		hubError(w, r, http.StatusMethodNotAllowed, "", "Method not allowed")
	case p == "/api/models" || p == "/api/models/":
		h.serveList(w, r)
	case strings.HasPrefix(p, "/api/models/"):
		h.serveInfo(w, r)
	case strings.Contains(r.URL.EscapedPath(), "/resolve/"):
		h.serveResolve(w, r)
	default:
		hubError(w, r, http.StatusNotFound, "", "Sorry, we can't find the page you are looking for.")
	}
}

// ---- listing ----

// expandable are the model fields expand= accepts (huggingface_hub's
// ExpandModelProperty_T); listDefault are a listing's fields without it.
var (
	expandable = []string{"author", "baseModels", "cardData", "childrenModelCount", "config", "createdAt",
		"disabled", "downloads", "downloadsAllTime", "evalResults", "gated", "gguf", "inference",
		"inferenceProviderMapping", "lastModified", "library_name", "likes", "mask_token", "model-index",
		"pipeline_tag", "private", "resourceGroup", "safetensors", "sha", "siblings", "spaces", "tags",
		"transformersInfo", "trendingScore", "usedStorage", "widgetData", "xetEnabled"}
	listDefault = []string{"likes", "trendingScore", "private", "downloads", "tags", "pipeline_tag",
		"library_name", "createdAt", "modelId"}
	infoDefault = []string{"author", "sha", "lastModified", "private", "disabled", "gated", "downloads",
		"likes", "library_name", "tags", "pipeline_tag", "createdAt", "config", "siblings", "modelId"}
)

// expandFields reads expand= and expand[]= (both forms the Hub accepts).
func expandFields(q url.Values) ([]string, error) {
	var fields []string
	for _, v := range append(q["expand"], q["expand[]"]...) {
		if !slices.Contains(expandable, v) {
			return nil, fmt.Errorf(`"expand" must be one of [%s]`, strings.Join(expandable, ", "))
		}
		if !slices.Contains(fields, v) {
			fields = append(fields, v)
		}
	}
	return fields, nil
}

type cursor struct {
	Offset int `json:"offset"`
}

func (h *Hub) serveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fields, err := expandFields(q)
	if err != nil {
		hubError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	if len(fields) == 0 {
		fields = listDefault
	}
	limit := 1000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			hubError(w, r, http.StatusBadRequest, "", `"limit" must be a positive integer`)
			return
		}
		limit = min(n, 1000)
	}
	h.mu.Lock()
	ps := h.pageSize
	h.mu.Unlock()
	if ps > 0 {
		limit = min(limit, ps)
	}
	offset := 0
	if v := q.Get("cursor"); v != "" {
		b, err := base64.StdEncoding.DecodeString(v)
		var c cursor
		if err != nil || json.Unmarshal(b, &c) != nil || c.Offset < 0 {
			hubError(w, r, http.StatusBadRequest, "", "Invalid cursor")
			return
		}
		offset = c.Offset
	}
	sortKey := q.Get("sort")
	switch sortKey {
	case "", "downloads", "likes", "trendingScore", "lastModified", "createdAt", "id":
	default:
		hubError(w, r, http.StatusBadRequest, "", fmt.Sprintf("Invalid sort parameter %q", sortKey))
		return
	}
	asc := q.Get("direction") == "1"

	h.mu.Lock()
	authorized := h.token != "" && h.bearer(r) == h.token
	var models []*repo
	for _, id := range h.order {
		rp := h.repos[id]
		if rp.Private && !authorized {
			continue
		}
		if !matches(rp, q) {
			continue
		}
		models = append(models, rp)
	}
	h.mu.Unlock()

	if sortKey != "" {
		slices.SortStableFunc(models, func(a, b *repo) int {
			c := compareBy(sortKey, a, b)
			if !asc {
				c = -c
			}
			return cmp.Or(c, strings.Compare(a.ID, b.ID))
		})
	}
	end := min(offset+limit, len(models))
	page := []map[string]any{}
	if offset < len(models) {
		for _, rp := range models[offset:end] {
			page = append(page, h.modelJSON(rp, fields, false))
		}
	}
	if end < len(models) {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		c, _ := json.Marshal(cursor{Offset: end})
		next.Set("cursor", base64.StdEncoding.EncodeToString(c))
		w.Header().Set("Link", fmt.Sprintf(`<%s/api/models?%s>; rel="next"`, h.hub.URL, next.Encode()))
	}
	writeJSON(w, r, http.StatusOK, page)
}

func matches(rp *repo, q url.Values) bool {
	for _, f := range q["filter"] {
		for one := range strings.SplitSeq(f, ",") {
			if !slices.Contains(rp.Tags, one) {
				return false
			}
		}
	}
	if v := q.Get("pipeline_tag"); v != "" && rp.PipelineTag != v {
		return false
	}
	if v := q.Get("library"); v != "" && rp.Library != v {
		return false
	}
	if v := q.Get("author"); v != "" && !strings.HasPrefix(rp.ID, v+"/") {
		return false
	}
	if v := q.Get("search"); v != "" && !strings.Contains(strings.ToLower(rp.ID), strings.ToLower(v)) {
		return false
	}
	return true
}

func compareBy(key string, a, b *repo) int {
	switch key {
	case "downloads":
		return cmp.Compare(a.Downloads, b.Downloads)
	case "likes":
		return cmp.Compare(a.Likes, b.Likes)
	case "trendingScore":
		return cmp.Compare(a.TrendingScore, b.TrendingScore)
	case "lastModified", "createdAt":
		return a.LastModified.Compare(b.LastModified)
	}
	return strings.Compare(a.ID, b.ID)
}

// modelJSON renders a repo as the Hub does: _id and id always, then the
// fields asked for.
func (h *Hub) modelJSON(rp *repo, fields []string, blobs bool) map[string]any {
	sum := sha1.Sum([]byte(rp.ID))
	m := map[string]any{"_id": hex.EncodeToString(sum[:12]), "id": rp.ID}
	for _, f := range fields {
		switch f {
		case "modelId":
			m["modelId"] = rp.ID
		case "author":
			if ns, _, ok := strings.Cut(rp.ID, "/"); ok {
				m["author"] = ns
			}
		case "sha":
			m["sha"] = rp.SHA
		case "lastModified":
			m["lastModified"] = rp.LastModified.UTC().Format("2006-01-02T15:04:05.000Z")
		case "createdAt":
			m["createdAt"] = rp.LastModified.Add(-24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
		case "private":
			m["private"] = rp.Private
		case "disabled":
			m["disabled"] = rp.Disabled
		case "gated":
			if rp.Gated == "" {
				m["gated"] = false
			} else {
				m["gated"] = rp.Gated
			}
		case "downloads":
			m["downloads"] = rp.Downloads
		case "likes":
			m["likes"] = rp.Likes
		case "trendingScore":
			m["trendingScore"] = rp.TrendingScore
		case "library_name":
			if rp.Library != "" {
				m["library_name"] = rp.Library
			}
		case "pipeline_tag":
			if rp.PipelineTag != "" {
				m["pipeline_tag"] = rp.PipelineTag
			}
		case "tags":
			m["tags"] = rp.Tags
		case "config":
			if rp.Config != nil {
				m["config"] = rp.Config
			}
		case "siblings":
			names := make([]string, 0, len(rp.files))
			for n := range rp.files {
				names = append(names, n)
			}
			slices.Sort(names)
			sibs := []map[string]any{}
			for _, n := range names {
				s := map[string]any{"rfilename": n}
				if blobs {
					f := rp.files[n]
					s["blobId"] = f.oid
					s["size"] = len(f.data)
					if f.lfs {
						s["lfs"] = map[string]any{"sha256": f.sha256, "size": len(f.data), "pointerSize": len(f.pointer)}
					}
				}
				sibs = append(sibs, s)
			}
			m["siblings"] = sibs
		}
	}
	return m
}

// ---- model info ----

// lookup finds a repo for a request: a rename (or a case variant) gives the
// new id to redirect to; a missing or hidden repo gives the Hub's error.
func (h *Hub) lookup(r *http.Request, id string) (rp *repo, moved string, ok bool, errStatus int, code, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tok := h.bearer(r)
	if rp = h.repos[id]; rp == nil {
		if to, found := h.renamed[id]; found {
			return nil, to, false, 0, "", ""
		}
		for other := range h.repos {
			if strings.EqualFold(other, id) {
				return nil, other, false, 0, "", ""
			}
		}
	}
	authorized := h.token != "" && tok == h.token
	if rp == nil || (rp.Private && !authorized) {
		if tok == "" {
			return nil, "", false, http.StatusUnauthorized, "", "Invalid username or password."
		}
		return nil, "", false, http.StatusNotFound, "RepoNotFound", "Repository not found"
	}
	return rp, "", true, 0, "", ""
}

func (h *Hub) serveInfo(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/models/")
	id, rev, hasRev := strings.Cut(rest, "/revision/")
	if strings.Count(id, "/") > 1 {
		hubError(w, r, http.StatusNotFound, "", "Sorry, we can't find the page you are looking for.")
		return
	}
	rp, moved, ok, status, code, msg := h.lookup(r, id)
	if moved != "" {
		loc := "/api/models/" + moved
		if hasRev {
			loc += "/revision/" + url.PathEscape(rev)
		}
		renamed(w, r, loc)
		return
	}
	if !ok {
		hubError(w, r, status, code, msg)
		return
	}
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

// ---- files ----

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
	rp, moved, ok, status, code, msg := h.lookup(r, id)
	if moved != "" {
		renamed(w, r, "/"+moved+"/resolve/"+revEsc+"/"+fileEsc)
		return
	}
	if !ok {
		hubError(w, r, status, code, msg)
		return
	}
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

// ---- rate limits ----

type window struct {
	q     int
	w     time.Duration
	start time.Time
	used  int
}

func resourceOf(r *http.Request) string {
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/"):
		return "api"
	case strings.Contains(r.URL.EscapedPath(), "/resolve/"):
		return "resolvers"
	}
	return "pages"
}

// rateLimit counts the request against its window, sets the RateLimit
// headers, and answers 429 (returning false) when the window is spent.
func (h *Hub) rateLimit(w http.ResponseWriter, r *http.Request) bool {
	res := resourceOf(r)
	now := time.Now()
	h.mu.Lock()
	win := h.limits[res]
	if win.start.IsZero() || !now.Before(win.start.Add(win.w)) {
		win.start, win.used = now, 0
	}
	win.used++
	remaining := max(win.q-win.used, 0)
	reset := int((win.start.Add(win.w).Sub(now) + time.Second - 1) / time.Second)
	over := win.used > win.q
	q, ws := win.q, int(win.w/time.Second)
	h.mu.Unlock()
	w.Header().Set("RateLimit", fmt.Sprintf(`"%s";r=%d;t=%d`, res, remaining, reset))
	w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"fixed window";"%s";q=%d;w=%d`, res, q, ws))
	if over {
		hubError(w, r, http.StatusTooManyRequests, "", fmt.Sprintf(
			"You have exceeded our rate limit for '%s'. Retry after %d seconds.", res, reset))
		return false
	}
	return true
}
