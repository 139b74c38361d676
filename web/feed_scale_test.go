package web

import (
	"context"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/feeds"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

// TestFeedMissOnAGivenDatabase times /feed.json on a cache miss (the
// first request after a write, as benchscale does) on the database at
// $WEB_SCALE_DB (a copy: it writes, and puts back, one model's downloads).
func TestFeedMissOnAGivenDatabase(t *testing.T) {
	path := os.Getenv("WEB_SCALE_DB")
	if path == "" {
		t.Skip("times a given database (a copy: it writes) only when WEB_SCALE_DB names it")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := New(Config{Store: db, Logger: discard, APIRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := db.GetModel(ctx, storetest.ModelID(3), "")
	if err != nil {
		t.Fatal(err)
	}
	up := storetest.UpsertOf(m)
	h := s.app.Handler()
	write := func(i int) {
		u := up
		if i%2 == 0 {
			u.Downloads++
		}
		if err := db.UpsertModels(ctx, []store.ModelUpsert{u}); err != nil {
			t.Fatal(err)
		}
	}
	// The comparisons the feed reads, as it asks for them.
	rts, err := db.Runtimes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var pairs []store.CompareQuery
	for _, head := range rts {
		if prev, ok := data.Previous(rts, head); ok && len(pairs) < feeds.RuntimeItems {
			pairs = append(pairs, store.CompareQuery{Base: prev.Ref, Head: head.Ref, Limit: feeds.Listed, Lists: feeds.Lists})
		}
	}
	var feed, feedCPU, compares, comparesCPU []time.Duration
	for i := range 42 {
		write(i)
		if i%2 == 1 { // the feed after every other write, its comparisons alone after the others
			var rc fasthttp.RequestCtx
			rc.Request.SetRequestURI("/feed.json")
			start, cpu := time.Now(), cpuTime()
			h(&rc)
			feed = append(feed, time.Since(start))
			feedCPU = append(feedCPU, cpuTime()-cpu)
			if code := rc.Response.StatusCode(); code != 200 {
				t.Fatalf("/feed.json: %d %s", code, rc.Response.Body())
			}
			continue
		}
		start, cpu := time.Now(), cpuTime()
		if _, err := db.Runtimes(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ComparePages(ctx, pairs); err != nil {
			t.Fatal(err)
		}
		compares = append(compares, time.Since(start))
		comparesCPU = append(comparesCPU, cpuTime()-cpu)
	}
	median := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	b, _ := os.ReadFile("/proc/loadavg")
	t.Logf("/feed.json on a miss: median %s (CPU %s) of %d; its %d comparisons and the runtimes alone "+
		"(store.Runtimes, store.ComparePages): median %s (CPU %s) of %d (load %s)",
		median(feed), median(feedCPU), len(feed), len(pairs), median(compares), median(comparesCPU), len(compares), b)
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		panic(err)
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
