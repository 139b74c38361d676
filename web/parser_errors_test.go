package web

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestRequestPath(t *testing.T) {
	tests := []struct{ err, want string }{
		{`error when reading request headers: small read buffer. increase ReadBufferSize: buffer size=8192, contents: "GET /api/v1/models?q=x HTTP/1.1\r\nHost: a\r\nX-Big: aaaa"..."aaaa"`, "/api/v1/models"},
		{`error when reading request headers: x: buffer size=10, contents: "HEAD /badge/a/b.svg HTTP/1.0\r\n"`, "/badge/a/b.svg"},
		{`error when reading request headers: x: buffer size=10, contents: "GET /a\x00b HTTP/1.1\r\n"`, ""},
		{`error when reading request headers: x: buffer size=10`, ""},
		// fasthttp quotes 200 bytes of a longer request: a long query is cut.
		{`error when reading request headers: small read buffer. increase ReadBufferSize: buffer size=8192, contents: "GET /api/v1/compare?cursor=bbbb"..."bbbb"`, "/api/v1/compare"},
		{`error when reading request headers: x: buffer size=8192, contents: "GET /api/v1/models/aaaa"..."aaaa"`, "/api/v1/models/aaaa"},
		{`error when reading request headers: x: buffer size=10, contents: "GET /a b"`, ""},
		{`something else entirely`, ""},
	}
	for _, tt := range tests {
		if got := requestPath(errors.New(tt.err)); got != tt.want {
			t.Errorf("requestPath(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestHeadersTooLargeAnswerInTheRouteForm: a request whose headers are over
// the server's read buffer gets 431, as JSON under /api/ (like every other
// API error) and as a page elsewhere.
func TestHeadersTooLargeAnswerInTheRouteForm(t *testing.T) {
	ts := newTestServer(t, 1, 1, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.Listen(ln)
	t.Cleanup(func() { ts.app.Shutdown() })
	for _, tt := range []struct {
		path, ctype string
	}{
		{"/api/v1/models?limit=5", "application/json"},
		{"/api/v1/no/such/route", "application/json"},
		{"/feed.json", "application/json"},
		{"/", "text/html"},
	} {
		// The server answers before it has read the whole request and
		// closes: the client may see the connection reset instead of the
		// answer, so it asks again.
		var resp *http.Response
		for try := 0; try < 5 && resp == nil; try++ {
			req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+tt.path, nil)
			req.Header.Set("X-Big", strings.Repeat("a", 9000))
			if resp, err = http.DefaultClient.Do(req); err != nil {
				t.Logf("%s: %v", tt.path, err)
			}
		}
		if resp == nil {
			t.Fatalf("%s: no answer", tt.path)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.ctype) {
			t.Errorf("%s: %d %s, want 431 %s: %.200s", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.ctype, body)
			continue
		}
		if tt.ctype == "application/json" {
			var e struct{ Error string }
			if json.Unmarshal(body, &e) != nil || e.Error == "" {
				t.Errorf("%s: body %q, want {\"error\": …}", tt.path, body)
			}
		}
	}
}
