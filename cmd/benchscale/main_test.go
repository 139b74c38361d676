package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/cmd/internal/wrk"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// The test binary doubles as a stand-in `scanner serve` (fakeScanner) when
// fakeVar names the file it records its command line in.
const fakeVar = "BENCHSCALE_FAKE_SCANNER"

func TestMain(m *testing.M) {
	if db := os.Getenv(dieVar); db != "" { // a bench that starts its server and dies
		os.Unsetenv(dieVar)
		startServer(os.Args[0], db)
		log.Fatal("a bench dies with its server up")
	}
	if rec := os.Getenv(fakeVar); rec != "" {
		fakeScanner(rec)
		return
	}
	os.Exit(m.Run())
}

// ballast keeps the stand-in's allocations resident.
var ballast [][]byte

// alloc allocates mb MiB and touches every page, so that it is resident.
func alloc(mb int) {
	b := make([]byte, mb<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	ballast = append(ballast, b)
}

// fakeScanner serves as `scanner serve --addr ADDR` would, for the bench's
// client side: /readyz answers 503 until FAKE_READY_AFTER has passed, then
// 200; / a page; /export.csv FAKE_EXPORT_BYTES bytes, the first export
// allocating FAKE_EXPORT_MB MiB more (a rise in peak memory). It holds
// FAKE_BASE_MB MiB from the start. It writes its command line and whether
// SCANNER_ADMIN_TOKEN is set and empty to the file rec.
func fakeScanner(rec string) {
	start := time.Now()
	// The stand-in ends when the test that started it does (a test that
	// fails, or a mutant's, may never stop it), and after a minute anyway.
	parent := os.Getppid()
	stay := os.Getenv("FAKE_STAY") != "" // outlives its parent (a minute at most)
	go func() {
		for (stay || os.Getppid() == parent) && time.Since(start) < time.Minute {
			time.Sleep(50 * time.Millisecond)
		}
		os.Exit(3)
	}()
	token, set := os.LookupEnv("SCANNER_ADMIN_TOKEN")
	os.WriteFile(rec, []byte(fmt.Sprintf("%s\nadmin token set %v empty %v\n", strings.Join(os.Args[1:], " "), set, token == "")), 0o644)
	var base, more, size int
	fmt.Sscan(os.Getenv("FAKE_BASE_MB"), &base)
	fmt.Sscan(os.Getenv("FAKE_EXPORT_MB"), &more)
	fmt.Sscan(os.Getenv("FAKE_EXPORT_BYTES"), &size)
	readyAfter, _ := time.ParseDuration(os.Getenv("FAKE_READY_AFTER"))
	if base > 0 {
		alloc(base)
	}
	addr := ""
	for i, a := range os.Args {
		if a == "--addr" && i+1 < len(os.Args) {
			addr = os.Args[i+1]
		}
	}
	var once sync.Once
	mux := http.NewServeMux()
	var polls int
	var mu sync.Mutex
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		polls++
		os.WriteFile(rec+".polls", []byte(fmt.Sprint(polls)), 0o644)
		mu.Unlock()
		if time.Since(start) < readyAfter {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the table") })
	mux.HandleFunc("/export.csv", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			if more > 0 {
				alloc(more)
			}
		})
		// In pieces: the bytes sent add little to the stand-in's memory.
		chunk := bytes.Repeat([]byte{'x'}, 4096)
		for n := size; n > 0; n -= len(chunk) {
			w.Write(chunk[:min(n, len(chunk))])
		}
	})
	fmt.Fprintln(os.Stderr, "fake scanner on", addr)
	if err := http.ListenAndServe(addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// useFake makes this test binary the scanner startServer runs; it returns
// the binary and the file the stand-in records its command line in.
func useFake(t *testing.T, env map[string]string) (bin, rec string) {
	t.Helper()
	rec = filepath.Join(t.TempDir(), "args")
	t.Setenv(fakeVar, rec)
	for k, v := range env {
		t.Setenv(k, v)
	}
	// startServer empties these; a value here shows that it does.
	t.Setenv("SCANNER_ADMIN_TOKEN", "secret")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bin, rec
}

// migrations is a repository's files that dbPath reads.
func migrations() fstest.MapFS {
	return fstest.MapFS{
		"store/migrations/0001_init.sql":    {Data: []byte("CREATE TABLE models (id TEXT);\n")},
		"store/migrations/0002_results.sql": {Data: []byte("CREATE TABLE results (id INTEGER);\n")},
		"store/storetest/storetest.go":      {Data: []byte("package storetest\n")},
		"store/store.go":                    {Data: []byte("package store\n")},
	}
}

func TestDBPathKey(t *testing.T) {
	dir := t.TempDir()
	base, err := dbPath(migrations(), dir, 100, 20)
	if err != nil {
		t.Fatal(err)
	}
	// The key as the cached databases on the machines were named: a
	// change here would make every one again (tens of minutes).
	h := sha256.Sum256([]byte("gen 1 models 100 runtimes 20\n" +
		"store/migrations/0001_init.sql 31\nCREATE TABLE models (id TEXT);\n" +
		"store/migrations/0002_results.sql 35\nCREATE TABLE results (id INTEGER);\n" +
		"store/storetest/storetest.go 18\npackage storetest\n"))
	if want := filepath.Join(dir, "scale-100x20-"+hex.EncodeToString(h[:])[:12]+".db"); base != want {
		t.Errorf("dbPath = %s, want %s", base, want)
	}
	if again, _ := dbPath(migrations(), dir, 100, 20); again != base {
		t.Errorf("nothing changed, but the path did: %s, then %s", base, again)
	}
	// Files that are not the migrations or the generator do not count.
	other := migrations()
	other["store/store.go"] = &fstest.MapFile{Data: []byte("package store // changed\n")}
	other["store/migrations/README"] = &fstest.MapFile{Data: []byte("notes\n")}
	if p, _ := dbPath(other, dir, 100, 20); p != base {
		t.Errorf("a change outside the migrations and the generator made a new database: %s", p)
	}
	changes := map[string]func(fstest.MapFS){
		"a migration changed": func(fs fstest.MapFS) {
			fs["store/migrations/0002_results.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE results (id TEXT);\n")}
		},
		"a migration added": func(fs fstest.MapFS) {
			fs["store/migrations/0003_more.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE models ADD x;\n")}
		},
		"a migration renamed": func(fs fstest.MapFS) {
			fs["store/migrations/0003_results.sql"] = fs["store/migrations/0002_results.sql"]
			delete(fs, "store/migrations/0002_results.sql")
		},
		"the generator changed": func(fs fstest.MapFS) {
			fs["store/storetest/storetest.go"] = &fstest.MapFile{Data: []byte("package storetest // v2\n")}
		},
	}
	seen := map[string]string{base: "the first"}
	for name, change := range changes {
		fs := migrations()
		change(fs)
		p, err := dbPath(fs, dir, 100, 20)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if prev, ok := seen[p]; ok {
			t.Errorf("%s: the same path as %s: %s", name, prev, p)
		}
		seen[p] = name
	}
	for _, size := range [][2]int{{101, 20}, {100, 21}, {20, 100}} {
		p, _ := dbPath(migrations(), dir, size[0], size[1])
		if want := fmt.Sprintf("scale-%dx%d-", size[0], size[1]); !strings.HasPrefix(filepath.Base(p), want) {
			t.Errorf("size %v: %s", size, p)
		}
		if prev, ok := seen[p]; ok {
			t.Errorf("size %v: the same path as %s", size, prev)
		}
		seen[p] = fmt.Sprint(size)
	}
}

func TestDBPathDirAndErrors(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("SCANNER_CACHE_HOME", cache)
	p, err := dbPath(migrations(), "", 10, 2)
	if err != nil || filepath.Dir(p) != filepath.Join(cache, "bench") {
		t.Errorf("with SCANNER_CACHE_HOME: %s, %v", p, err)
	}
	t.Setenv("SCANNER_CACHE_HOME", "")
	t.Setenv("XDG_CACHE_HOME", cache)
	p, err = dbPath(migrations(), "", 10, 2)
	if err != nil || filepath.Dir(p) != filepath.Join(cache, "torchtpu-scanner", "bench") {
		t.Errorf("with the user's cache: %s, %v", p, err)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	if p, err := dbPath(migrations(), "", 10, 2); err == nil {
		t.Errorf("no cache directory at all: %s", p)
	}
	// Not at the repository's root: no migrations.
	none := migrations()
	delete(none, "store/migrations/0001_init.sql")
	delete(none, "store/migrations/0002_results.sql")
	if _, err := dbPath(none, t.TempDir(), 10, 2); err == nil || !strings.Contains(err.Error(), "repository root") {
		t.Errorf("no migrations: %v", err)
	}
	noGen := migrations()
	delete(noGen, "store/storetest/storetest.go")
	if _, err := dbPath(noGen, t.TempDir(), 10, 2); err == nil {
		t.Error("no generator: no error")
	}
	// The repository itself (the test runs in cmd/benchscale).
	if p, err := dbPath(os.DirFS("../.."), "/c", 100000, 20); err != nil || !regexp.MustCompile(`^/c/scale-100000x20-[0-9a-f]{12}\.db$`).MatchString(p) {
		t.Errorf("the repository: %s, %v", p, err)
	}
}

func TestGoals(t *testing.T) {
	g := &goals{}
	if got := g.report("goal a", true); got != "goal a: ok" || g.failed {
		t.Errorf("met: %q, failed %v", got, g.failed)
	}
	if got := g.report("goal b", false); got != "goal b: MISSED" || !g.failed {
		t.Errorf("missed: %q, failed %v", got, g.failed)
	}
	if g.report("goal c", true); !g.failed {
		t.Error("a goal met after one missed forgot the miss")
	}
}

func TestRouteGoal(t *testing.T) {
	us := time.Microsecond
	minimal := wrk.Result{RPS: 10000, P50: 100 * us, P99: 300 * us}
	for _, tt := range []struct {
		name    string
		ratio   ratioKind
		p50     time.Duration
		c1, c16 wrk.Result
		want    string
		failed  bool
	}{
		{"fast miss", noRatio, 49 * time.Millisecond, wrk.Result{P50: 900 * us}, wrk.Result{}, "miss p50 < 50ms: ok", false},
		{"slow miss", noRatio, 50 * time.Millisecond, wrk.Result{P50: 100 * us}, wrk.Result{}, "miss p50 < 50ms: MISSED", true},
		{"table at 3×", ratioGoal, time.Millisecond, wrk.Result{P50: 300 * us}, wrk.Result{},
			"miss p50 < 50ms: ok; cached p50 3.0× minimal ≤ 3×: ok", false},
		{"table over 3×", ratioGoal, time.Millisecond, wrk.Result{P50: 301 * us}, wrk.Result{},
			"miss p50 < 50ms: ok; cached p50 3.0× minimal ≤ 3×: MISSED", true},
		{"table at 2.5×", ratioGoal, time.Millisecond, wrk.Result{P50: 250 * us}, wrk.Result{},
			"miss p50 < 50ms: ok; cached p50 2.5× minimal ≤ 3×: ok", false},
		{"ratio shown", ratioShown, time.Millisecond, wrk.Result{P50: 450 * us}, wrk.Result{},
			"miss p50 < 50ms: ok; cached p50 4.5× minimal", false},
		{"errors with one client", noRatio, time.Millisecond, wrk.Result{P50: 1, Errors: "3 non-2xx"}, wrk.Result{},
			"miss p50 < 50ms: ok (errors: 3 non-2xx)", true},
		{"errors with 16", noRatio, time.Millisecond, wrk.Result{P50: 1}, wrk.Result{Errors: "Socket errors: connect 0, read 1, write 0, timeout 0"},
			"miss p50 < 50ms: ok (errors: Socket errors: connect 0, read 1, write 0, timeout 0)", true},
		{"errors with both", ratioShown, time.Millisecond, wrk.Result{P50: 200 * us, Errors: "1 non-2xx"}, wrk.Result{Errors: "2 non-2xx"},
			"miss p50 < 50ms: ok; cached p50 2.0× minimal (errors: 1 non-2xx 2 non-2xx)", true},
	} {
		g := &goals{}
		got := routeGoal(g, route{name: tt.name, ratio: tt.ratio}, tt.p50, tt.c1, tt.c16, minimal)
		if got != tt.want || g.failed != tt.failed {
			t.Errorf("%s: %q, failed %v; want %q, %v", tt.name, got, g.failed, tt.want, tt.failed)
		}
	}
}

func TestFmtMB(t *testing.T) {
	for b, want := range map[int64]string{0: "0 MB", 1 << 20: "1 MB", 150 << 20: "150 MB", 3 << 19: "2 MB", -(5 << 20): "-5 MB", 1e9: "954 MB"} {
		if got := fmtMB(b); got != want {
			t.Errorf("fmtMB(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestNearestRank(t *testing.T) {
	ms := func(n int) []time.Duration {
		var out []time.Duration
		for i := 1; i <= n; i++ {
			out = append(out, time.Duration(i)*time.Millisecond)
		}
		return out
	}
	for _, tt := range []struct {
		n    int
		p    float64
		want time.Duration
	}{
		{1, 0.5, time.Millisecond}, {1, 0.99, time.Millisecond},
		{3, 0.5, 2 * time.Millisecond}, {3, 0.99, 3 * time.Millisecond},
		{4, 0.5, 2 * time.Millisecond}, {10, 0.5, 5 * time.Millisecond}, {10, 0.99, 10 * time.Millisecond},
		{15, 0.5, 8 * time.Millisecond}, {15, 0.99, 15 * time.Millisecond},
		{100, 0.99, 99 * time.Millisecond}, {200, 0.99, 198 * time.Millisecond}, {200, 1, 200 * time.Millisecond},
	} {
		if got := nearestRank(ms(tt.n), tt.p); got != tt.want {
			t.Errorf("nearestRank(1..%d ms, %v) = %v, want %v", tt.n, tt.p, got, tt.want)
		}
	}
}

func TestStatusFields(t *testing.T) {
	status := []byte("Name:\tscanner\nState:\tS (sleeping)\nVmPeak:\t 2345680 kB\nVmHWM:\t  123456 kB\nVmRSS:\t   98765 kB\n" +
		"RssAnon:\t   80000 kB\nRssFile:\t   18765 kB\nThreads:\t12\n")
	got, err := statusFields(status, "VmHWM", "VmRSS", "RssAnon", "RssFile")
	if want := []int64{123456 << 10, 98765 << 10, 80000 << 10, 18765 << 10}; err != nil || !slices.Equal(got, want) {
		t.Errorf("statusFields = %v, %v; want %v", got, err, want)
	}
	for _, name := range []string{"VmSwap", "Threads", "Rss"} {
		if got, err := statusFields(status, "VmHWM", name); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, %v", name, got, err)
		}
	}
}

func TestLoadAvg(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for path, want := range map[string]string{
		write("full", "0.50 1.25 12.00 3/456 7890\n"): "load average 0.50, 1.25, 12.00",
		write("three", "0.50 1.25 12.00"):             "load average 0.50, 1.25, 12.00",
		write("two", "0.50 1.25\n"):                   "unknown",
		write("empty", ""):                            "unknown",
		filepath.Join(dir, "missing"):                 "unknown",
	} {
		if got := loadAvgOf(path); got != want {
			t.Errorf("loadAvgOf(%s) = %q, want %q", filepath.Base(path), got, want)
		}
	}
	if got := loadAvg(); !regexp.MustCompile(`^load average [0-9.]+, [0-9.]+, [0-9.]+$`).MatchString(got) {
		t.Errorf("loadAvg() = %q on Linux", got)
	}
}

// runtimesServer answers /api/v1/runtimes?target=tpu with these runtime
// keys, newest first, and 404 elsewhere.
func runtimesServer(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/runtimes" || r.URL.Query().Get("target") != "tpu" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPickRoutes(t *testing.T) {
	srv := runtimesServer(t, `{"runtimes": [{"key": "tpu|0.3.0+a&b", "target": "tpu"}, {"key": "tpu|0.2.0", "target": "tpu"},
		{"key": "tpu|0.1.0 rc", "target": "tpu"}]}`)
	routes, err := pickRoutes(srv.URL, 300)
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 25 {
		t.Errorf("%d routes", len(routes))
	}
	byName := map[string]route{}
	for _, r := range routes {
		if !strings.HasPrefix(r.url, srv.URL+"/") {
			t.Errorf("%s: %s is not the server's", r.name, r.url)
		}
		if _, dup := byName[r.name]; dup {
			t.Errorf("two routes named %s", r.name)
		}
		byName[r.name] = r
	}
	// The table's goal is the table as browsers ask for it; the plain one
	// is shown beside it; no other route has a ratio or a header.
	want := map[string]route{
		"table / (as browsers ask: gzip)": {"", srv.URL + "/", ratioGoal, "Accept-Encoding: gzip, deflate, br, zstd"},
		"table / (no Accept-Encoding)":    {"", srv.URL + "/", ratioShown, ""},
		"model page":                      {"", srv.URL + "/models/org20/model-00100", noRatio, ""},
		"badge .svg":                      {"", srv.URL + "/badge/org20/model-00100.svg", noRatio, ""},
		"/api/v1/compare oldest→newest":   {"", srv.URL + "/api/v1/compare?base=tpu%7C0.1.0+rc&head=tpu%7C0.3.0%2Ba%26b", noRatio, ""},
		"/compare oldest→newest":          {"", srv.URL + "/compare?base=tpu%7C0.1.0+rc&head=tpu%7C0.3.0%2Ba%26b", noRatio, ""},
		"/readyz":                         {"", srv.URL + "/readyz", noRatio, ""},
	}
	for name, w := range want {
		w.name = name
		if got := byName[name]; got != w {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
	for _, r := range routes {
		if _, ok := want[r.name]; !ok && (r.ratio != noRatio || r.header != "") {
			t.Errorf("%s: ratio %v, header %q", r.name, r.ratio, r.header)
		}
	}
	u, _ := url.Parse(byName["/compare oldest→newest"].url)
	if u.Query().Get("base") != "tpu|0.1.0 rc" || u.Query().Get("head") != "tpu|0.3.0+a&b" {
		t.Errorf("the far comparison: %s", u.RawQuery)
	}
}

func TestPickRoutesRefuses(t *testing.T) {
	for name, body := range map[string]string{
		"two runtimes": `{"runtimes": [{"key": "tpu|0.2.0"}, {"key": "tpu|0.1.0"}]}`,
		"not JSON":     `<html>`,
	} {
		srv := runtimesServer(t, body)
		if routes, err := pickRoutes(srv.URL, 300); err == nil || !strings.Contains(err.Error(), "runtimes") {
			t.Errorf("%s: %d routes, %v", name, len(routes), err)
		}
	}
	srv := runtimesServer(t, "")
	if _, err := pickRoutes(srv.URL+"/nowhere", 300); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404: %v", err)
	}
	srv.Close()
	if _, err := pickRoutes(srv.URL, 300); err == nil {
		t.Error("a server that is gone: no error")
	}
}

// event is a write or a request, with its time.
type event struct {
	what string
	at   time.Time
}

// recorder records writes and requests in order.
type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) add(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{what, time.Now()})
}

func TestMissTimes(t *testing.T) {
	for _, n := range []int{4, 5} {
		rec := &recorder{}
		requests := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec.add("get")
			requests++
			if requests == 2 { // one slow request of n
				time.Sleep(150 * time.Millisecond)
			}
		}))
		p50, p99 := missTimes(srv.URL+"/x", n, func() { rec.add("write") })
		srv.Close()
		// Each request follows a write, at least the time the server takes
		// to see another process's write; then writes to an even count, so
		// that the data is as it was.
		var got []string
		for i, e := range rec.events {
			got = append(got, e.what)
			// (with a margin beyond the server's window).
			if e.what == "get" && i > 0 && e.at.Sub(rec.events[i-1].at) < store.ForeignWritesSeenWithin+10*time.Millisecond {
				t.Errorf("n=%d: request %d came %s after its write", n, i, e.at.Sub(rec.events[i-1].at))
			}
		}
		want := slices.Repeat([]string{"write", "get"}, n)
		want = append(want, "write")
		if n%2 == 0 {
			want = append(want, "write")
		}
		if !slices.Equal(got, want) {
			t.Errorf("n=%d: %v, want %v", n, got, want)
		}
		if p50 >= 150*time.Millisecond || p99 < 150*time.Millisecond || p50 <= 0 {
			t.Errorf("n=%d: p50 %s, p99 %s; one request of %d took 150ms", n, p50, p99, n)
		}
	}
}

func TestProgressDue(t *testing.T) {
	for _, tt := range []struct {
		since       time.Duration
		done, total int
		want        bool
	}{
		{time.Second, 20000, 1800000, false}, {29 * time.Second, 40000, 1800000, false},
		{30 * time.Second, 60000, 1800000, false}, {31 * time.Second, 80000, 1800000, true},
		{time.Second, 1800000, 1800000, true}, {0, 16, 16, true}, {time.Hour, 16, 16, true},
	} {
		if got := progressDue(tt.since, tt.done, tt.total); got != tt.want {
			t.Errorf("progressDue(%s, %d, %d) = %v", tt.since, tt.done, tt.total, got)
		}
	}
}

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			http.Error(w, "no such page", http.StatusTeapot)
			return
		}
		fmt.Fprint(w, "body")
	}))
	defer srv.Close()
	if b, err := fetch(srv.URL + "/ok"); err != nil || string(b) != "body" {
		t.Errorf("fetch = %q, %v", b, err)
	}
	if b := get(srv.URL + "/ok"); string(b) != "body" {
		t.Errorf("get = %q", b)
	}
	if b, err := fetch(srv.URL + "/x"); err == nil || !strings.Contains(err.Error(), "418") || !strings.Contains(err.Error(), "no such page") {
		t.Errorf("a 418: %q, %v", b, err)
	}
}

// seeded is a store of 20 models and 40 results.
func seeded(t *testing.T) *store.SQLite {
	db := storetest.MustOpen(t)
	storetest.MustSeed(t, db, 20, 40)
	return db
}

func TestToggler(t *testing.T) {
	ctx := context.Background()
	db := seeded(t)
	downloads := func() int64 {
		m, err := db.GetModel(ctx, storetest.ModelID(3), "")
		if err != nil {
			t.Fatal(err)
		}
		return m.Downloads
	}
	before := downloads()
	toggle := toggler(ctx, db)
	for i, want := range []int64{before + 1, before, before + 1, before} {
		toggle()
		if got := downloads(); got != want {
			t.Errorf("after write %d: downloads %d, want %d", i+1, got, want)
		}
	}
}

func TestUpserts(t *testing.T) {
	ctx := context.Background()
	db := seeded(t)
	before, err := storetest.Listing(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// What the changed listing upserts: every tenth model, most downloaded
	// first, one download more.
	var upserted [][]store.ModelUpsert
	changed, back := upsertsWith(ctx, func(ctx context.Context, ups []store.ModelUpsert) error {
		upserted = append(upserted, slices.Clone(ups))
		return db.UpsertModels(ctx, ups)
	}, before)
	if len(upserted) != 2 || len(upserted[0]) != 20 {
		t.Fatalf("upserts: %d", len(upserted))
	}
	moved := 0
	for i, u := range upserted[0] {
		want := before[i].Downloads
		if i == 0 || i == 10 {
			want++
		}
		if u.Downloads != want {
			t.Errorf("changed listing, model %d: downloads %d, want %d", i, u.Downloads, want)
		}
		if u.Downloads != before[i].Downloads {
			moved++
		}
	}
	if moved != 2 || !slices.EqualFunc(upserted[1], before, func(a, b store.ModelUpsert) bool { return a.ID == b.ID && a.Downloads == b.Downloads }) {
		t.Errorf("%d moved; put back %v", moved, upserted[1])
	}
	after, err := storetest.Listing(ctx, db)
	if err != nil || len(after) != len(before) {
		t.Fatal(err)
	}
	for i := range after {
		if after[i].ID != before[i].ID || after[i].Downloads != before[i].Downloads {
			t.Errorf("not put back: %+v, was %+v", after[i], before[i])
		}
	}
	total := cpuTime()
	for _, tm := range []timing{changed, back} {
		if tm.wall <= 0 || tm.cpu < 0 || tm.cpu > total {
			t.Errorf("timing %+v (the process's CPU time so far %s)", tm, total)
		}
	}
}

func TestCPUTime(t *testing.T) {
	// The process's user and system time, read around cpuTime (whatever
	// the host's load, cpuTime falls between them).
	rusage := func() time.Duration {
		var r syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
			t.Fatal(err)
		}
		return time.Duration(r.Utime.Nano()) + time.Duration(r.Stime.Nano())
	}
	for range 3 {
		for range 1000 { // some system time
			os.Stat(".")
		}
		before := rusage()
		got := cpuTime()
		if after := rusage(); got < before || got > after || before <= 0 {
			t.Errorf("cpuTime %s, the process's CPU time %s before and %s after", got, before, after)
		}
	}
}

func TestMeasureUpsert(t *testing.T) {
	var out bytes.Buffer
	g := &goals{}
	measureUpsert(context.Background(), &out, seeded(t), 20, g)
	if !regexp.MustCompile(`listing upsert of 20 models, 2 with new downloads: \S+ \(CPU \S+\), and putting them back: \S+ \(CPU \S+\)  \[goal < 5s: ok\]`).MatchString(out.String()) || g.failed {
		t.Errorf("output %q, failed %v", out.String(), g.failed)
	}
}

func TestGenerate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bench", "scale.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// A run stopped half-way left a temporary copy: it is started over.
	if err := os.WriteFile(path+".tmp", []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	generate(ctx, path, 9, 16, 2)
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary copy is left: %v", err)
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sum, err := db.Summary(ctx, "")
	if err != nil || sum.Models != 9 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	for i := range 9 {
		m, err := db.GetModel(ctx, storetest.ModelID(i), "")
		if err != nil || m.Readiness == nil {
			t.Fatalf("model %d: %+v, %v", i, m, err)
		}
		if i%3 == 2 {
			if m.Readiness.MinDevices != nil {
				t.Errorf("model %d: min devices %v, want unknown", i, m.Readiness.MinDevices)
			}
			continue
		}
		if len(m.Readiness.MinDevices) != len(readiness.Generations) {
			t.Errorf("model %d: min devices %v", i, m.Readiness.MinDevices)
		}
		for _, gen := range readiness.Generations {
			if want := 1 + (i%3)*(i%5); m.Readiness.MinDevices[gen.Name] != want {
				t.Errorf("model %d, %s: %d devices, want %d", i, gen.Name, m.Readiness.MinDevices[gen.Name], want)
			}
		}
	}
}

func TestStartServer(t *testing.T) {
	bin, rec := useFake(t, map[string]string{"FAKE_READY_AFTER": "100ms"})
	db := filepath.Join(t.TempDir(), "scale.db")
	srv := startServer(bin, db)
	if srv.startUp < 100*time.Millisecond {
		t.Errorf("ready after %s; the server answered 503 for 100ms", srv.startUp)
	}
	// It asked every 2ms or more slowly (a request takes time too), not
	// as fast as it could.
	var polls int
	b, _ := os.ReadFile(rec + ".polls")
	if fmt.Sscan(string(b), &polls); polls < 1 || polls > 55 {
		t.Errorf("%d requests to /readyz in 100ms", polls)
	}
	if b, err := fetch(srv.base + "/"); err != nil || string(b) != "the table" {
		t.Errorf("GET /: %q, %v", b, err)
	}
	args, _ := os.ReadFile(rec)
	host := strings.TrimPrefix(srv.base, "http://")
	if want := "serve --db " + db + " --no-schedule --addr " + host + " --log-format json --rate-limit 0\nadmin token set true empty true\n"; string(args) != want {
		t.Errorf("scanner ran as %q, want %q", args, want)
	}
	if _, _, err := net.SplitHostPort(host); err != nil || !strings.HasPrefix(host, "127.0.0.1:") {
		t.Errorf("address %s: %v", host, err)
	}
	peak, now := srv.memory()
	if now <= 0 || peak < now {
		t.Errorf("memory: peak %d, now %d", peak, now)
	}
	if b, _ := os.ReadFile(srv.log); !strings.Contains(string(b), "fake scanner on "+host) {
		t.Errorf("the server's log: %q", b)
	}
	srv.stop()
	if srv.cmd.ProcessState == nil {
		t.Error("stop did not wait for the server")
	}
	if left := proctest.With(db); len(left) > 0 {
		t.Errorf("stand-ins left running: %v", left)
	}
	if _, err := os.Stat(srv.log); !os.IsNotExist(err) {
		t.Errorf("the log is left: %v", err)
	}
}

// durIn reads the duration after prefix in s.
func durIn(t *testing.T, s, prefix string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(prefix) + `([0-9.]+(?:µs|ms|s))`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %q in %q", prefix, s)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestMeasureStartUp(t *testing.T) {
	// A server that is ready after 250ms misses the goal.
	bin, _ := useFake(t, map[string]string{"FAKE_READY_AFTER": "250ms"})
	var out bytes.Buffer
	g := &goals{}
	srv := measureStartUp(&out, bin, "x.db", g)
	srv.stop()
	if d := durIn(t, out.String(), "median of 3: "); d < 250*time.Millisecond || !strings.Contains(out.String(), "[goal < 200ms: MISSED]") || !g.failed {
		t.Errorf("slow start: %q (%s), failed %v", out.String(), d, g.failed)
	}
	// One that is ready at once meets it (unless this host is so loaded
	// that starting a process takes 200ms: then the median says so).
	bin, _ = useFake(t, map[string]string{"FAKE_READY_AFTER": "0s"})
	out.Reset()
	g = &goals{}
	srv = measureStartUp(&out, bin, "x.db", g)
	defer srv.stop()
	if srv.cmd.ProcessState != nil {
		t.Error("the last server is stopped")
	}
	if d := durIn(t, out.String(), "median of 3: "); d < 200*time.Millisecond && (!strings.Contains(out.String(), "[goal < 200ms: ok]") || g.failed) {
		t.Errorf("fast start: %q, failed %v", out.String(), g.failed)
	}
}

func TestMeasureExports(t *testing.T) {
	for _, tt := range []struct {
		name, base, more, verdict string
		rise                      int64
	}{
		// 60 MiB held before the exports, none added: ok.
		{"no rise", "60", "0", "ok", 0},
		// 130 MiB added by the exports: missed.
		{"a rise", "0", "130", "MISSED", 130 << 20},
	} {
		bin, _ := useFake(t, map[string]string{"FAKE_BASE_MB": tt.base, "FAKE_EXPORT_MB": tt.more, "FAKE_EXPORT_BYTES": "1500000"})
		srv := startServer(bin, "x.db")
		var out bytes.Buffer
		g := &goals{}
		measureExports(&out, srv, g)
		srv.stop()
		s := out.String()
		re := regexp.MustCompile(`\(after the exports: anonymous \d+ MB, file-backed \d+ MB\)\n16 concurrent /export.csv: peak RSS (\d+) MB → (\d+) MB \(rise (-?\d+) MB\), each \S+ for 1\.5 MB  \[goal rise < 100 MB: (\w+)\]\n`)
		m := re.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("%s: %q", tt.name, s)
			continue
		}
		var before, after, rise int64
		fmt.Sscan(m[1], &before)
		fmt.Sscan(m[2], &after)
		fmt.Sscan(m[3], &rise)
		if m[4] != tt.verdict || g.failed != (tt.verdict == "MISSED") || rise < tt.rise>>20 || (tt.rise == 0 && rise >= 60) || after < before {
			t.Errorf("%s: %q, failed %v", tt.name, s, g.failed)
		}
	}
}

func TestExports(t *testing.T) {
	bin, _ := useFake(t, map[string]string{"FAKE_EXPORT_BYTES": "12345"})
	srv := startServer(bin, "x.db")
	defer srv.stop()
	var out bytes.Buffer
	peak, median, size := exports(&out, srv)
	if size != 12345 || median <= 0 || peak[0] <= 0 || peak[1] < peak[0] {
		t.Errorf("exports: peak %v, median %s, size %d", peak, median, size)
	}
}

func TestMeasureRoutes(t *testing.T) {
	ctx := context.Background()
	db := seeded(t)
	var mu sync.Mutex
	served := map[string]int{}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/api/v1/runtimes" {
			fmt.Fprint(w, `{"runtimes": [{"key": "c"}, {"key": "b"}, {"key": "a"}]}`)
		}
	}))
	defer app.Close()
	us := time.Microsecond
	var calls []string
	load := func(u, header string, threads, conns int) wrk.Result {
		where := "minimal"
		if strings.HasPrefix(u, app.URL) {
			where = strings.TrimPrefix(u, app.URL)
		}
		calls = append(calls, fmt.Sprintf("%s %q %d %d", where, header, threads, conns))
		switch {
		case where == "minimal":
			if b, err := fetch(u); err != nil || string(b) != "ok" {
				t.Errorf("the minimal handler at %s: %q, %v", u, b, err)
			}
			if header == "" {
				return wrk.Result{RPS: 20000, P50: 100 * us, P99: 200 * us}
			}
			return wrk.Result{RPS: 10000, P50: 200 * us, P99: 400 * us}
		case where == "/" && header != "":
			return wrk.Result{RPS: 5000, P50: 500 * us, P99: time.Millisecond}
		case where == "/":
			return wrk.Result{RPS: 4000, P50: 300 * us, P99: time.Millisecond}
		case where == "/metrics" && conns == 16:
			return wrk.Result{RPS: 100, P50: 2 * time.Millisecond, P99: 5 * time.Millisecond, Errors: "3 non-2xx"}
		}
		return wrk.Result{RPS: 1000, P50: time.Millisecond, P99: 2 * time.Millisecond}
	}
	var out bytes.Buffer
	g := &goals{}
	measureRoutes(ctx, &out, db, &server{base: app.URL}, 20, 1, 3*time.Second, load, g)
	s := out.String()
	if !strings.Contains(s, "(the first request after a write; 1 each, 1 client) and cached (wrk 3s, 1 and 16 clients)") {
		t.Errorf("heading: %q", s)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if name, _, ok := strings.Cut(strings.TrimSpace(l), "  "); ok {
			lines[name] = strings.Join(strings.Fields(l), " ")
		}
	}
	for name, want := range map[string]string{
		"minimal fiber handler": "minimal fiber handler 100µs 200µs 100µs 200µs 20000",
		"minimal fiber handler (Accept-Encoding: gzip, deflate, br, zstd)": "minimal fiber handler (Accept-Encoding: gzip, deflate, br, zstd) 200µs 400µs 200µs 400µs 10000",
		"table / (as browsers ask: gzip)":                                  "500µs 1.00ms 500µs 1.00ms 5000 miss p50 < 50ms: ok; cached p50 2.5× minimal ≤ 3×: ok",
		"table / (no Accept-Encoding)":                                     "300µs 1.00ms 300µs 1.00ms 4000 miss p50 < 50ms: ok; cached p50 3.0× minimal",
		"/metrics":                                                         "1.00ms 2.00ms 2.00ms 5.00ms 100 miss p50 < 50ms: ok (errors: 3 non-2xx)",
		"/readyz":                                                          "1.00ms 2.00ms 1.00ms 2.00ms 1000 miss p50 < 50ms: ok",
	} {
		if got := lines[name]; !strings.HasSuffix(got, want) {
			t.Errorf("%s: %q, want it to end %q", name, got, want)
		}
	}
	if !g.failed {
		t.Error("a route's errors did not fail the run")
	}
	// Each route: one request after a write, then wrk with 1 and 16 clients.
	want := []string{`minimal "" 1 1`, `minimal "" 2 16`, `minimal "Accept-Encoding: gzip, deflate, br, zstd" 1 1`,
		`minimal "Accept-Encoding: gzip, deflate, br, zstd" 2 16`, `/ "Accept-Encoding: gzip, deflate, br, zstd" 1 1`,
		`/ "Accept-Encoding: gzip, deflate, br, zstd" 2 16`, `/ "" 1 1`, `/ "" 2 16`}
	if len(calls) != 2*2+25*2 || !slices.Equal(calls[:8], want) {
		t.Errorf("wrk runs %d: %q", len(calls), calls[:min(8, len(calls))])
	}
	mu.Lock()
	defer mu.Unlock()
	if served["/api/v1/runtimes"] != 2 || served["/healthz"] != 1 || served["/models/"+storetest.ModelID(6)] != 1 {
		t.Errorf("requests: %v", served)
	}
	// The data is as it was (the writes went back and forth).
	m, err := db.GetModel(ctx, storetest.ModelID(3), "")
	fresh := seeded(t)
	m2, _ := fresh.GetModel(ctx, storetest.ModelID(3), "")
	if err != nil || m.Downloads != m2.Downloads {
		t.Errorf("downloads %d, seeded %d (%v)", m.Downloads, m2.Downloads, err)
	}
}

// TestSettleWAL: a WAL left by a run killed before its Close is copied
// back into the database and gone, its writes kept.
func TestSettleWAL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(dir, "live.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: "o/m", Downloads: 7}}); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, "left.db")
	for _, suffix := range []string{"", "-wal"} { // the files a killed run leaves
		b, err := os.ReadFile(filepath.Join(dir, "live.db") + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(left+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(left + "-wal"); err != nil || st.Size() == 0 {
		t.Fatalf("no WAL to settle (%v): the test measures nothing", err)
	}
	if err := settleWAL(ctx, left); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the WAL is still there after settleWAL (%v)", err)
	}
	again, err := store.Open(ctx, left)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if m, err := again.GetModel(ctx, "o/m", ""); err != nil || m.Downloads != 7 {
		t.Errorf("after settleWAL the model is %+v, %v; want its 7 downloads", m, err)
	}
	if err := settleWAL(ctx, filepath.Join(dir, "no-such-dir", "x.db")+"?"); err == nil {
		t.Error("settleWAL of a path the store refuses: no error")
	}
}

// dieVar names the database of a bench that TestMain runs to start its
// server and die (TestServerDiesWithTheBench).
const dieVar = "BENCHSCALE_TEST_DIE_WITH"

// TestServerDiesWithTheBench: a bench that stops on a fatal error
// (log.Fatal runs no deferred stop) takes its server with it, even one
// that would outlive its parent.
func TestServerDiesWithTheBench(t *testing.T) {
	bin, _ := useFake(t, map[string]string{"FAKE_STAY": "1"})
	db := filepath.Join(t.TempDir(), "scale.db")
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), dieVar+"="+db)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "a bench dies with its server up") {
		t.Fatalf("the bench did not die as asked: %v\n%s", err, out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(proctest.With(db)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := proctest.With(db); len(left) > 0 {
		t.Errorf("the server outlived the bench: %v", left)
	}
}
