package hub

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// blob is the file the fetch tests move: 10 bytes, named by its sha256 as
// an LFS file is.
var blob = []byte("0123456789")

func TestOpenPartial(t *testing.T) {
	lfs := hubtest.SHA256(blob)
	git := hubtest.GitBlobSHA1(blob)
	tests := []struct {
		name     string
		existing []byte // the .incomplete file before; nil for none
		etag     string
		size     int64
		wantHave int64
	}{
		{"no file yet", nil, lfs, 10, 0},
		{"a prefix resumes", blob[:4], lfs, 10, 4},
		{"a prefix of a git file resumes", blob[:4], git, 10, 4},
		{"size unknown: any length resumes", blob[:7], lfs, -1, 7},
		{"the whole blob", blob, lfs, 10, 10},
		{"longer than the blob: starts over", append(slices.Clone(blob), 'x'), lfs, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inc := filepath.Join(t.TempDir(), "blob.incomplete")
			if tt.existing != nil {
				if err := os.WriteFile(inc, tt.existing, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p, err := openPartial(inc, &source{etag: tt.etag, size: tt.size})
			if err != nil {
				t.Fatal(err)
			}
			defer p.f.Close()
			if p.have != tt.wantHave {
				t.Fatalf("have %d, want %d", p.have, tt.wantHave)
			}
			// Writing the rest through p gives the blob, and for an LFS
			// blob the running hash covers the bytes already there.
			if _, err := p.writer().Write(blob[p.have:]); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(inc); !bytes.Equal(got, blob) {
				t.Fatalf("file %q, want %q", got, blob)
			}
			wantSum := tt.etag == lfs
			if got := fmt.Sprintf("%x", p.sum()); wantSum && got != lfs || !wantSum && p.sum() != nil {
				t.Fatalf("sum %s (lfs %v)", got, wantSum)
			}
		})
	}
}

// rangeServer is a CDN whose answers a test scripts, and a Hub that
// resolves the blob to it (for a CDN URL signed afresh).
type rangeServer struct {
	cdn, hub *httptest.Server
	mu       sync.Mutex
	ranges   []string // the Range header of every CDN request ("" for none)
	heads    int      // HEAD requests to the Hub
	gets     int      // GET requests to the Hub
}

func newRangeServer(t *testing.T, cdn func(w http.ResponseWriter, r *http.Request, call int), hubEtag string) *rangeServer {
	s := &rangeServer{}
	s.cdn = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		call := len(s.ranges)
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		s.mu.Unlock()
		cdn(w, r, call)
	}))
	s.hub = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.Method == http.MethodGet {
			s.gets++
			w.WriteHeader(http.StatusForbidden)
			return
		}
		s.heads++
		w.Header().Set("Location", fmt.Sprintf("%s/blob?sig=%d", s.cdn.URL, s.heads))
		w.Header().Set("X-Linked-Etag", `"`+hubEtag+`"`)
		w.Header().Set("X-Linked-Size", "10")
		w.WriteHeader(http.StatusFound)
	}))
	t.Cleanup(func() { s.cdn.Close(); s.hub.Close() })
	return s
}

// serve answers with the blob, honouring Range (206) as a CDN does.
func serve(w http.ResponseWriter, r *http.Request) {
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(blob))
}

func TestOpenRange(t *testing.T) {
	lfs := hubtest.SHA256(blob)
	status := func(code int) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(code) }
	}
	first := func(then func(http.ResponseWriter, *http.Request, int), do func(http.ResponseWriter)) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, r *http.Request, call int) {
			if call == 0 {
				do(w)
				return
			}
			then(w, r, call)
		}
	}
	plain := func(w http.ResponseWriter, r *http.Request, _ int) { serve(w, r) }
	partOf := func(cr string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Range", cr)
			w.WriteHeader(http.StatusPartialContent)
			w.Write(blob[5:])
		}
	}
	tests := []struct {
		name     string
		have     int
		size     int64 // announced; -1 unknown
		maxFile  int64 // 0: 1 MiB
		viaHub   bool  // the content URL is on the Hub, not the CDN
		hubEtag  string
		cdn      func(w http.ResponseWriter, r *http.Request, call int)
		status   int   // the answer returned; 0 when an error is
		err      error // what the error matches
		errCode  int   // or the *Error status it is
		wantHave int64
		ranges   []string
		heads    int  // the Hub asked again for a fresh URL
		kept     bool // the .incomplete file is still there
	}{
		{name: "a new file: no Range", size: 10, cdn: plain,
			status: 200, ranges: []string{""}, kept: true},
		{name: "resume from the bytes held", have: 4, size: 10, cdn: plain,
			status: 206, wantHave: 4, ranges: []string{"bytes=4-"}, kept: true},
		{name: "a server that ignores Range: start over", have: 4, size: 10,
			cdn:    func(w http.ResponseWriter, _ *http.Request, _ int) { w.Write(blob) },
			status: 200, ranges: []string{"bytes=4-"}, kept: true},
		{name: "416: start over without Range", have: 4, size: 10,
			cdn:    first(plain, func(w http.ResponseWriter) { w.WriteHeader(http.StatusRequestedRangeNotSatisfiable) }),
			status: 200, ranges: []string{"bytes=4-", ""}, kept: true},
		{name: "206 for another part: start over", have: 4, size: 10, cdn: first(plain, partOf("bytes 5-9/10")),
			status: 200, ranges: []string{"bytes=4-", ""}, kept: true},
		{name: "206 of a file of another size: start over", have: 4, size: 10, cdn: first(plain, partOf("bytes 4-9/99")),
			status: 200, ranges: []string{"bytes=4-", ""}, kept: true},
		{name: "206 of an empty file: start over", have: 4, size: 10, cdn: first(plain, partOf("bytes 4-9/0")),
			status: 200, ranges: []string{"bytes=4-", ""}, kept: true},
		{name: "206 of a file of unknown size: the part continues", have: 4, size: 10, cdn: first(plain, func(w http.ResponseWriter) {
			w.Header().Set("Content-Range", "bytes 4-9/*")
			w.WriteHeader(http.StatusPartialContent)
			w.Write(blob[4:])
		}), status: 206, wantHave: 4, ranges: []string{"bytes=4-"}, kept: true},
		{name: "206 without Content-Range: start over", have: 4, size: 10, cdn: first(plain, partOf("")),
			status: 200, ranges: []string{"bytes=4-", ""}, kept: true},
		{name: "always the wrong part: give up, discard", have: 4, size: 10,
			cdn: func(w http.ResponseWriter, _ *http.Request, _ int) { partOf("bytes 5-9/10")(w) },
			err: ErrIntegrity, ranges: []string{"bytes=4-", "", "", "", ""}},
		{name: "expired CDN URL: signed afresh by the Hub", have: 4, size: 10, hubEtag: lfs,
			cdn:    first(plain, func(w http.ResponseWriter) { w.WriteHeader(http.StatusForbidden) }),
			status: 206, wantHave: 4, ranges: []string{"bytes=4-", "bytes=4-"}, heads: 1, kept: true},
		{name: "410 from the CDN: signed afresh too", size: 10, hubEtag: lfs,
			cdn:    first(plain, func(w http.ResponseWriter) { w.WriteHeader(http.StatusGone) }),
			status: 200, ranges: []string{"", ""}, heads: 1, kept: true},
		{name: "still refused: signed afresh once only", have: 4, size: 10, hubEtag: lfs, cdn: status(http.StatusForbidden),
			errCode: 403, wantHave: 4, ranges: []string{"bytes=4-", "bytes=4-"}, heads: 1, kept: true},
		{name: "the fresh URL names another blob: the partial file stays", have: 4, size: 10,
			hubEtag: hubtest.SHA256([]byte("other")), cdn: status(http.StatusForbidden),
			err: ErrIntegrity, wantHave: 4, ranges: []string{"bytes=4-"}, heads: 1, kept: true},
		{name: "a 403 from the Hub itself is final", have: 4, size: 10, viaHub: true, cdn: plain,
			errCode: 403, wantHave: 4, kept: true},
		{name: "a 404 from the CDN is final", have: 4, size: 10, hubEtag: lfs, cdn: status(http.StatusNotFound),
			errCode: 404, wantHave: 4, ranges: []string{"bytes=4-"}, kept: true},
		{name: "size learnt from the answer, over the cap: discard", size: -1, maxFile: 5, cdn: plain,
			err: ErrTooLarge, ranges: []string{""}},
		{name: "announced size one byte over the cap: discard", size: 10, maxFile: 9, cdn: plain,
			err: ErrTooLarge, ranges: []string{""}},
		{name: "announced size at the cap", size: 10, maxFile: 10, cdn: plain,
			status: 200, ranges: []string{""}, kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRangeServer(t, tt.cdn, tt.hubEtag)
			c, err := New(Options{Endpoint: s.hub.URL, MaxFileBytes: cmpOr(tt.maxFile, 1<<20),
				Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
			if err != nil {
				t.Fatal(err)
			}
			sha := strings.Repeat("a", 40)
			resolve, _ := url.Parse(s.hub.URL + "/acme/tiny/resolve/" + sha + "/model.safetensors")
			content, _ := url.Parse(s.cdn.URL + "/blob?sig=0")
			if tt.viaHub {
				content = resolve
			}
			inc := filepath.Join(t.TempDir(), lfs+".incomplete")
			if err := os.WriteFile(inc, blob[:tt.have], 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := openPartial(inc, &source{name: "model.safetensors", max: c.maxFile, etag: lfs, size: tt.size, url: content, resolve: resolve})
			if err != nil {
				t.Fatal(err)
			}
			defer p.f.Close()
			d := &download{c: c, id: "acme/tiny", sha: sha}
			resp, err := d.openRange(context.Background(), p, &tries{})
			if resp != nil {
				defer resp.Body.Close()
			}
			var he *Error
			switch {
			case tt.status != 0 && (err != nil || resp.StatusCode != tt.status):
				t.Fatalf("answer %v, err %v; want status %d", resp, err, tt.status)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Fatalf("err %v, want %v", err, tt.err)
			case tt.errCode != 0 && (!errors.As(err, &he) || he.Status != tt.errCode):
				t.Fatalf("err %v, want the %d", err, tt.errCode)
			}
			if p.have != tt.wantHave {
				t.Errorf("have %d, want %d", p.have, tt.wantHave)
			}
			if fi, err := os.Stat(inc); tt.kept && (err != nil || fi.Size() != tt.wantHave) || !tt.kept && err == nil {
				t.Errorf("partial file: %v (kept: want %v, %d bytes)", err, tt.kept, tt.wantHave)
			}
			if !slices.Equal(s.ranges, tt.ranges) {
				t.Errorf("CDN Range headers %q, want %q", s.ranges, tt.ranges)
			}
			if s.heads != tt.heads {
				t.Errorf("%d HEADs to the Hub for a fresh URL, want %d", s.heads, tt.heads)
			}
			if wantGets := map[bool]int{true: 1}[tt.viaHub]; s.gets != wantGets {
				t.Errorf("%d GETs to the Hub, want %d", s.gets, wantGets)
			}
			if resp != nil && resp.StatusCode == 206 {
				if b, _ := io.ReadAll(resp.Body); !bytes.Equal(b, blob[tt.have:]) {
					t.Errorf("body %q continues at the wrong byte", b)
				}
			}
		})
	}
}

func cmpOr(v, def int64) int64 {
	if v != 0 {
		return v
	}
	return def
}

var errDiskFull = errors.New("no space left on device")

// failingWriter fails every write, as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "blob.incomplete", Err: errDiskFull}
}

func TestCopyWithin(t *testing.T) {
	broken := errors.New("connection reset by peer")
	tests := []struct {
		name                string
		body                string
		readErr             error // after the body; nil for a clean end
		have, size, maxFile int64
		w                   io.Writer // nil: a buffer
		wantN               int64
		wantErr             error // nil for complete
	}{
		{name: "the whole blob", body: "0123456789", size: 10, maxFile: 100, wantN: 10},
		{name: "the rest of a resumed blob", body: "456789", have: 4, size: 10, maxFile: 100, wantN: 6},
		{name: "size unknown: a clean end completes", body: "0123456", size: -1, maxFile: 100, wantN: 7},
		{name: "size unknown: exactly the cap", body: "0123456789", size: -1, maxFile: 10, wantN: 10},
		{name: "a clean end short of the size", body: "012345", size: 10, maxFile: 100, wantN: 6, wantErr: io.ErrUnexpectedEOF},
		{name: "a clean end one byte short", body: "012345678", size: 10, maxFile: 100, wantN: 9, wantErr: io.ErrUnexpectedEOF},
		{name: "broken mid-body: the bytes that came count", body: "012", readErr: broken, size: 10, maxFile: 100, wantN: 3, wantErr: broken},
		{name: "broken before any byte", readErr: errStalled, size: 10, maxFile: 100, wantErr: errStalled},
		{name: "more than announced: one byte more is read", body: "0123456789xyz", size: 10, maxFile: 100, wantN: 11, wantErr: ErrIntegrity},
		{name: "more than announced after a resume", body: "456789x", have: 4, size: 10, maxFile: 100, wantN: 7, wantErr: ErrIntegrity},
		{name: "more than announced after a resume: one byte more is read", body: "456789xyz", have: 4, size: 10, maxFile: 100, wantN: 7, wantErr: ErrIntegrity},
		{name: "announced empty: one byte more is read", body: "xyz", size: 0, maxFile: 100, wantN: 1, wantErr: ErrIntegrity},
		{name: "size unknown, over the cap", body: strings.Repeat("x", 30), size: -1, maxFile: 10, wantN: 11, wantErr: ErrTooLarge},
		{name: "over the cap counts the bytes held", body: "56789x", have: 5, size: -1, maxFile: 10, wantN: 6, wantErr: ErrTooLarge},
		{name: "over the cap after a resume: one byte more is read", body: "56789xyzw", have: 5, size: -1, maxFile: 10, wantN: 6, wantErr: ErrTooLarge},
		{name: "the disk fails", body: "0123", size: 10, maxFile: 100, w: failingWriter{}, wantErr: errDiskFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.readErr != nil {
				body = io.MultiReader(body, &errReader{tt.readErr})
			}
			var buf bytes.Buffer
			w := tt.w
			if w == nil {
				w = &buf
			}
			n, err := copyWithin(w, body, tt.have, tt.size, tt.maxFile)
			if n != tt.wantN {
				t.Errorf("n = %d, want %d", n, tt.wantN)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if tt.w == nil && buf.String() != tt.body[:n] {
				t.Errorf("wrote %q", buf.String())
			}
		})
	}
}

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }

func TestTries(t *testing.T) {
	const wrong = -1 // an answer for the wrong part; other events are bytes moved before a break
	progress := slices.Repeat([]int64{100}, 4*maxTries+1)
	tests := []struct {
		name        string
		events      []int64
		giveUpAt    int // index of the event that gives up; -1 never
		lastAttempt int // the backoff attempt after the last event
	}{
		{"no progress, maxTries times", []int64{0, 0, 0, 0, 0}, 4, 5},
		{"progress resets the count", []int64{0, 0, 0, 0, 10, 0, 0, 0, 0}, -1, 4},
		{"one byte is progress", []int64{0, 0, 0, 0, 1, 0, 0, 0, 0}, -1, 4},
		{"progress every time, up to 4×maxTries breaks", progress[:4*maxTries], -1, 1},
		{"progress every time, one break more", progress, 4 * maxTries, 1},
		{"wrong parts, maxTries times", []int64{wrong, wrong, wrong, wrong, wrong}, 4, 5},
		{"wrong parts and breaks count together", []int64{wrong, wrong, 0, 0, 0}, 4, 5},
		{"progress after wrong parts resets them", []int64{wrong, wrong, wrong, wrong, 10, wrong, wrong, wrong, wrong}, -1, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr tries
			at := -1
			for i, e := range tt.events {
				var giveUp bool
				if e == wrong {
					giveUp = tr.wrongPart()
				} else {
					giveUp = tr.broke(e)
				}
				if giveUp {
					at = i
					break
				}
			}
			if at != tt.giveUpAt {
				t.Fatalf("gave up at event %d, want %d", at, tt.giveUpAt)
			}
			if tr.attempt() != tt.lastAttempt {
				t.Errorf("backoff attempt %d, want %d", tr.attempt(), tt.lastAttempt)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	// Known answers, computed with git hash-object and sha256sum.
	const (
		hello       = "hello\n"
		helloGitSHA = "ce013625030ba8dba906f756967f9e9ca394464a"
		helloSHA256 = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
	)
	sum := func(hexs string) []byte {
		b, err := hex.DecodeString(hexs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		content string
		n       int64
		etag    string
		size    int64
		sum     []byte
		checked bool
		wantErr error
	}{
		{"LFS: sha256 matches", hello, 6, helloSHA256, 6, sum(helloSHA256), true, nil},
		{"LFS: sha256 differs", hello, 6, helloSHA256, 6, sum(hubtest.SHA256([]byte("hellO\n"))), false, ErrIntegrity},
		{"LFS: no running hash", hello, 6, helloSHA256, 6, nil, false, ErrIntegrity},
		{"git: blob sha1 matches", hello, 6, helloGitSHA, 6, nil, true, nil},
		{"git: blob sha1 differs", "hellO\n", 6, helloGitSHA, 6, nil, false, ErrIntegrity},
		{"git: size unknown, still checked", hello, 6, helloGitSHA, -1, nil, true, nil},
		{"git: only the first n bytes count", hello + "junk", 6, helloGitSHA, 6, nil, true, nil},
		{"fewer bytes than announced", hello, 6, helloGitSHA, 7, nil, false, ErrIntegrity},
		{"more bytes than announced", hello, 6, helloSHA256, 5, sum(helloSHA256), false, ErrIntegrity},
		{"another etag form: not checked", hello, 6, "abc-1", 6, nil, false, nil},
		{"announced empty, bytes came: the size says so, whatever the etag", hello, 6, "abc-1", 0, nil, false, ErrIntegrity},
		{"an upper-case hash is another form", hello, 6, strings.ToUpper(helloGitSHA), 6, nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checked, err := verify(source{etag: tt.etag, size: tt.size}, tt.n, tt.sum, strings.NewReader(tt.content))
			if checked != tt.checked || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("verify = %v, %v; want %v, %v", checked, err, tt.checked, tt.wantErr)
			}
		})
	}
}

// cut answers for the part asked for (206 to a Range request, as a CDN
// does) but sends only n bytes of it, then breaks the connection.
func cut(n int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		from := 0
		if rg := r.Header.Get("Range"); rg != "" {
			fmt.Sscanf(rg, "bytes=%d-", &from)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-9/10", from))
		}
		w.Header().Set("Content-Length", fmt.Sprint(10-from))
		if rg := r.Header.Get("Range"); rg != "" {
			w.WriteHeader(http.StatusPartialContent)
		}
		w.Write(blob[from : from+n])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// TestReceive checks the loop around the three steps: a broken transfer
// resumes after a backoff, bytes that cannot be the blob are discarded, a
// dead connection gives up and keeps what it has.
func TestReceive(t *testing.T) {
	const ms = time.Millisecond
	lfs := hubtest.SHA256(blob)
	tests := []struct {
		name     string
		have     int
		size     int64
		cdn      func(w http.ResponseWriter, r *http.Request, call int)
		err      error // nil for success; errAny for any error
		wantHave int64
		ranges   []string
		waits    []time.Duration
		kept     bool
	}{
		{name: "in one go", size: 10, cdn: func(w http.ResponseWriter, r *http.Request, _ int) { serve(w, r) },
			wantHave: 10, ranges: []string{""}, kept: true},
		{name: "broken, resumed where it broke", size: 10,
			cdn: func(w http.ResponseWriter, r *http.Request, call int) {
				if call == 0 {
					cut(4)(w, r, call)
				}
				serve(w, r)
			},
			wantHave: 10, ranges: []string{"", "bytes=4-"}, waits: []time.Duration{ms}, kept: true},
		{name: "a whole resumed file asks nothing", have: 10, size: 10, wantHave: 10, kept: true},
		{name: "more bytes than announced: discarded", size: 10,
			cdn: func(w http.ResponseWriter, _ *http.Request, _ int) { w.Write(append(slices.Clone(blob), "xx"...)) },
			err: ErrIntegrity, wantHave: 11, ranges: []string{""}},
		{name: "no byte moves: give up after maxTries, keep the file", have: 3, size: 10, cdn: cut(0),
			err: errAny, wantHave: 3, ranges: slices.Repeat([]string{"bytes=3-"}, maxTries),
			waits: []time.Duration{ms, 2 * ms, 3 * ms, 4 * ms}, kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cdn == nil {
				tt.cdn = func(w http.ResponseWriter, _ *http.Request, _ int) { t.Error("unexpected request") }
			}
			s := newRangeServer(t, tt.cdn, lfs)
			var waits []time.Duration
			c, err := New(Options{Endpoint: s.hub.URL,
				Backoff: func(attempt int) time.Duration { return time.Duration(attempt) * ms },
				Sleep:   func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }})
			if err != nil {
				t.Fatal(err)
			}
			content, _ := url.Parse(s.cdn.URL + "/blob?sig=0")
			inc := filepath.Join(t.TempDir(), lfs+".incomplete")
			if err := os.WriteFile(inc, blob[:tt.have], 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := openPartial(inc, &source{name: "model.safetensors", max: c.maxFile, etag: lfs, size: tt.size, url: content, resolve: content})
			if err != nil {
				t.Fatal(err)
			}
			defer p.f.Close()
			d := &download{c: c, id: "acme/tiny", sha: strings.Repeat("a", 40)}
			err = d.receive(context.Background(), p)
			if (err == nil) != (tt.err == nil) || tt.err != errAny && !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if p.have != tt.wantHave {
				t.Errorf("have %d, want %d", p.have, tt.wantHave)
			}
			if !slices.Equal(s.ranges, tt.ranges) {
				t.Errorf("CDN Range headers %q, want %q", s.ranges, tt.ranges)
			}
			if !slices.Equal(waits, tt.waits) {
				t.Errorf("waits %v, want %v", waits, tt.waits)
			}
			got, err := os.ReadFile(inc)
			if tt.kept && (err != nil || !bytes.Equal(got, blob[:tt.wantHave])) || !tt.kept && err == nil {
				t.Errorf("partial file %q, %v (kept: want %v)", got, err, tt.kept)
			}
		})
	}
}

// errAny stands for "some error" in a table.
var errAny = errors.New("any error")
