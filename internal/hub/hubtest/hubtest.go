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
//
// One file per part: hubtest.go (repos, set-up, the test's controls),
// plumbing.go (request log, routing, the Hub's error answers), list.go
// (/api/models), info.go (repo lookup, renames, model info), resolve.go
// (files and the CDN), ratelimit.go, faults.go, minilm.go (a real model).
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
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
	// Safetensors is the "safetensors" field's parameters (elements per
	// dtype); nil derives them from the headers of the repo's
	// *.safetensors files, as the Hub does (absent when none parses).
	Safetensors map[string]int64
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
	endless  Endless
	huge     map[string]huge // id NUL name → a generated file
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
	rp.Tags = append([]string{}, r.Tags...) // [] for none, as the Hub sends it, never null
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
