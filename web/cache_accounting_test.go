package web

import (
	"fmt"
	"html/template"
	"slices"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/badge"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

// The caches that keep rendered bytes count exactly what they hold: an
// entry's size is the bytes of its value and of the key strings it keeps,
// plus the cache's fixed overhead per entry. maxBytes bounds the memory
// held only if no kept byte goes uncounted (and none is counted twice).
func TestByteCachesCountWhatTheyHold(t *testing.T) {
	ts := twoRuntimes(t)
	for _, path := range []string{
		"/badge/fixed/model.svg?label=tpu%20ready&style=flat-square",
		"/badge/broken/model.json?label=ready%20on%20tpu",
		"/badge/steady/model.svg", // no label: nothing kept for it
		"/api/v1/models?limit=2",
		"/api/v1/models?sort=likes",
		"/?limit=3",
		"/?q=model&sort=id",
		"/compare",
		"/compare?base=" + keyV1 + "&head=" + keyV2,
	} {
		if r := ts.get(t, path); r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	overhead := entryOverhead()

	checkEntrySizes(t, "badges", ts.badges.Cache(), func(k badge.Key, v badge.Rendered) int {
		return len(v.Body) + len(v.ETag) + len(k.Raw) + len(k.Label)
	}, overhead, 3)
	checkEntrySizes(t, "api lists", ts.api.Cache(), func(k string, v cached.Body) int { return len(k) + len(v.Raw()) + len(v.Gzip()) }, overhead, 2)
	tableBodies, tablePages, comparePages := ts.pages.Caches()
	checkEntrySizes(t, "table bodies", tableBodies, func(k string, v template.HTML) int { return len(k) + len(v) }, overhead, 2)
	checkEntrySizes(t, "compare pages", comparePages, func(k string, v cached.Body) int { return len(k) + len(v.Raw()) + len(v.Gzip()) }, overhead, 1)
	checkEntrySizes(t, "table pages", tablePages, func(k string, v cached.Body) int { return len(k) + len(v.Raw()) + len(v.Gzip()) }, overhead, 2)
	if r := ts.get(t, "/feed.json"); r.status != 200 {
		t.Fatalf("feed: %d", r.status)
	}
	checkEntrySizes(t, "feeds", ts.feeds.Cache(), func(k string, v cached.Body) int { return len(k) + len(v.Raw()) + len(v.Gzip()) }, overhead, 1)
}

// entryOverhead is what a cache adds to a caller's estimate for each
// entry: the size it records for a value put with size 0.
func entryOverhead() int {
	c := cached.Map[string, int]{MaxBytes: 1 << 20}
	c.Put("", time.Time{}, 0, 0)
	return c.Bytes()
}

// checkEntrySizes checks that each entry of c (at least min of them) is
// counted as held(key, value) bytes plus the per-entry overhead, and that
// the cache's total is the sum of its entries.
func checkEntrySizes[K comparable, V any](t *testing.T, name string, c *cached.Map[K, V], held func(K, V) int, overhead, min int) {
	t.Helper()
	if c.Len() < min {
		t.Errorf("%s: %d entries cached, want at least %d", name, c.Len(), min)
	}
	total := 0
	c.Range(func(k K, v V, size int) bool {
		if want := held(k, v) + overhead; size != want {
			t.Errorf("%s: entry %v counted as %d bytes, holds %d", name, k, size, want)
		}
		total += size
		return true
	})
	if c.Bytes() != total {
		t.Errorf("%s: total %d, entries sum to %d", name, c.Bytes(), total)
	}
}

// A cache key built from a request's query must be the cache's own copy:
// fiber's strings point into buffers that later requests overwrite, and a
// key changed under the map is never found again (every request a miss) or,
// worse, answers for another request (a cpu summary served as tpu's).
func TestCacheKeysOutliveTheirRequest(t *testing.T) {
	ts := twoRuntimes(t)
	for _, path := range []string{"/?target=cpu", "/api/v1/runtimes?target=cpu", "/badge/fixed/model.svg?target=cpu&style=flat-square&label=abc"} {
		ts.get(t, path)
		// Later requests reuse the buffers.
		for range 3 {
			for _, other := range []string{"/?target=tpu", "/api/v1/runtimes?target=tpu", "/badge/fixed/model.svg?target=tpu&style=xxxxxxxxxxxxx&label=xyz"} {
				if r := ts.get(t, other); r.status != 200 {
					t.Fatalf("%s: %d", other, r.status)
				}
			}
		}
	}
	// The headline reads each target's summary (data.NewHeadline): cuda's too.
	if got := keysOf(&ts.data.Caches.Summaries); !slices.Equal(got, []string{"cpu", "cuda", "tpu"}) {
		t.Errorf("summary keys %q, want cpu, cuda and tpu", got)
	}
	if got := keysOf(&ts.data.Caches.Runtimes); !slices.Contains(got, "cpu") || !slices.Contains(got, "tpu") {
		t.Errorf("runtimes keys %q, want cpu and tpu among them", got)
	}
	var badges []string
	ts.badges.Cache().Range(func(k badge.Key, _ badge.Rendered, _ int) bool {
		badges = append(badges, fmt.Sprintf("%s %s %s %s %s", k.Kind, k.Raw, k.Target, k.Style, k.Label))
		return true
	})
	slices.Sort(badges)
	if want := []string{"svg fixed/model.svg cpu flat-square abc", "svg fixed/model.svg tpu flat xyz"}; !slices.Equal(badges, want) {
		t.Errorf("badge keys %q, want %q", badges, want)
	}
}

// The caches of decoded data count an estimate: the bytes of the key plus a
// fixed cost for each item held (a model of a page, a model in one of a
// comparison's lists). Whatever that cost is, it is the same for every
// item, so that an entry counts in proportion to what it holds.
func TestEstimatedCachesCountTheKeyAndEachItem(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ids := []string{"f1/model", "f2/model", "s1/model", "g1/model", "n1/model", "n2/model", "n3/model"}
	for i, id := range ids {
		ts.upsert(t, store.ModelUpsert{ID: id, Downloads: int64(1000 - i)})
	}
	at := func(r compat.Result, rt compat.Runtime, hours int) compat.Result {
		r.Runtime, r.TestedAt = rt, testTime.Add(time.Duration(hours)*time.Hour)
		return r
	}
	fail, pass := failOn("tpu", testTime, "aten::x"), passOn("tpu", testTime, 10)
	// From v1 to v2: f1 and f2 fixed, g1 regressed, s1 still failing, n1-n3 new.
	for id, r := range map[string]compat.Result{"f1/model": fail, "f2/model": fail, "s1/model": fail, "g1/model": pass} {
		ts.record(t, id, at(r, rtV1, -48))
	}
	for id, r := range map[string]compat.Result{"f1/model": pass, "f2/model": pass, "s1/model": fail, "g1/model": fail,
		"n1/model": pass, "n2/model": pass, "n3/model": fail} {
		ts.record(t, id, at(r, rtV2, -1))
	}
	for _, path := range []string{
		"/", "/?limit=3", "/?q=f", "/?q=nothing-matches",
		"/api/v1/compare?base=" + keyV1 + "&head=" + keyV2,
		"/api/v1/compare?base=" + keyV2 + "&head=" + keyV1,
	} {
		if r := ts.get(t, path); r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	overhead := entryOverhead()
	perItem(t, "list pages", &ts.data.Caches.Lists, func(p data.ListPage) int { return len(p.Models) }, overhead, []int{0, 2, 3, 7})
	lists := func(c *data.Comparison) []int {
		r := c.Result
		return []int{len(r.Fixed), len(r.Regressed), len(r.New), len(r.StillFailing)}
	}
	var shapes [][]int
	ts.data.Caches.Comparisons.Range(func(_ string, v *data.Comparison, _ int) bool {
		shapes = append(shapes, lists(v))
		return true
	})
	slices.SortFunc(shapes, slices.Compare)
	if want := [][]int{{1, 2, 0, 1}, {2, 1, 3, 1}}; !slices.EqualFunc(shapes, want, slices.Equal) {
		t.Fatalf("comparisons (fixed, regressed, new, still failing) %v, want %v", shapes, want)
	}
	perItem(t, "comparisons", &ts.data.Caches.Comparisons, func(c *data.Comparison) int {
		n := 0
		for _, l := range lists(c) {
			n += l
		}
		return n
	}, overhead, []int{4, 7})
}

// perItem checks that every entry of c counts the overhead, its key's bytes
// and one same cost per item (count of them), and that the entries held
// counts items as wanted (so that the cost is seen over several counts).
func perItem[V any](t *testing.T, name string, c *cached.Map[string, V], count func(V) int, overhead int, want []int) {
	t.Helper()
	var counts []int
	cost := 0
	c.Range(func(k string, v V, size int) bool {
		n, rest := count(v), size-overhead-len(k)
		counts = append(counts, n)
		switch {
		case n == 0 && rest != 0:
			t.Errorf("%s: %q holds nothing but counts %d bytes beyond its key", name, k, rest)
		case n == 0:
		case rest <= 0 || rest%n != 0:
			t.Errorf("%s: %q holds %d items but counts %d bytes beyond its key: not a cost per item", name, k, n, rest)
		case cost == 0:
			cost = rest / n
		case rest/n != cost:
			t.Errorf("%s: %q counts %d bytes per item, another entry %d", name, k, rest/n, cost)
		}
		return true
	})
	slices.Sort(counts)
	if !slices.Equal(counts, want) {
		t.Errorf("%s: entries hold %v items, want %v", name, counts, want)
	}
}

// keysOf is the keys c holds, sorted.
func keysOf[V any](c *cached.Map[string, V]) []string {
	var keys []string
	c.Range(func(k string, _ V, _ int) bool {
		keys = append(keys, k)
		return true
	})
	slices.Sort(keys)
	return keys
}
