package hubtest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRateLimitHeaders: every Hub answer carries the IETF draft headers
// huggingface_hub parses (`"api";r=0;t=55`, `"fixed window";"api";q=500;w=300`)
// for its resource: api for /api/, resolvers for /resolve/, pages for the
// rest; the CDN sends none. A spent window answers 429 with r=0 until it
// resets.
func TestRateLimitHeaders(t *testing.T) {
	h := New(t, repos()...)
	for _, tt := range []struct{ path, rl, policy string }{
		{"/api/models/org/a", `"api";r=9999;t=300`, `"fixed window";"api";q=10000;w=300`},
		{"/org/a/resolve/main/config.json", `"resolvers";r=49999;t=300`, `"fixed window";"resolvers";q=50000;w=300`},
		{"/org/a", `"pages";r=999;t=300`, `"fixed window";"pages";q=1000;w=300`},
		{"/api/models?limit=1", `"api";r=9998;t=300`, `"fixed window";"api";q=10000;w=300`},
	} {
		resp, _ := do(t, http.MethodGet, h.URL()+tt.path, nil)
		if resp.Header.Get("RateLimit") != tt.rl || resp.Header.Get("RateLimit-Policy") != tt.policy {
			t.Errorf("%s: RateLimit %q, policy %q; want %q, %q", tt.path, resp.Header.Get("RateLimit"),
				resp.Header.Get("RateLimit-Policy"), tt.rl, tt.policy)
		}
	}
	resp, _ := do(t, http.MethodGet, h.URL()+"/org/a", nil)
	if resp.StatusCode != 404 || !strings.Contains(resp.Header.Get("X-Error-Message"), "can't find the page") {
		t.Errorf("a page that is not there: %d %q", resp.StatusCode, resp.Header.Get("X-Error-Message"))
	}
	head, _ := do(t, http.MethodHead, h.URL()+"/org/a/resolve/main/model.safetensors", nil)
	loc := head.Header.Get("Location")
	if resp, _ := do(t, http.MethodGet, loc, nil); resp.StatusCode != 200 || resp.Header.Get("RateLimit") != "" {
		t.Errorf("CDN: %d RateLimit %q, want 200 and none", resp.StatusCode, resp.Header.Get("RateLimit"))
	}

	h.SetRateLimit("resolvers", 2, time.Second)
	for i, want := range []struct {
		status int
		rl     string
	}{{200, `"resolvers";r=1;t=1`}, {200, `"resolvers";r=0;t=1`}, {429, `"resolvers";r=0;t=1`}, {429, `"resolvers";r=0;t=1`}} {
		resp, body := do(t, http.MethodGet, h.URL()+"/org/a/resolve/main/config.json", nil)
		if resp.StatusCode != want.status || resp.Header.Get("RateLimit") != want.rl ||
			resp.Header.Get("RateLimit-Policy") != `"fixed window";"resolvers";q=2;w=1` {
			t.Fatalf("request %d: %d %q %q, want %d %q", i, resp.StatusCode, resp.Header.Get("RateLimit"),
				resp.Header.Get("RateLimit-Policy"), want.status, want.rl)
		}
		if want.status == 429 && string(body) != "You have exceeded our rate limit for 'resolvers'. Retry after 1 seconds." {
			t.Fatalf("429 body %q", body)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	if resp, _ := do(t, http.MethodGet, h.URL()+"/org/a/resolve/main/config.json", nil); resp.StatusCode != 200 ||
		resp.Header.Get("RateLimit") != `"resolvers";r=1;t=1` {
		t.Fatalf("after the window: %d %q, want 200 in a new window", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	if resp, _ := do(t, http.MethodGet, h.URL()+"/api/models/org/a", nil); resp.StatusCode != 200 {
		t.Fatalf("api is its own window: %d", resp.StatusCode)
	}
}

// TestResolveHeaders: the headers huggingface_hub reads from resolve
// (ETag, X-Repo-Commit, X-Linked-Etag, X-Linked-Size, Location), for git
// and LFS files, HEAD and GET, main and a commit, and the Hub's order of
// refusals (disabled, then gated, then revision, then file).
func TestResolveHeaders(t *testing.T) {
	rs := append(repos(),
		Repo{ID: "org/gd", Gated: "auto", Disabled: true, Files: map[string][]byte{"c.json": []byte("{}")}},
		Repo{ID: "gpt2", Files: map[string][]byte{"sub dir/tok en.json": []byte(`"x"`)}})
	h := New(t, rs...)
	first := h.SHA("org/a")
	h.SetSHA("org/a", strings.Repeat("c", 40))

	resp, body := do(t, http.MethodGet, h.URL()+"/org/a/resolve/main/config.json", nil)
	if resp.StatusCode != 200 || string(body) != `{"a":1}` || resp.Header.Get("X-Repo-Commit") != strings.Repeat("c", 40) ||
		resp.Header.Get("Content-Length") != "7" ||
		resp.Header.Get("Content-Disposition") != `inline; filename*=UTF-8''config.json; filename="config.json"` ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Linked-Size") {
		t.Errorf("git file on main: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = do(t, http.MethodHead, h.URL()+"/org/a/resolve/"+first+"/config.json", nil)
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("X-Repo-Commit") != first ||
		resp.Header.Get("ETag") != `"`+GitBlobSHA1([]byte(`{"a":1}`))+`"` {
		t.Errorf("HEAD at an earlier commit: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = do(t, http.MethodGet, h.URL()+"/org/a/resolve/main/config.json", map[string]string{"Range": "bytes=1-2"})
	if resp.StatusCode != 206 || string(body) != `"a` {
		t.Errorf("range on a git file: %d %q", resp.StatusCode, body)
	}
	resp, body = do(t, http.MethodGet, h.URL()+"/gpt2/resolve/main/sub%20dir/tok%20en.json", nil)
	if resp.StatusCode != 200 || string(body) != `"x"` ||
		resp.Header.Get("Content-Disposition") != `inline; filename*=UTF-8''tok%20en.json; filename="tok en.json"` {
		t.Errorf("legacy id, escaped path: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	ptr := "version https://git-lfs.github.com/spec/v1\noid sha256:" + SHA256([]byte("weights-a")) + "\nsize 9\n"
	resp, body = do(t, http.MethodGet, h.URL()+"/org/a/resolve/main/model.safetensors", nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 302 || !strings.HasPrefix(loc, h.CDNURL()+"/lfs/"+SHA256([]byte("weights-a"))+"?") ||
		!strings.Contains(loc, "X-Amz-Signature=") || string(body) != "Found. Redirecting to "+loc ||
		resp.Header.Get("ETag") != `"`+GitBlobSHA1([]byte(ptr))+`"` || resp.Header.Get("X-Linked-Size") != "9" ||
		resp.Header.Get("X-Linked-Etag") != `"`+SHA256([]byte("weights-a"))+`"` {
		t.Errorf("LFS GET: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = do(t, http.MethodGet, loc, nil)
	if resp.StatusCode != 200 || string(body) != "weights-a" || resp.Header.Get("ETag") != `"`+SHA256([]byte("weights-a"))+`"` ||
		resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("CDN GET: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	for _, tt := range []struct {
		url    string
		status int
		code   string
	}{
		{h.CDNURL() + "/lfs/" + SHA256([]byte("weights-a")), 403, "AccessDenied"},
		{h.CDNURL() + "/blobs/" + SHA256([]byte("weights-a")) + "?X-Amz-Signature=x", 403, "AccessDenied"},
		{h.CDNURL() + "/lfs/" + SHA256([]byte("other")) + "?X-Amz-Signature=x", 404, "NoSuchKey"},
	} {
		resp, body := do(t, http.MethodGet, tt.url, nil)
		if resp.StatusCode != tt.status || !strings.Contains(string(body), "<Code>"+tt.code+"</Code>") ||
			resp.Header.Get("Content-Type") != "application/xml" {
			t.Errorf("CDN %s: %d %s", tt.url, resp.StatusCode, body)
		}
	}
	resp, body = do(t, http.MethodGet, loc, map[string]string{"Authorization": "Bearer x"})
	if !strings.Contains(string(body), "<Code>InvalidArgument</Code>") || resp.Header.Get("Content-Type") != "application/xml" {
		t.Errorf("CDN with Authorization: %d %s", resp.StatusCode, body)
	}

	for _, tt := range []struct {
		method, path, token string
		status              int
		code, body, commit  string
	}{
		{"GET", "/org/gd/resolve/nope/c.json", "", 403, "", "Access to this resource is disabled.", ""},
		{"GET", "/org/b/resolve/nope/nope.json", "", 401, "GatedRepo", "Access to model org/b is restricted. You must have access to it and be authenticated to access it. Please log in.", ""},
		{"GET", "/org/b/resolve/nope/nope.json", "other", 403, "GatedRepo", "Access to model org/b is restricted and you are not in the authorized list. Visit https://huggingface.co/org/b to ask for access.", ""},
		{"GET", "/org/b/resolve/nope/nope.json", "granted", 404, "RevisionNotFound", "Invalid rev id: nope", ""},
		{"GET", "/org/b/resolve/main/nope.json", "granted", 404, "EntryNotFound", "Entry not found", h.SHA("org/b")},
		{"HEAD", "/org/a/resolve/" + first + "/nope.json", "", 404, "EntryNotFound", "", first},
		{"HEAD", "/org/a/resolve/v2/config.json", "", 404, "RevisionNotFound", "", ""},
		{"GET", "/a/b/c/resolve/main/x.json", "", 400, "", "Invalid path", ""},
	} {
		h.SetToken("granted")
		hdr := map[string]string{}
		if tt.token != "" {
			hdr["Authorization"] = "Bearer " + tt.token
		}
		resp, body := do(t, tt.method, h.URL()+tt.path, hdr)
		if resp.StatusCode != tt.status || resp.Header.Get("X-Error-Code") != tt.code || string(body) != tt.body ||
			resp.Header.Get("X-Repo-Commit") != tt.commit || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
			resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s: %d %q %q commit %q %v; want %d %q %q commit %q", tt.method, tt.path, resp.StatusCode,
				resp.Header.Get("X-Error-Code"), body, resp.Header.Get("X-Repo-Commit"), resp.Header, tt.status, tt.code, tt.body, tt.commit)
		}
	}
}

// TestAPIHeadAndMethods: HEAD on the API answers the headers without a body,
// other methods 405, and a token the Hub rejects 401 everywhere.
func TestAPIHeadAndMethods(t *testing.T) {
	h := New(t, repos()...)
	get, body := do(t, http.MethodGet, h.URL()+"/api/models/org/a", nil)
	head, hbody := do(t, http.MethodHead, h.URL()+"/api/models/org/a", nil)
	if head.StatusCode != 200 || len(hbody) != 0 || head.Header.Get("Content-Length") != strconv.Itoa(len(body)) || get.StatusCode != 200 {
		t.Errorf("HEAD info: %d %q Content-Length %q (GET %d bytes)", head.StatusCode, hbody, head.Header.Get("Content-Length"), len(body))
	}
	head, hbody = do(t, http.MethodHead, h.URL()+"/api/models/org/zzz", nil)
	if head.StatusCode != 401 || len(hbody) != 0 || head.Header.Get("X-Error-Message") != "Invalid username or password." {
		t.Errorf("HEAD missing: %d %q", head.StatusCode, hbody)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		resp, body := do(t, m, h.URL()+"/api/models", nil)
		if resp.StatusCode != 405 || string(body) != `{"error":"Method not allowed"}` {
			t.Errorf("%s: %d %s", m, resp.StatusCode, body)
		}
	}
	h.RejectToken("bad")
	for _, p := range []string{"/api/models", "/api/models/org/a", "/org/a/resolve/main/config.json"} {
		resp, _ := do(t, http.MethodGet, h.URL()+p, map[string]string{"Authorization": "Bearer bad"})
		if resp.StatusCode != 401 || resp.Header.Get("X-Error-Code") != "" ||
			resp.Header.Get("X-Error-Message") != "Invalid credentials in Authorization header" {
			t.Errorf("rejected token on %s: %d %q", p, resp.StatusCode, resp.Header.Get("X-Error-Message"))
		}
		if resp, _ := do(t, http.MethodGet, h.URL()+p, map[string]string{"Authorization": "Bearer good"}); resp.StatusCode != 200 {
			t.Errorf("another token on %s: %d", p, resp.StatusCode)
		}
	}
}

// TestRequestLog: every request of both servers, in order, with what the
// Hub client sent and the status it got; ResetLog empties it.
func TestRequestLog(t *testing.T) {
	h := New(t, repos()...)
	do(t, http.MethodGet, h.URL()+"/api/models?limit=1&sort=likes", map[string]string{"Authorization": "Bearer t"})
	resp, _ := do(t, http.MethodHead, h.URL()+"/org/a/resolve/main/model%2Esafetensors", nil)
	do(t, http.MethodGet, resp.Header.Get("Location"), map[string]string{"Range": "bytes=0-1"})
	log := h.Requests()
	host := strings.TrimPrefix(h.URL(), "http://")
	want := []Request{
		{Server: "hub", Method: "GET", Path: "/api/models", RawQuery: "limit=1&sort=likes", Host: host, Authorization: "Bearer t", Status: 200},
		{Server: "hub", Method: "HEAD", Path: "/org/a/resolve/main/model.safetensors", Host: host, Status: 302},
	}
	if len(log) != 3 {
		t.Fatalf("log %+v", log)
	}
	for i, w := range want {
		if log[i] != w {
			t.Errorf("log[%d] = %+v, want %+v", i, log[i], w)
		}
	}
	if c := log[2]; c.Server != "cdn" || c.Range != "bytes=0-1" || c.Status != 206 || c.Host != strings.TrimPrefix(h.CDNURL(), "http://") ||
		!strings.HasPrefix(c.RawQuery, "X-Amz-Algorithm=") {
		t.Errorf("CDN entry %+v", c)
	}
	log[0].Path = "changed"
	if h.Requests()[0].Path != "/api/models" {
		t.Errorf("Requests returns the log itself, not a copy")
	}
	h.ResetLog()
	if n := len(h.Requests()); n != 0 {
		t.Errorf("after ResetLog: %d entries", n)
	}
	do(t, http.MethodGet, h.URL()+"/api/models/org/a", nil)
	if n := len(h.Requests()); n != 1 {
		t.Errorf("logging after ResetLog: %d entries", n)
	}
}

// TestFaults: each injected fault as a client sees it and as the log
// records it.
func TestFaults(t *testing.T) {
	h := New(t, repos()...)
	status := func(path string) int {
		resp, _ := do(t, http.MethodGet, h.URL()+path, nil)
		return resp.StatusCode
	}

	h.Fault("/api/models/org/a", Status429(7))
	resp, body := do(t, http.MethodGet, h.URL()+"/api/models/org/a", nil)
	if resp.StatusCode != 429 || resp.Header.Get("RateLimit") != `"api";r=0;t=7` ||
		string(body) != `{"error":"You have exceeded our rate limit for 'api'. Retry after 7 seconds."}` {
		t.Errorf("Status429: %d %q %s", resp.StatusCode, resp.Header.Get("RateLimit"), body)
	}
	h.Fault("/org/a/resolve/", Status429(3))
	resp, _ = do(t, http.MethodGet, h.URL()+"/org/a/resolve/main/config.json", nil)
	if resp.StatusCode != 429 || resp.Header.Get("RateLimit") != `"resolvers";r=0;t=3` {
		t.Errorf("Status429 on resolve: %d %q", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	h.Fault("/api/models/org/a", RetryAfter429("Wed, 21 Oct 2015 07:28:00 GMT"))
	resp, body = do(t, http.MethodGet, h.URL()+"/api/models/org/a", nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "Wed, 21 Oct 2015 07:28:00 GMT" ||
		strings.Contains(resp.Header.Get("RateLimit"), "r=0;") || string(body) != `{"error":"Too many requests"}` {
		t.Errorf("RetryAfter429: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	h.Fault("/api/models/org/a", Status5xx(503))
	resp, body = do(t, http.MethodGet, h.URL()+"/api/models/org/a", nil)
	if resp.StatusCode != 503 || string(body) != `{"error":"Service Unavailable"}` {
		t.Errorf("Status5xx: %d %s", resp.StatusCode, body)
	}
	if got := status("/api/models/org/a"); got != 200 {
		t.Errorf("after the one-shot faults: %d", got)
	}

	// Times: n requests, then none; Times(0) is once; < 0 is every one.
	h.Fault("/api/models/org/b", Status5xx(500).Times(2))
	h.Fault("/api/models/org/d", Status5xx(502).Times(0))
	h.Fault("/api/models/org/a", Status5xx(504).Times(-1))
	for i, want := range []map[string]int{
		{"/api/models/org/b": 500, "/api/models/org/d": 502, "/api/models/org/a": 504},
		{"/api/models/org/b": 500, "/api/models/org/d": 200, "/api/models/org/a": 504},
		{"/api/models/org/b": 200, "/api/models/org/d": 200, "/api/models/org/a": 504},
	} {
		for p, w := range want {
			if got := status(p); got != w {
				t.Errorf("round %d: %s %d, want %d", i, p, got, w)
			}
		}
	}
	if got := status("/api/models?limit=1"); got != 200 {
		t.Errorf("a path outside the prefix: %d", got)
	}
	h = New(t, repos()...)
	// Faults on one prefix apply in the order given.
	h.Fault("/api/", Status5xx(500))
	h.Fault("/api/", Status5xx(503))
	for _, want := range []int{500, 503, 200} {
		if got := status("/api/models"); got != want {
			t.Errorf("in order: %d, want %d", got, want)
		}
	}

	// Corrupt: same length, first byte flipped; HEAD passes it by.
	h.Fault("/org/a/resolve/", Corrupt())
	if resp, _ := do(t, http.MethodHead, h.URL()+"/org/a/resolve/main/config.json", nil); resp.StatusCode != 200 {
		t.Errorf("HEAD under Corrupt: %d", resp.StatusCode)
	}
	_, body = do(t, http.MethodGet, h.URL()+"/org/a/resolve/main/config.json", nil)
	if want := string([]byte{'{' ^ 0xff}) + `"a":1}`; string(body) != want {
		t.Errorf("Corrupt: %q, want %q", body, want)
	}
	if _, body = do(t, http.MethodGet, h.URL()+"/org/a/resolve/main/config.json", nil); string(body) != `{"a":1}` {
		t.Errorf("after Corrupt: %q", body)
	}
	// Corrupt on the CDN.
	head, _ := do(t, http.MethodHead, h.URL()+"/org/a/resolve/main/model.safetensors", nil)
	h.Fault("/lfs/", Corrupt())
	if _, body = do(t, http.MethodGet, head.Header.Get("Location"), nil); len(body) != 9 || string(body[1:]) != "eights-a" || body[0] != 'w'^0xff {
		t.Errorf("Corrupt on the CDN: %q", body)
	}

	// MalformedJSON: 200 with a JSON body cut short.
	h.Fault("/api/models", MalformedJSON())
	resp, body = do(t, http.MethodGet, h.URL()+"/api/models", nil)
	var v any
	if resp.StatusCode != 200 || json.Unmarshal(body, &v) == nil || !strings.HasPrefix(string(body), `[{"_id":`) ||
		resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("MalformedJSON: %d %v %s", resp.StatusCode, resp.Header, body)
	}

	// Drop: the connection closes at once without an answer.
	h.ResetLog()
	h.Fault("/api/models", Drop())
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second} // no retry on a reused connection
	start := time.Now()
	if r, err := fresh.Get(h.URL() + "/api/models"); err == nil {
		r.Body.Close()
		t.Errorf("Drop: got %d, want a network error", r.StatusCode)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Drop: the error came after %v; want the connection closed at once", d)
	}
	if log := h.Requests(); len(log) != 1 || log[0].Status != 0 {
		t.Errorf("Drop is logged with status 0: %+v", log)
	}

	// Slow: the answer comes after d.
	h.Fault("/api/models", Slow(150*time.Millisecond))
	start = time.Now()
	if got := status("/api/models"); got != 200 || time.Since(start) < 150*time.Millisecond {
		t.Errorf("Slow: %d after %v", got, time.Since(start))
	}
	// A client that gives up on a slow answer: logged with status 0.
	h.ResetLog()
	h.Fault("/api/models", Slow(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/api/models", nil)
	start = time.Now()
	if r, err := noRedirect.Do(req); err == nil {
		r.Body.Close()
		t.Errorf("Slow(1m): answered %d", r.StatusCode)
	}
	cancel()
	if time.Since(start) > 10*time.Second {
		t.Errorf("Slow(1m) held the client %v after it gave up", time.Since(start))
	}
	time.Sleep(300 * time.Millisecond) // the handler sees the client leave
	if log := h.Requests(); len(log) != 1 || log[0].Status != 0 {
		t.Errorf("a client that left a slow answer: %+v, want status 0", log)
	}
}

// TestDrip: the body comes one byte every d, whole; a client that leaves
// ends it.
func TestDrip(t *testing.T) {
	h := New(t, repos()...)
	h.Fault("/org/a/resolve/", Drip(100*time.Millisecond))
	if resp, _ := do(t, http.MethodHead, h.URL()+"/org/a/resolve/main/config.json", nil); resp.StatusCode != 200 {
		t.Fatalf("HEAD under Drip: %d", resp.StatusCode)
	}
	start := time.Now()
	resp, err := noRedirect.Get(h.URL() + "/org/a/resolve/main/config.json")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	n, err := resp.Body.Read(buf)
	first := time.Since(start)
	rest, err2 := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || n != 1 || buf[0] != '{' {
		t.Errorf("first read: %d bytes %q, %v; want the first byte alone", n, buf[:n], err)
	}
	if err2 != nil || string(rest) != `"a":1}` || time.Since(start) < 6*100*time.Millisecond || first > 6*100*time.Millisecond {
		t.Errorf("drip: %q %v, first byte after %v, all after %v", rest, err2, first, time.Since(start))
	}

	// A client that leaves mid-drip.
	h.Fault("/org/a/resolve/", Drip(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/org/a/resolve/main/config.json", nil)
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ = resp.Body.Read(buf)
	cancel()
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if n != 1 || err == nil {
		t.Errorf("Drip(1m): first read %d bytes, then %v; want 1 byte then an error", n, err)
	}
	done := make(chan struct{})
	go func() { h.hub.Close(); close(done) }() // waits for the handler to end
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("the dripping handler outlived its client by 10 s")
	}
}

// TestEndlessListing: a hostile listing links to a next page forever.
func TestEndlessListing(t *testing.T) {
	rs := []Repo{{ID: "o/a", Downloads: 3}, {ID: "o/b", Downloads: 2}, {ID: "o/c", Downloads: 1}}
	for _, tt := range []struct {
		mode  Endless
		pages [][]string // ids of the first three pages; nil where no page follows
	}{
		{EndlessOff, [][]string{{"o/a", "o/b"}, {"o/c"}, nil}},
		{EndlessEmpty, [][]string{{"o/a", "o/b"}, {}, {}}},
		{EndlessRepeat, [][]string{{"o/a", "o/b"}, {"o/a", "o/b"}, {"o/a", "o/b"}}},
		{EndlessTrickle, [][]string{{"o/a", "o/b"}, {"o/a", "trickle/model-2"}, {"o/a", "trickle/model-4"}}},
	} {
		h := New(t, rs...)
		h.SetEndlessListing(tt.mode)
		url := h.URL() + "/api/models?sort=downloads&limit=2"
		for i, want := range tt.pages {
			if want == nil {
				if url != "" {
					t.Errorf("mode %d: page %d is linked (%s), want the end", tt.mode, i, url)
				}
				break
			}
			if url == "" {
				t.Fatalf("mode %d: no page %d", tt.mode, i)
			}
			var got []string
			got, url = listIDs(t, url, nil)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("mode %d page %d: %v, want %v", tt.mode, i, got, want)
			}
		}
		if tt.mode == EndlessTrickle {
			resp, body := do(t, http.MethodGet, url, nil)
			var page []map[string]any
			json.Unmarshal(body, &page)
			if resp.StatusCode != 200 || len(page) != 2 || page[1]["_id"] != "trickle6" || page[1]["downloads"] != 2.0 || page[0]["_id"] == "trickle6" {
				t.Errorf("trickle page 4: %s", body)
			}
		}
	}
	h := New(t)
	h.SetEndlessListing(EndlessTrickle)
	got, next := listIDs(t, h.URL()+"/api/models?limit=2", nil)
	if len(got) != 0 || next == "" {
		t.Fatalf("trickle with no models, first page: %v %q", got, next)
	}
	if got, next = listIDs(t, next, nil); len(got) != 0 || next == "" {
		t.Errorf("trickle with no models, second page: %v %q", got, next)
	}
}

// TestHugeFile: a generated file of exactly the size asked, valid JSON,
// with or without Content-Length.
func TestHugeFile(t *testing.T) {
	h := New(t, Repo{ID: "o/h", Files: map[string][]byte{"config.json": []byte("{}"), "big.json": []byte("{}")}})
	h.SetHugeFile("o/h", "config.json", 5000, true)
	h.SetHugeFile("o/h", "big.json", 5000, false)
	resp, body := do(t, http.MethodGet, h.URL()+"/o/h/resolve/main/config.json", nil)
	var cfg map[string]any
	if resp.StatusCode != 200 || len(body) != 5000 || resp.Header.Get("Content-Length") != "5000" ||
		resp.Header.Get("ETag") != `"huge-5000"` || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("X-Repo-Commit") != h.SHA("o/h") || json.Unmarshal(body, &cfg) != nil || cfg["model_type"] != "llama" ||
		strings.Trim(cfg["padding"].(string), "x") != "" {
		t.Errorf("announced huge file: %d %d bytes %v", resp.StatusCode, len(body), resp.Header)
	}
	resp, body = do(t, http.MethodHead, h.URL()+"/o/h/resolve/main/config.json", nil)
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("Content-Length") != "5000" {
		t.Errorf("HEAD announced: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = do(t, http.MethodHead, h.URL()+"/o/h/resolve/main/big.json", nil)
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("Content-Length") != "" || resp.Header.Get("ETag") != `"huge-5000"` {
		t.Errorf("HEAD unannounced: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = do(t, http.MethodGet, h.URL()+"/o/h/resolve/main/big.json", nil)
	if resp.StatusCode != 200 || resp.ContentLength != -1 || len(body) != 5000 || json.Unmarshal(body, &cfg) != nil {
		t.Errorf("unannounced huge file: %d length %d, %d bytes", resp.StatusCode, resp.ContentLength, len(body))
	}
	// Below its head and tail (77 bytes) the file is just those, still JSON.
	small, err := io.ReadAll(hugeJSON(20))
	if err != nil || len(small) != 77 || json.Unmarshal(small, &cfg) != nil || cfg["padding"] != "" {
		t.Errorf("hugeJSON(20): %q %v", small, err)
	}
	if n, err := io.Copy(io.Discard, hugeJSON(1<<20)); n != 1<<20 || err != nil {
		t.Errorf("hugeJSON(1 MiB): %d bytes, %v", n, err)
	}
}

// safetensorsFile builds a safetensors file: 8 bytes of header length
// (little endian), the JSON header, then data.
func safetensorsFile(header string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, data)...)
}

// TestSafetensorsField: the "safetensors" field ({"parameters": {dtype:
// n}, "total": sum}, huggingface_hub's SafeTensorsInfo) from the headers
// of every *.safetensors file, or Repo.Safetensors; absent when none parses.
func TestSafetensorsField(t *testing.T) {
	h := New(t,
		Repo{ID: "o/st", Files: map[string][]byte{
			"model-00001.safetensors": safetensorsFile(`{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"s":{"dtype":"F32","shape":[],"data_offsets":[24,28]}}`, 28),
			"model-00002.safetensors": safetensorsFile(`{"b":{"dtype":"BF16","shape":[4,5],"data_offsets":[0,40]},"bad":{"shape":[9]},"worse":7}`, 0),
			"model.bin":               safetensorsFile(`{"x":{"dtype":"F64","shape":[100]}}`, 0),
		}},
		Repo{ID: "o/broken", Files: map[string][]byte{
			"short.safetensors": []byte("1234567"),
			"long.safetensors":  append(binary.LittleEndian.AppendUint64(nil, 100), `{"a":{"dtype":"F32","shape":[1]}}`...),
			"bad.safetensors":   safetensorsFile(`{"a":`, 0),
		}},
		Repo{ID: "o/given", Safetensors: map[string]int64{"I8": 5, "F16": 6}, Files: map[string][]byte{
			"model.safetensors": safetensorsFile(`{"a":{"dtype":"F32","shape":[2]}}`, 8),
		}},
	)
	for id, want := range map[string]string{
		"o/st":     `{"parameters":{"BF16":20,"F32":7},"total":27}`,
		"o/broken": ``,
		"o/given":  `{"parameters":{"F16":6,"I8":5},"total":11}`,
	} {
		_, body := do(t, http.MethodGet, h.URL()+"/api/models/"+id+"?expand=safetensors", nil)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		if string(m["safetensors"]) != want {
			t.Errorf("%s: safetensors %s, want %s", id, m["safetensors"], want)
		}
	}
	counts := map[string]int64{}
	countTensors(safetensorsFile(`{"a":{"dtype":"U8","shape":[3]}}`, 0), counts) // the header fills the file
	if counts["U8"] != 3 {
		t.Errorf("a file that is all header: %v", counts)
	}
}

// TestTreeEdges: the tree of a legacy id, a repo without files, a
// recursive listing of a folder, bad cursors, and the tree of a commit.
func TestTreeEdges(t *testing.T) {
	h := New(t,
		Repo{ID: "legacy", Files: map[string][]byte{"a/b/c.json": []byte("{}"), "a/d.json": []byte("{}"), "e.json": []byte("{}")}},
		Repo{ID: "o/empty"},
		Repo{ID: "o/private", Private: true, Files: map[string][]byte{"a": nil}},
	)
	sha := h.SHA("legacy")
	for _, tt := range []struct {
		path   string
		status int
		want   string
	}{
		{"/api/models/legacy/tree/main", 200, "directory:a file:e.json"},
		{"/api/models/legacy/tree/main/a/", 200, "directory:a/b file:a/d.json"},
		{"/api/models/legacy/tree/" + sha + "/a?recursive=1", 200, "directory:a/b file:a/b/c.json file:a/d.json"},
		{"/api/models/legacy/tree/main?recursive=true", 200, "directory:a directory:a/b file:a/b/c.json file:a/d.json file:e.json"},
		{"/api/models/legacy/tree/main?recursive=yes", 200, "directory:a file:e.json"},
		{"/api/models/legacy/tree/main/a/b/c.json", 404, ""},
		{"/api/models/legacy/tree/main/a/b", 200, "file:a/b/c.json"},
		{"/api/models/legacy/tree/main/ab", 404, ""},
		{"/api/models/o/empty/tree/main", 200, ""},
		{"/api/models/o/empty/tree/main/x", 404, ""},
		{"/api/models/o/private/tree/main", 401, ""},
		{"/api/models/o/empty/tree/", 404, ""},
		{"/api/models/legacy/tree/main?cursor=%25", 400, ""},
		{"/api/models/legacy/tree/main?cursor=eyJvZmZzZXQiOjN9", 400, ""}, // {"offset":3} past the 2 entries
		{"/api/models/legacy/tree/main?cursor=eyJvZmZzZXQiOjJ9", 200, ""}, // {"offset":2}: an empty last page
		{"/api/models/legacy/tree/main?cursor=eyJvZmZzZXQiOjF9", 200, "file:e.json"},
	} {
		resp, body := do(t, http.MethodGet, h.URL()+tt.path, nil)
		if resp.StatusCode != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.path, resp.StatusCode, body, tt.status)
			continue
		}
		if resp.StatusCode != 200 {
			continue
		}
		var es []treeEntry
		if err := json.Unmarshal(body, &es); err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Type+":"+e.Path)
			if e.Type == "directory" && (len(e.OID) != 40 || e.Size != 0) {
				t.Errorf("%s: directory entry %+v", tt.path, e)
			}
		}
		if strings.Join(got, " ") != tt.want || resp.Header.Get("Link") != "" {
			t.Errorf("%s: %v (Link %q), want %s", tt.path, got, resp.Header.Get("Link"), tt.want)
		}
	}
	resp, body := do(t, http.MethodGet, h.URL()+"/api/models/legacy/tree/main/nope", nil)
	if resp.Header.Get("X-Error-Code") != "EntryNotFound" || !strings.Contains(string(body), `nope does not exist on \"main\"`) {
		t.Errorf("missing folder: %q %s", resp.Header.Get("X-Error-Code"), body)
	}
	// Two folders' directory ids differ, and differ between repos.
	_, body = do(t, http.MethodGet, h.URL()+"/api/models/legacy/tree/main?recursive=true", nil)
	var es []treeEntry
	json.Unmarshal(body, &es)
	if len(es) < 2 || es[0].OID == es[1].OID {
		t.Errorf("directory ids: %s", body)
	}
}

// TestTruncateBounds: Truncate(0) breaks the connection before any body
// byte; Truncate(n) with n the body's length cuts nothing (even a chunked
// body ends cleanly).
func TestTruncateBounds(t *testing.T) {
	h := New(t, Repo{ID: "o/h", Files: map[string][]byte{"big.json": []byte("{}"), "c.json": []byte(`{"a":1}`)}})
	h.SetHugeFile("o/h", "big.json", 5000, false)
	read := func(path string) ([]byte, error) {
		resp, err := noRedirect.Get(h.URL() + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	h.Fault("/o/h/resolve/main/c.json", Truncate(0))
	if b, err := read("/o/h/resolve/main/c.json"); err == nil || len(b) != 0 {
		t.Errorf("Truncate(0): %q, %v; want no byte and an error", b, err)
	}
	h.Fault("/o/h/resolve/main/big.json", Truncate(5000))
	if b, err := read("/o/h/resolve/main/big.json"); err != nil || len(b) != 5000 {
		t.Errorf("Truncate(5000) of a chunked 5000-byte body: %d bytes, %v; want all of it", len(b), err)
	}
	h.Fault("/o/h/resolve/main/big.json", Truncate(4999))
	if b, err := read("/o/h/resolve/main/big.json"); err == nil || len(b) != 4999 {
		t.Errorf("Truncate(4999): %d bytes, %v", len(b), err)
	}
	if ids, _ := listIDs(t, h.URL()+"/api/models/", nil); len(ids) != 1 || ids[0] != "o/h" {
		t.Errorf("/api/models/ with a slash lists too: %v", ids)
	}
}

// TestSafetensorsHeaderPastTheEnd: a header length that runs past the
// file's end, by less than the 8 bytes of the length itself, parses to
// nothing (and does not read past the data).
func TestSafetensorsHeaderPastTheEnd(t *testing.T) {
	header := `{"a":{"dtype":"F32","shape":[2]}}`
	for _, extra := range []int{1, 4, 8} {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)+extra))
		b = append(b, header...)
		data := make([]byte, len(b)) // capacity exactly its length
		copy(data, b)
		counts := map[string]int64{}
		countTensors(data, counts)
		if len(counts) != 0 {
			t.Errorf("header %d bytes past the end: %v, want nothing", extra, counts)
		}
	}
}

// TestZeroFaultDoesNothing: a Fault not made by a constructor (Fault{})
// changes no answer.
func TestZeroFaultDoesNothing(t *testing.T) {
	h := New(t, repos()...)
	h.Fault("/api/", Fault{})
	resp, body := do(t, http.MethodGet, h.URL()+"/api/models/org/a", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Retry-After") != "" || !strings.Contains(string(body), `"id":"org/a"`) {
		t.Errorf("Fault{}: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}
