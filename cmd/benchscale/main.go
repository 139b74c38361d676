// Command benchscale measures the scanner at Hub scale: a database of
// 100 000 models and 20 runtimes (1.8 M results), made by the project's own
// generator (storetest.SeedScale) through the store's API, served by the
// real `scanner serve` process beside a minimal fiber handler in this one.
//
//	go run ./cmd/benchscale [-models 100000] [-runtimes 20] [-d 3s] [-misses 15] [-scanner bin/scanner] [-prepare]
//
// It prints, against the goals of issue 28:
//   - each public route's median and p99 on a cache miss (the first request
//     after a write; Go's client, which asks for gzip as a browser does),
//     one client: goal median < 50 ms;
//   - each route cached, with 1 and 16 clients (wrk), beside the minimal
//     handler's: goal for the table as a browser asks for it (Accept-Encoding
//     gzip), median (1 client) ≤ 3× the minimal's; the table as wrk asks by
//     default (no Accept-Encoding: the whole 67 KB) is shown beside it;
//   - 16 concurrent /export.csv: the server's peak resident memory before
//     and after: goal a rise < 100 MB;
//   - start-up: `scanner serve` from exec to its first /readyz: goal < 200 ms;
//   - a listing of every model with a tenth's downloads changed
//     (UpsertModels): goal < 5 s.
//
// The database is cached between runs in $SCANNER_CACHE_HOME/bench (default
// ~/.cache/torchtpu-scanner/bench), keyed by the migrations, the generator
// and the size, so that a schema change makes a new one; making it takes
// tens of minutes. The bench's writes put back what they change.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/cmd/internal/benchserve"
	"github.com/google-pytorch/torchtpu-scanner/cmd/internal/wrk"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// genVersion names what the bench adds to the generator's data (readiness);
// change it when that changes, to make a new database.
const genVersion = "1"

// The goals of issue 28.
const (
	goalMiss       = 50 * time.Millisecond
	goalTableRatio = 3.0
	// browserEncoding is the Accept-Encoding a browser sends (Chrome's).
	browserEncoding = "Accept-Encoding: gzip, deflate, br, zstd"
	goalExportRise  = 100 << 20
	goalStartUp     = 200 * time.Millisecond
	goalUpsert      = 5 * time.Second
	exportsAtOnce   = 16
	changedFraction = 10 // one model in this many gets new downloads
)

func main() {
	var (
		nModels   = flag.Int("models", 100000, "models")
		nRuntimes = flag.Int("runtimes", 20, "rounds of results (tpu runtimes but every 4th round, on cpu)")
		dur       = flag.Duration("d", 3*time.Second, "duration of each wrk run")
		misses    = flag.Int("misses", 15, "requests after a write per route")
		scanner   = flag.String("scanner", "bin/scanner", "the scanner binary to serve with")
		cacheDir  = flag.String("cache", "", "where the database is kept (default $SCANNER_CACHE_HOME/bench)")
		wrkPath   = flag.String("wrk", "wrk", "the wrk binary")
		strict    = flag.Bool("strict", false, "exit 1 when a goal is missed")
		prepare   = flag.Bool("prepare", false, "make the database if it is missing, then exit")
		given     = flag.String("db", "", "measure this database instead (made by the generator, or migrated from one)")
	)
	flag.Parse()
	if _, err := exec.LookPath(*wrkPath); err != nil {
		log.Fatalf("benchscale needs wrk (Debian: apt-get install wrk): %v", err)
	}
	if _, err := os.Stat(*scanner); err != nil {
		log.Fatalf("benchscale serves with %s (make build): %v", *scanner, err)
	}
	ctx := context.Background()
	nResults := *nModels * 9 / 10 * *nRuntimes
	path, err := dbPath(os.DirFS("."), *cacheDir, *nModels, *nRuntimes)
	if err != nil {
		log.Fatal(err)
	}
	if *given != "" {
		path = *given
	} else if _, err := os.Stat(path); err != nil {
		generate(ctx, path, *nModels, nResults, *nRuntimes)
	}
	if *prepare {
		fmt.Println(path)
		return
	}
	if err := settleWAL(ctx, path); err != nil {
		log.Fatal(err)
	}
	st, _ := os.Stat(path)
	fmt.Printf("database: %s (%d models, %d results, %.1f GB)\n", path, *nModels, nResults, float64(st.Size())/1e9)
	fmt.Println("load:", loadAvg(), "·", runtime.NumCPU(), "CPUs")

	db, err := store.Open(ctx, path)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	g := &goals{}
	srv := measureStartUp(os.Stdout, *scanner, path, g)
	defer srv.stop()
	measureExports(os.Stdout, srv, g)
	load := func(url, header string, threads, conns int) wrk.Result {
		r, err := wrk.Run(*wrkPath, url, wrk.Load{Threads: threads, Conns: conns, Duration: *dur, Header: header})
		if err != nil {
			log.Fatal(err)
		}
		return r
	}
	measureRoutes(ctx, os.Stdout, db, srv, *nModels, *misses, *dur, load, g)
	measureUpsert(ctx, os.Stdout, db, *nModels, g)
	fmt.Println("load:", loadAvg())
	if g.failed && *strict {
		os.Exit(1)
	}
}

// settleWAL copies back into the database at path the WAL that a run
// killed before its Close left (a clean Close leaves none), so that no
// measurement pays for it: opening and closing the store does.
func settleWAL(ctx context.Context, path string) error {
	db, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	return db.Close()
}

// goals reports each measurement against its goal and remembers a miss.
type goals struct{ failed bool }

func (g *goals) report(name string, ok bool) string {
	if ok {
		return name + ": ok"
	}
	g.failed = true
	return name + ": MISSED"
}

// measureStartUp starts the server three times and reports the median
// start-up; the last server stays for the rest.
func measureStartUp(w io.Writer, scanner, path string, g *goals) *server {
	var starts []time.Duration
	var srv *server
	for range 3 {
		if srv != nil {
			srv.stop()
		}
		srv = startServer(scanner, path)
		starts = append(starts, srv.startUp)
	}
	slices.Sort(starts)
	fmt.Fprintf(w, "\nstart-up (scanner serve, exec to first /readyz 200), median of 3: %s  [%s]\n",
		wrk.Dur(starts[1]), g.report("goal < 200ms", starts[1] < goalStartUp))

	return srv
}

// measureExports runs concurrent exports on the fresh server: its peak
// memory before and after.
func measureExports(w io.Writer, srv *server, g *goals) {
	exportRise, exportTime, exportBytes := exports(w, srv)
	fmt.Fprintf(w, "%d concurrent /export.csv: peak RSS %s → %s (rise %s), each %s for %.1f MB  [%s]\n", exportsAtOnce,
		fmtMB(exportRise[0]), fmtMB(exportRise[1]), fmtMB(exportRise[1]-exportRise[0]), wrk.Dur(exportTime),
		float64(exportBytes)/1e6, g.report("goal rise < 100 MB", exportRise[1]-exportRise[0] < goalExportRise))

}

// measureRoutes times every route on a cache miss and cached (load: wrk,
// 1 and 16 clients, for dur) beside a minimal fiber handler in this process.
func measureRoutes(ctx context.Context, out io.Writer, db *store.SQLite, srv *server, nModels, misses int, dur time.Duration,
	load func(url, header string, threads, conns int) wrk.Result, g *goals) {
	minimal, bare := benchserve.Minimal()
	defer bare.Shutdown()

	routes, err := pickRoutes(srv.base, nModels)
	if err != nil {
		log.Fatal(err)
	}
	toggle := toggler(ctx, db)
	fmt.Fprintf(out, "\nroutes: on a cache miss (the first request after a write; %d each, 1 client) and cached (wrk %s, 1 and 16 clients)\n", misses, dur)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "route\tmiss p50\tmiss p99\tp50 c=1\tp99 c=1\tp50 c=16\tp99 c=16\treq/s c=16\tgoal\t")
	// The minimal handler is timed with each header a route is timed
	// with, so that a ratio compares like requests.
	minimals := map[string]wrk.Result{}
	for _, h := range []string{"", browserEncoding} {
		min1, min16 := load(minimal+"/", h, 1, 1), load(minimal+"/", h, 2, 16)
		minimals[h] = min1
		name := "minimal fiber handler"
		if h != "" {
			name += " (" + h + ")"
		}
		fmt.Fprintf(w, "%s\t\t\t%s\t%s\t%s\t%s\t%.0f\t\t\n", name, wrk.Dur(min1.P50), wrk.Dur(min1.P99),
			wrk.Dur(min16.P50), wrk.Dur(min16.P99), min16.RPS)
	}
	for _, r := range routes {
		p50, p99 := missTimes(r.url, misses, toggle)
		c1, c16 := load(r.url, r.header, 1, 1), load(r.url, r.header, 2, 16)
		goal := routeGoal(g, r, p50, c1, c16, minimals[r.header])
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t\n", r.name, wrk.Dur(p50), wrk.Dur(p99), wrk.Dur(c1.P50),
			wrk.Dur(c1.P99), wrk.Dur(c16.P50), wrk.Dur(c16.P99), c16.RPS, goal)
	}
	w.Flush()

}

// routeGoal is a route's verdicts: its median on a cache miss (p50), its
// cached median with one client (c1) beside the minimal handler's where
// r.ratio says so, and its wrk runs' failed requests, each a miss.
func routeGoal(g *goals, r route, p50 time.Duration, c1, c16, minimal wrk.Result) string {
	goal := g.report("miss p50 < 50ms", p50 < goalMiss)
	ratio := float64(c1.P50) / float64(minimal.P50)
	switch r.ratio {
	case ratioGoal:
		goal += "; " + g.report(fmt.Sprintf("cached p50 %.1f× minimal ≤ 3×", ratio), ratio <= goalTableRatio)
	case ratioShown:
		goal += fmt.Sprintf("; cached p50 %.1f× minimal", ratio)
	}
	if c1.Errors != "" || c16.Errors != "" {
		goal += " (errors: " + strings.TrimSpace(c1.Errors+" "+c16.Errors) + ")"
		g.failed = true
	}
	return goal
}

// measureUpsert times a listing of every model, a tenth with new
// downloads, then putting them back.
func measureUpsert(ctx context.Context, w io.Writer, db *store.SQLite, nModels int, g *goals) {
	changed, back := upserts(ctx, db)
	fmt.Fprintf(w, "\nlisting upsert of %d models, %d with new downloads: %s (CPU %s), and putting them back: %s (CPU %s)  [%s]\n",
		nModels, nModels/changedFraction, wrk.Dur(changed.wall), wrk.Dur(changed.cpu), wrk.Dur(back.wall), wrk.Dur(back.cpu),
		g.report("goal < 5s", max(changed.wall, back.wall) < goalUpsert))
}

// dbPath is the cached database's file in dir (default
// $SCANNER_CACHE_HOME/bench): its name carries a hash of what makes it (the
// migrations, the generator, the size), read from repo, the repository's
// root.
func dbPath(repo fs.FS, dir string, nModels, nRuntimes int) (string, error) {
	if dir == "" {
		home := os.Getenv("SCANNER_CACHE_HOME")
		if home == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				return "", err
			}
			home = filepath.Join(base, "torchtpu-scanner")
		}
		dir = filepath.Join(home, "bench")
	}
	h := sha256.New()
	fmt.Fprintf(h, "gen %s models %d runtimes %d\n", genVersion, nModels, nRuntimes)
	files, err := fs.Glob(repo, "store/migrations/*.sql")
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("run from the repository root (store/migrations): %v", err)
	}
	for _, f := range append(files, "store/storetest/storetest.go") {
		b, err := fs.ReadFile(repo, f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return filepath.Join(dir, fmt.Sprintf("scale-%dx%d-%s.db", nModels, nRuntimes, hex.EncodeToString(h.Sum(nil))[:12])), nil
}

// generate makes the database at path: storetest.SeedScale, then a
// readiness for every model (a third need one device of every generation,
// a third more, a third are unknown).
func generate(ctx context.Context, path string, nModels, nResults, nRuntimes int) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Fatal(err)
	}
	tmp := path + ".tmp"
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
	db, err := store.Open(ctx, tmp)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "generating %s: %d models, %d results (once; cached for later runs)\n", path, nModels, nResults)
	last := time.Now()
	ids, err := storetest.SeedScale(ctx, db, nModels, nResults, nRuntimes, func(done int) {
		if progressDue(time.Since(last), done, nResults) {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "  %d/%d results, %s\n", done, nResults, time.Since(start).Round(time.Second))
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	for i, id := range ids {
		r := readiness.Readiness{Hints: []readiness.Hint{}}
		if i%3 != 2 {
			r.MinDevices = map[string]int{}
			for _, g := range readiness.Generations {
				r.MinDevices[g.Name] = 1 + (i%3)*(i%5)
			}
		}
		if err := db.SetReadiness(ctx, store.ReadinessUpdate{ModelID: id, SHA: fmt.Sprintf("%040x", i), Version: readiness.Version, Full: true, Readiness: r}); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "generated in %s\n", time.Since(start).Round(time.Second))
}

// progressDue reports whether generate says how far it is after a batch:
// every 30 s, and when done.
func progressDue(sinceLast time.Duration, done, total int) bool {
	return sinceLast > 30*time.Second || done == total
}

// server is a `scanner serve` process.
type server struct {
	cmd     *exec.Cmd
	base    string
	log     string // its log, removed when it stops
	startUp time.Duration
}

// startServer runs scanner serve on the database and waits for /readyz.
func startServer(bin, path string) *server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// The rate limit off: the bench is one client asking much.
	cmd := exec.Command(bin, "serve", "--db", path, "--no-schedule", "--addr", addr, "--log-format", "json", "--rate-limit", "0")
	cmd.Env = append(os.Environ(), "SCANNER_ADMIN_TOKEN=", "SCANNER_WORKER_TOKEN=")
	// It dies with the bench: a bench that stops on a fatal error
	// (log.Fatal runs no deferred stop) left it serving the database.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	logf, err := os.CreateTemp("", "benchscale-serve-*.log")
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stderr = logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	s := &server{cmd: cmd, base: "http://" + addr, log: logf.Name()}
	client := &http.Client{Timeout: time.Second}
	for time.Since(start) < 60*time.Second {
		resp, err := client.Get(s.base + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.startUp = time.Since(start)
				return s
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	log.Fatal("scanner serve did not get ready in 60 s")
	return nil
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	os.Remove(s.log)
}

// memory reads the process's peak and current resident memory (bytes).
func (s *server) memory() (peak, now int64) {
	m := s.status("VmHWM", "VmRSS")
	return m[0], m[1]
}

// status reads fields of /proc/PID/status given in kB, in bytes.
func (s *server) status(names ...string) []int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		log.Fatal(err)
	}
	out, err := statusFields(b, names...)
	if err != nil {
		log.Fatal(err)
	}
	return out
}

// statusFields reads fields given in kB from a /proc/PID/status file's
// text, in bytes.
func statusFields(b []byte, names ...string) ([]int64, error) {
	var out []int64
	for _, name := range names {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:\s+(\d+) kB`).FindSubmatch(b)
		if m == nil {
			return nil, fmt.Errorf("no %s in /proc/pid/status", name)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		out = append(out, n<<10)
	}
	return out, nil
}

// exports runs exportsAtOnce concurrent exports of the whole table on a
// server that has answered one page: its peak memory before and after,
// the median export's time and one export's size.
func exports(w io.Writer, s *server) (peak [2]int64, median time.Duration, size int64) {
	get(s.base + "/")
	peak[0], _ = s.memory()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		times []time.Duration
	)
	for range exportsAtOnce {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := http.Get(s.base + "/export.csv")
			if err != nil {
				log.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b, _ := os.ReadFile(s.log)
				log.Fatalf("export: %s, %v; the server's log:\n%s", resp.Status, err, b)
			}
			mu.Lock()
			times, size = append(times, time.Since(start)), n
			mu.Unlock()
		}()
	}
	wg.Wait()
	peak[1], _ = s.memory()
	m := s.status("RssAnon", "RssFile")
	fmt.Fprintf(w, "  (after the exports: anonymous %s, file-backed %s)\n", fmtMB(m[0]), fmtMB(m[1]))
	slices.Sort(times)
	return peak, times[len(times)/2], size
}

// route is one URL measured; table marks the table's goal.
type route struct {
	name, url string
	ratio     ratioKind
	// header is a request header wrk sends ("" none): the table is timed
	// as a browser asks for it (gzip accepted) and as wrk does by default.
	header string
}

// ratioKind says whether a route's cached median is put beside the
// minimal handler's, and whether that ratio is a goal.
type ratioKind int

const (
	noRatio ratioKind = iota
	ratioShown
	ratioGoal
)

// pickRoutes lists the public routes, with a popular model and the
// runtimes the server knows: the default comparison (the two newest tpu
// runtimes) and one of the newest with the oldest (whose lists are not
// kept).
func pickRoutes(base string, nModels int) ([]route, error) {
	var rts struct {
		Runtimes []struct {
			Key    string `json:"key"`
			Target string `json:"target"`
		} `json:"runtimes"`
	}
	b, err := fetch(base + "/api/v1/runtimes?target=tpu")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &rts); err != nil || len(rts.Runtimes) < 3 {
		return nil, fmt.Errorf("runtimes: %v (%d, at least 3 wanted)", err, len(rts.Runtimes))
	}
	newest, oldest := rts.Runtimes[0].Key, rts.Runtimes[len(rts.Runtimes)-1].Key
	id := storetest.ModelID(nModels / 3)
	far := "base=" + url.QueryEscape(oldest) + "&head=" + url.QueryEscape(newest)
	return []route{
		{"table / (as browsers ask: gzip)", base + "/", ratioGoal, browserEncoding},
		{"table / (no Accept-Encoding)", base + "/", ratioShown, ""},
		{"table /?status=fail&sort=tested_at", base + "/?status=fail&sort=tested_at", noRatio, ""},
		{"model page", base + "/models/" + id, noRatio, ""},
		{"badge .svg", base + "/badge/" + id + ".svg", noRatio, ""},
		{"badge .json", base + "/badge/" + id + ".json", noRatio, ""},
		{"/api/v1/models?limit=50", base + "/api/v1/models?limit=50", noRatio, ""},
		{"/api/v1/models/{id}", base + "/api/v1/models/" + id, noRatio, ""},
		{"/api/v1/summary", base + "/api/v1/summary", noRatio, ""},
		{"/api/v1/failures", base + "/api/v1/failures", noRatio, ""},
		{"/api/v1/runtimes", base + "/api/v1/runtimes", noRatio, ""},
		{"/runtimes", base + "/runtimes", noRatio, ""},
		{"/compare (newest two)", base + "/compare", noRatio, ""},
		{"/api/v1/compare (newest two)", base + "/api/v1/compare", noRatio, ""},
		{"/api/v1/compare?limit=50", base + "/api/v1/compare?limit=50", noRatio, ""},
		{"/api/v1/compare oldest→newest", base + "/api/v1/compare?" + far, noRatio, ""},
		{"/compare oldest→newest", base + "/compare?" + far, noRatio, ""},
		{"/feed.json", base + "/feed.json", noRatio, ""},
		{"/api/v1/scans", base + "/api/v1/scans", noRatio, ""},
		{"/api/v1/workers", base + "/api/v1/workers", noRatio, ""},
		{"/methodology", base + "/methodology", noRatio, ""},
		{"/api/v1/openapi.json", base + "/api/v1/openapi.json", noRatio, ""},
		{"/metrics", base + "/metrics", noRatio, ""},
		{"/healthz", base + "/healthz", noRatio, ""},
		{"/readyz", base + "/readyz", noRatio, ""},
	}, nil
}

// toggler returns a write that changes the data (one model's downloads,
// moved and put back on alternate calls), so that the server's caches
// start over.
func toggler(ctx context.Context, db *store.SQLite) func() {
	id := storetest.ModelID(3)
	m, err := db.GetModel(ctx, id, "")
	if err != nil {
		log.Fatal(err)
	}
	up := storetest.UpsertOf(m)
	n := 0
	return func() {
		n++
		u := up
		if n%2 == 1 {
			u.Downloads++
		}
		if err := db.UpsertModels(ctx, []store.ModelUpsert{u}); err != nil {
			log.Fatal(err)
		}
	}
}

// missTimes times url's first request after a write, n times: the median
// and the 99th percentile (the nearest rank). The write is this process's,
// another to the server, which sees it within store.ForeignWritesSeenWithin:
// each request waits that long after its write, so that it is a miss.
func missTimes(url string, n int, write func()) (p50, p99 time.Duration) {
	var times []time.Duration
	for range n {
		write()
		time.Sleep(store.ForeignWritesSeenWithin + 20*time.Millisecond)
		start := time.Now()
		get(url)
		times = append(times, time.Since(start))
	}
	write() // an even number of writes: the data as it was
	if n%2 == 0 {
		write()
	}
	slices.Sort(times)
	return nearestRank(times, 0.5), nearestRank(times, 0.99)
}

// nearestRank is the p-th percentile (0 < p ≤ 1) of sorted times by the
// nearest rank: the smallest time that p of them are at most.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	return sorted[int(math.Ceil(p*float64(len(sorted))))-1]
}

// get returns url's body, failing on anything but 200.
func get(url string) []byte {
	b, err := fetch(url)
	if err != nil {
		log.Fatal(err)
	}
	return b
}

// fetch returns url's body; anything but 200 is an error.
func fetch(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s %v %.200s", url, resp.Status, err, b)
	}
	return b, nil
}

// timing is a wall time and the CPU time this process spent in it.
type timing struct{ wall, cpu time.Duration }

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		log.Fatal(err)
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// upserts times a listing of every model (most downloaded first), every
// changedFraction-th with one more download, and the listing that puts
// them back.
func upserts(ctx context.Context, db *store.SQLite) (changed, back timing) {
	listing, err := storetest.Listing(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	return upsertsWith(ctx, db.UpsertModels, listing)
}

// upsertsWith times upsert of listing with every changedFraction-th model
// one download more, then of listing as it is.
func upsertsWith(ctx context.Context, upsert func(context.Context, []store.ModelUpsert) error, listing []store.ModelUpsert) (changed, back timing) {
	moved := slices.Clone(listing)
	for i := range moved {
		if i%changedFraction == 0 {
			moved[i].Downloads++
		}
	}
	timed := func(ups []store.ModelUpsert) timing {
		cpu, start := cpuTime(), time.Now()
		if err := upsert(ctx, ups); err != nil {
			log.Fatal(err)
		}
		return timing{time.Since(start), cpuTime() - cpu}
	}
	return timed(moved), timed(listing)
}

// loadAvg is the machine's load average (/proc/loadavg), which these
// shared machines make worth saying beside every figure.
func loadAvg() string { return loadAvgOf("/proc/loadavg") }

// loadAvgOf is loadAvg read from path, "unknown" when it cannot be read.
func loadAvgOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return "load average " + strings.Join(f[:3], ", ")
}

func fmtMB(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }
