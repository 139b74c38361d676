package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store"
)

// The cached pages (table, compare, feeds) answer a client that accepts
// gzip with the same page gzipped, on a miss and from the cache, and say
// that they vary by Accept-Encoding; others get it as it is.
func TestCachedPagesAreGzippedForClientsThatAskForIt(t *testing.T) {
	ts := twoRuntimes(t)
	downloads := int64(9000)
	for _, path := range []string{"/", "/compare", "/feed.json", "/feed.atom", "/compare?base=" + keyV1 + "&head=" + keyV2, "/api/v1/models",
		"/api/v1/compare?base=" + keyV1 + "&head=" + keyV2} {
		plain := ts.get(t, path)
		if plain.status != 200 {
			t.Fatalf("%s: %d %s", path, plain.status, plain.body)
		}
		if ce := plain.header.Get("Content-Encoding"); ce != "" {
			t.Errorf("%s without Accept-Encoding: Content-Encoding %q", path, ce)
		}
		if !strings.Contains(plain.header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("%s: Vary %q does not name Accept-Encoding", path, plain.header.Get("Vary"))
		}
		for try := range 2 { // a miss (the second rendering is cached) and a hit
			if try == 0 { // a write: every cached page is stale
				downloads++
				ts.upsert(t, store.ModelUpsert{ID: "fixed/model", Downloads: downloads})
			}
			z := ts.do(t, "GET", path, map[string]string{"Accept-Encoding": "gzip, deflate, br"})
			if z.status != 200 || z.header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("%s with gzip (try %d): %d, Content-Encoding %q", path, try, z.status, z.header.Get("Content-Encoding"))
			}
			if !strings.Contains(z.header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("%s gzipped: Vary %q", path, z.header.Get("Vary"))
			}
			if z.header.Get("Content-Type") != plain.header.Get("Content-Type") {
				t.Errorf("%s gzipped: Content-Type %q, plain %q", path, z.header.Get("Content-Type"), plain.header.Get("Content-Type"))
			}
			if len(z.body) >= len(plain.body) {
				t.Errorf("%s: gzipped %d bytes, plain %d", path, len(z.body), len(plain.body))
			}
			if got := string(gunzip(t, []byte(z.body))); got != ts.get(t, path).body {
				t.Errorf("%s: the gzipped page inflates to another page:\n%s", path, got)
			}
		}
		if r := ts.do(t, "GET", path, map[string]string{"Accept-Encoding": "gzip;q=0, br"}); r.header.Get("Content-Encoding") != "" {
			t.Errorf("%s refusing gzip: Content-Encoding %q", path, r.header.Get("Content-Encoding"))
		}
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAGzippedAnswerHasItsOwnETag: the routes with an ETag whose body may
// be gzipped tag the gzipped and the plain answer apart (a strong validator
// names one representation), each If-None-Match matches its own only, and
// the 304 says it varies by Accept-Encoding too.
func TestAGzippedAnswerHasItsOwnETag(t *testing.T) {
	ts := twoRuntimes(t)
	gz := map[string]string{"Accept-Encoding": "gzip"}
	for _, path := range []string{"/feed.json", "/feed.atom", "/api/v1/models", "/api/v1/models?limit=1", "/api/v1/compare"} {
		plain, zipped := ts.get(t, path), ts.do(t, "GET", path, gz)
		pe, ze := plain.header.Get("ETag"), zipped.header.Get("ETag")
		if plain.status != 200 || zipped.status != 200 || pe == "" || ze == "" || pe == ze {
			t.Errorf("%s: ETag plain %q (%d), gzip-accepting %q (%d): want two, apart", path, pe, plain.status, ze, zipped.status)
			continue
		}
		for _, c := range []struct {
			accept, inm string
			want        int
		}{{"", pe, 304}, {"", ze, 200}, {"gzip", ze, 304}, {"gzip", pe, 200}} {
			h := map[string]string{"If-None-Match": c.inm}
			if c.accept != "" {
				h["Accept-Encoding"] = c.accept
			}
			r := ts.do(t, "GET", path, h)
			if r.status != c.want {
				t.Errorf("%s, Accept-Encoding %q, If-None-Match %s: %d, want %d", path, c.accept, c.inm, r.status, c.want)
			}
			if !strings.Contains(r.header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("%s, Accept-Encoding %q: %d without Vary: Accept-Encoding (%q)", path, c.accept, r.status, r.header.Get("Vary"))
			}
		}
	}
	// An error is neither tagged nor kept: asked again, it is an error again.
	for range 2 {
		if r := ts.do(t, "GET", "/api/v1/compare?base=nope", gz); r.status < 400 || r.header.Get("ETag") != "" {
			t.Errorf("a comparison of an unknown runtime: %d, ETag %q", r.status, r.header.Get("ETag"))
		}
	}
}
