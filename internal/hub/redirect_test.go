package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hopServer answers /hop/N with a 307 to /hop/N-1, and /hop/0 with a file
// (ETag, X-Repo-Commit), so a request to /hop/N meets N redirects.
func hopServer(t *testing.T, sha string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("ETag", `"`+strings.Repeat("e", 40)+`"`)
		w.Header().Set("X-Repo-Commit", sha)
		w.Write([]byte("{}"))
	}))
	t.Cleanup(s.Close)
	return s
}

// TestRedirectLimit: up to maxRedirects (10) redirects are followed, for
// an API answer (follow) as for a file's HEAD (resolve); one more is an
// error.
func TestRedirectLimit(t *testing.T) {
	sha := strings.Repeat("a", 40)
	s := hopServer(t, sha)
	c, err := New(Options{Endpoint: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	d := &download{c: c, id: "acme/tiny", sha: sha}
	ctx := context.Background()
	for _, tt := range []struct {
		hops int
		ok   bool
	}{{0, true}, {9, true}, {10, true}, {11, false}} {
		u, _ := url.Parse(fmt.Sprintf("%s/hop/%d", s.URL, tt.hops))
		resp, final, chain, err := c.follow(ctx, http.MethodGet, u, nil, 0)
		if tt.ok {
			if err != nil {
				t.Errorf("follow %d redirects: %v", tt.hops, err)
				continue
			}
			resp.Body.Close()
			if final.Path != "/hop/0" || len(chain) != tt.hops {
				t.Errorf("follow %d redirects: ended at %s after %d hops", tt.hops, final.Path, len(chain))
			}
		} else if err == nil || !strings.Contains(err.Error(), "more than 10 redirects") {
			t.Errorf("follow %d redirects: err %v, want more than 10 redirects", tt.hops, err)
		}
		src, err := d.resolve(ctx, u)
		if tt.ok {
			if err != nil || src.url.Path != "/hop/0" || src.resolve.Path != u.Path || src.size != 2 {
				t.Errorf("resolve %d redirects: %+v, %v", tt.hops, src, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), "more than 10 redirects") {
			t.Errorf("resolve %d redirects: err %v, want more than 10 redirects", tt.hops, err)
		}
	}
}

// TestResolveOffHub: a resolve answer that redirects off the Hub (to the
// CDN) ends the HEAD chain there: the CDN is not asked, the file's size is
// X-Linked-Size or unknown, and the resolve URL is kept to sign afresh.
func TestResolveOffHub(t *testing.T) {
	sha := strings.Repeat("a", 40)
	lfs := strings.Repeat("5", 64)
	var cdnHits int
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cdnHits++ }))
	t.Cleanup(cdn.Close)
	for _, tt := range []struct {
		linkedSize string
		want       int64
	}{{"", -1}, {"7", 7}} {
		hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Linked-Etag", `"`+lfs+`"`)
			if tt.linkedSize != "" {
				w.Header().Set("X-Linked-Size", tt.linkedSize)
			}
			w.Header().Set("X-Repo-Commit", sha)
			http.Redirect(w, r, cdn.URL+"/blob?sig=1", http.StatusFound)
		}))
		t.Cleanup(hub.Close)
		c, err := New(Options{Endpoint: hub.URL})
		if err != nil {
			t.Fatal(err)
		}
		d := &download{c: c, id: "acme/tiny", sha: sha}
		start := d.resolveURL("model.safetensors")
		src, err := d.resolve(context.Background(), start)
		if err != nil {
			t.Fatal(err)
		}
		if src.etag != lfs || src.size != tt.want || src.url.String() != cdn.URL+"/blob?sig=1" || src.resolve != start {
			t.Errorf("X-Linked-Size %q: source %+v, want size %d at the CDN", tt.linkedSize, src, tt.want)
		}
	}
	if cdnHits != 0 {
		t.Errorf("the CDN was asked %d times while resolving", cdnHits)
	}
}

// TestLink: a snapshot file becomes a relative link to its blob, replacing
// a link to another blob, and stays as it is when it is right.
func TestLink(t *testing.T) {
	repo := t.TempDir()
	blobA := filepath.Join(repo, "blobs", "aaaa")
	blobB := filepath.Join(repo, "blobs", "bbbb")
	pointer := filepath.Join(repo, "snapshots", strings.Repeat("c", 40), "sub", "config.json")
	var before os.FileInfo
	for i, blob := range []string{blobA, blobB, blobB} {
		if err := link(blob, pointer); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(pointer)
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 && !os.SameFile(before, fi) {
			t.Errorf("a right link was made again")
		}
		before = fi
		want, _ := filepath.Rel(filepath.Dir(pointer), blob)
		if got, err := os.Readlink(pointer); err != nil || got != want || filepath.IsAbs(got) {
			t.Fatalf("link to %s: %q, %v; want %q", blob, got, err, want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(pointer)); len(entries) != 1 {
		t.Errorf("snapshot folder %v: want the link only", entries)
	}
}

// TestLinkOverAFolder: a snapshot path that is a folder (a repo whose file
// and folder names clash) cannot become a link: the error says so, and the
// temporary link is not left behind.
func TestLinkOverAFolder(t *testing.T) {
	repo := t.TempDir()
	pointer := filepath.Join(repo, "snapshots", strings.Repeat("c", 40), "config.json")
	if err := os.MkdirAll(filepath.Join(pointer, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := link(filepath.Join(repo, "blobs", "aaaa"), pointer); err == nil {
		t.Fatal("link over a non-empty folder succeeded")
	}
	entries, _ := os.ReadDir(filepath.Dir(pointer))
	if len(entries) != 1 || entries[0].Name() != "config.json" || !entries[0].IsDir() {
		t.Errorf("snapshot folder holds %v; want only the folder config.json, no temporary link", entries)
	}
}
