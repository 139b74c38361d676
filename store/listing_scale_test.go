package store_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

func cpuNow() time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		panic(err)
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// TestListingUpsertOnAGivenDatabase times, on the database at
// $STORE_SCALE_DB (a copy: it writes), a listing of every model with a
// tenth's downloads moved, and the listing that puts them back.
func TestListingUpsertOnAGivenDatabase(t *testing.T) {
	path := os.Getenv("STORE_SCALE_DB")
	if path == "" {
		t.Skip("times a given database (a copy: it writes) only when STORE_SCALE_DB names it")
	}
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	listing, err := storetest.Listing(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	moved := slices.Clone(listing)
	for i := range moved {
		if i%10 == 0 {
			moved[i].Downloads++
		}
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("STORE_SCALE_ROUNDS")); err == nil {
		rounds = n
	}
	// The ways: one model at a time, the batch with its commit's
	// checkpoint, the batch committing aside (the checkpointer runs it
	// beside the next upsert). STORE_SCALE_WAYS=batch times the last two,
	// STORE_SCALE_WAYS=aside the last.
	type way struct {
		name         string
		batch, aside bool
	}
	ways := []way{{"one at a time", false, true}, {"batch, checkpoint in the commit", true, false},
		{"batch, checkpoint aside", true, true}}
	switch os.Getenv("STORE_SCALE_WAYS") {
	case "batch":
		ways = ways[1:]
	case "aside": // as a scan writes its listing
		ways = ways[2:]
	}
	times := map[string][]time.Duration{}
	for range rounds {
		for _, w := range ways {
			restore, restoreAside := store.SetBatchListing(w.batch), store.SetCommitAside(w.aside)
			for _, ups := range [][]store.ModelUpsert{moved, listing} {
				cpu, start := cpuNow(), time.Now()
				if err := s.UpsertModels(ctx, ups); err != nil {
					t.Fatal(err)
				}
				d, dcpu := time.Since(start), cpuNow()-cpu
				// The checkpoint a listing committed aside runs after it,
				// beside the scan's probes (a scan's listings are hours
				// apart): timed apart, as the scan would not wait for it.
				cpu, start = cpuNow(), time.Now()
				if err := s.WaitCheckpoint(); err != nil {
					t.Error(err)
				}
				times[w.name] = append(times[w.name], d)
				t.Logf("%s: upsert %s (CPU %s), then its checkpoint %s (CPU %s), load %s", w.name, d, dcpu,
					time.Since(start), cpuNow()-cpu, loadAvg())
			}
			restore()
			restoreAside()
		}
	}
	for _, w := range ways {
		ds := times[w.name]
		slices.Sort(ds)
		t.Logf("%s: median of %d upserts %s", w.name, len(ds), ds[len(ds)/2])
	}
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
