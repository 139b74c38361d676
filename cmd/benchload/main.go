// Command benchload measures the web server under load with wrk: badge, API
// list and table throughput and latency against a minimal fiber handler in
// the same run, over a database of 10 000 models and 100 000 results
// (storetest.Seed), on loopback.
//
//	go run ./cmd/benchload [-models 10000] [-results 100000] [-d 5s] [-c 32] [-db path]
//
// It prints a table that marks each target as ok or MISSED: badge ≥ 0.7×
// the minimal handler's requests per second under load; API list and table
// median < 10 ms for one client. With -strict it exits 1 when a target is
// missed or a request failed. -db keeps the seeded database between runs
// (seeding takes a while).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/cmd/internal/benchserve"
	"github.com/google-pytorch/torchtpu-scanner/cmd/internal/wrk"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// result is one endpoint's wrk run.
type result struct {
	name string
	wrk.Result
}

func main() {
	var (
		nModels  = flag.Int("models", 10000, "models to seed")
		nResults = flag.Int("results", 100000, "results to seed")
		nRuntime = flag.Int("runtimes", 4, "torch_tpu releases the results are spread over (the runtimes charts)")
		dur      = flag.Duration("d", 5*time.Second, "duration of each wrk run")
		conns    = flag.Int("c", 32, "wrk connections")
		threads  = flag.Int("t", 2, "wrk threads")
		dbPath   = flag.String("db", "", "database file to reuse or create (default: a temporary file)")
		wrkPath  = flag.String("wrk", "wrk", "the wrk binary")
		strict   = flag.Bool("strict", false, "exit 1 when a target is missed")
	)
	flag.Parse()
	if _, err := exec.LookPath(*wrkPath); err != nil {
		log.Fatalf("benchload needs wrk (Debian: apt-get install wrk): %v", err)
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "benchload")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	path := *dbPath
	if path == "" {
		path = filepath.Join(tmp, "scanner.db")
	}
	db := openSeeded(ctx, path, *nModels, *nResults, *nRuntime)
	defer db.Close()

	// The server under test, as `scanner serve` runs it (rate limit off:
	// wrk is one client).
	srv, err := web.New(web.Config{Store: db, Metrics: metrics.NewRegistry(), APIRate: -1,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		log.Fatal(err)
	}
	base := benchserve.Serve(srv.Listen)
	// The baseline: a bare fiber app with one handler.
	minimal, bare := benchserve.Minimal()

	script := badgeScript(tmp, *nModels)

	run := func(name, url, script string, threads, conns int) result {
		r, err := wrk.Run(*wrkPath, url, wrk.Load{Threads: threads, Conns: conns, Duration: *dur, Script: script})
		if err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		return result{name, r}
	}
	// Warm up caches and connections.
	run("warm-up", base+"/", script, *threads, *conns)

	endpoints := []endpoint{
		{"minimal fiber handler", minimal + "/", script, false}, // same Lua script: same wrk cost
		{"badge /badge/{id}.svg (1000 ids)", base + "/", script, false},
		{"API /api/v1/models?limit=50", base + "/api/v1/models?limit=50", "", true},
		{"API ?status=fail&sort=tokens_per_s", base + "/api/v1/models?status=fail&sort=tokens_per_s&limit=50", "", true},
		{"table GET /", base + "/", "", true},
		{"table GET /?status=pass&sort=tested_at", base + "/?status=pass&sort=tested_at", "", true},
		{"runtimes GET /runtimes (chart)", base + "/runtimes", "", true},
		{"compare GET /compare (newest two)", base + "/compare", "", true},
		{"model page with charts", base + "/models/" + storetest.ModelID(1), "", true},
	}
	rows := make([]row, len(endpoints))
	for i, e := range endpoints {
		rows[i].load = run(e.name, e.url, e.script, *threads, *conns)
		rows[i].single = run(e.name, e.url, e.script, 1, 1)
	}

	failed := report(os.Stdout, endpoints, rows, *conns)
	fmt.Println()
	for _, p := range []string{"/", "/runtimes", "/compare"} {
		fmt.Printf("GET %s right after a write (cache miss, median of 5): %s\n", p, wrk.Dur(afterWrite(ctx, db, base+p)))
	}
	fmt.Printf("\n%d models, %d results; wrk -t%d -c%d and -t1 -c1, %s each, on loopback; %d CPUs\n",
		*nModels, *nResults, *threads, *conns, dur, runtime.NumCPU())

	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	_ = bare.ShutdownWithContext(sctx)
	if failed && *strict {
		os.Exit(1)
	}
}

// afterWrite times url's first request after a change to the data (which
// empties every cache that depends on it), five times, and returns the median.
func afterWrite(ctx context.Context, db *store.SQLite, url string) time.Duration {
	var times []time.Duration
	for i := range 5 {
		up := store.ModelUpsert{ID: storetest.ModelID(3), Task: "text-generation", Library: "transformers", Downloads: int64(1_000_000 + i)}
		if err := db.UpsertModels(ctx, []store.ModelUpsert{up}); err != nil {
			log.Fatal(err)
		}
		start := time.Now()
		resp, err := http.Get(url)
		if err != nil {
			log.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			log.Fatalf("GET %s after a write: %s", url, resp.Status)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	return times[len(times)/2]
}

// openSeeded opens the database at path, seeding it with nModels models and
// nResults results over nRuntimes runtimes when it is empty.
func openSeeded(ctx context.Context, path string, nModels, nResults, nRuntimes int) *store.SQLite {
	db, err := store.Open(ctx, path)
	if err != nil {
		log.Fatal(err)
	}
	sum, err := db.Summary(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	if sum.Models == 0 {
		start := time.Now()
		if _, err := storetest.SeedRuntimes(ctx, db, nModels, nResults, nRuntimes); err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "seeded %d models, %d results in %s\n", nModels, nResults, time.Since(start).Round(time.Millisecond))
	} else {
		fmt.Fprintf(os.Stderr, "reusing %s (%d models)\n", path, sum.Models)
	}
	return db
}

// badgeScript writes the wrk script that asks for the badges of 1000
// popular models at random (cached after first use) and returns its path.
func badgeScript(dir string, nModels int) string {
	var paths []string
	for i := 0; i < 1000 && i < nModels; i++ {
		paths = append(paths, "/badge/"+storetest.ModelID(rand.IntN(nModels))+".svg")
	}
	script := filepath.Join(dir, "badges.lua")
	var lua strings.Builder
	lua.WriteString("local paths = {")
	for _, p := range paths {
		lua.WriteString(strconv.Quote(p) + ",")
	}
	lua.WriteString("}\nrequest = function()\n  return wrk.format(nil, paths[math.random(#paths)])\nend\n")
	if err := os.WriteFile(script, []byte(lua.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	return script
}

// endpoint is one URL wrk loads; latencyTarget: its single-client median
// must stay under 10 ms.
type endpoint struct {
	name, url, script string
	latencyTarget     bool
}

// row is an endpoint's wrk results under load and with one client.
type row struct{ load, single result }

// report prints the table of rows (rows[0] is the minimal handler, rows[1]
// the badges) with each target's verdict; it reports whether one was missed
// or any request failed.
func report(out io.Writer, endpoints []endpoint, rows []row, conns int) bool {
	minRPS := rows[0].load.RPS
	failed := false
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "endpoint\treq/s (c=%d)\t× minimal\tp50\tp99\tp50 (1 client)\tp99 (1 client)\ttarget\t\n", conns)
	for i, r := range rows {
		target, ok := "", true
		switch {
		case i == 1:
			target = "req/s ≥ 0.70× minimal"
			ok = r.load.RPS >= 0.7*minRPS
		case endpoints[i].latencyTarget:
			target = "p50 (1 client) < 10ms"
			ok = r.single.P50 < 10*time.Millisecond
		}
		if target != "" {
			if ok {
				target += ": ok"
			} else {
				target += ": MISSED"
				failed = true
			}
		}
		errs := strings.TrimSpace(r.load.Errors + " " + r.single.Errors)
		if errs != "" {
			target += " (errors: " + errs + ")"
			failed = true
		}
		fmt.Fprintf(w, "%s\t%.0f\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n", r.load.name, r.load.RPS, r.load.RPS/minRPS,
			wrk.Dur(r.load.P50), wrk.Dur(r.load.P99), wrk.Dur(r.single.P50), wrk.Dur(r.single.P99), target)
	}
	w.Flush()
	return failed
}
