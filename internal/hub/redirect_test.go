package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
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
