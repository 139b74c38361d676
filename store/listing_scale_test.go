package store_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// scaleListing is every model of s as a listing that would leave it as it
// is, most downloaded first (as the Hub lists them).
func scaleListing(t testing.TB, s *store.SQLite) []store.ModelUpsert {
	var listing []store.ModelUpsert
	q := store.ModelQuery{Limit: 1000}
	for {
		ms, next, err := s.ListModels(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			listing = append(listing, upsertOfModel(m))
		}
		if next == "" {
			return listing
		}
		q.Cursor = next
	}
}

func upsertOfModel(m compat.Model) store.ModelUpsert {
	return store.ModelUpsert{ID: m.ID, Task: m.Task, Library: m.Library, Downloads: m.Downloads, Likes: m.Likes,
		Gated: m.Gated, SHA: m.SHA, Tags: m.Tags, LastModified: m.LastModified}
}

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
	listing := scaleListing(t, s)
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
	times := map[bool][]time.Duration{}
	for range rounds {
		for _, batch := range []bool{false, true} {
			restore := store.SetBatchListing(batch)
			for _, ups := range [][]store.ModelUpsert{moved, listing} {
				cpu, start := cpuNow(), time.Now()
				if err := s.UpsertModels(ctx, ups); err != nil {
					t.Fatal(err)
				}
				d := time.Since(start)
				times[batch] = append(times[batch], d)
				t.Logf("batch %v: upsert %s (CPU %s), load %s", batch, d, cpuNow()-cpu, loadAvg())
			}
			restore()
		}
	}
	for _, batch := range []bool{false, true} {
		slices.Sort(times[batch])
		t.Logf("batch %v: median of %d upserts %s", batch, len(times[batch]), times[batch][len(times[batch])/2])
	}
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
