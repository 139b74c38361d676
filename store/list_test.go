package store_test

import (
	"cmp"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

func ids(ms []compat.Model) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestListModelsFilters(t *testing.T) {
	s := storetest.MustOpen(t)
	if err := s.UpsertModels(ctx, []store.ModelUpsert{
		{ID: "Qwen/Qwen3-0.6B", Task: "text-generation", Downloads: 500},
		{ID: "qwen/other", Task: "fill-mask", Downloads: 400},
		{ID: "google/bert_base", Task: "fill-mask", Downloads: 300},
		{ID: "gpt2", Task: "text-generation", Downloads: 200},
		{ID: "acme/100%-real", Task: "text-generation", Downloads: 100},
	}); err != nil {
		t.Fatal(err)
	}
	record(t, s, "Qwen/Qwen3-0.6B", result("tpu", "pass", at(1)))
	record(t, s, "qwen/other", result("tpu", "fail", at(2)))
	record(t, s, "qwen/other", result("cpu", "pass", at(3)))
	record(t, s, "google/bert_base", result("cpu", "oom", at(4)))

	tests := []struct {
		name string
		q    store.ModelQuery
		want []string
	}{
		{"all by downloads", store.ModelQuery{}, []string{"Qwen/Qwen3-0.6B", "qwen/other", "google/bert_base", "gpt2", "acme/100%-real"}},
		{"q any case", store.ModelQuery{Q: "QWEN"}, []string{"Qwen/Qwen3-0.6B", "qwen/other"}},
		{"q underscore is literal", store.ModelQuery{Q: "t_b"}, []string{"google/bert_base"}},
		{"q percent is literal", store.ModelQuery{Q: "0%"}, []string{"acme/100%-real"}},
		{"task", store.ModelQuery{Task: "fill-mask"}, []string{"qwen/other", "google/bert_base"}},
		{"org any case", store.ModelQuery{Org: "QWEN"}, []string{"Qwen/Qwen3-0.6B", "qwen/other"}},
		{"org of legacy id", store.ModelQuery{Org: "gpt2"}, []string{}},
		{"status on tpu", store.ModelQuery{Target: "tpu", Status: []compat.Status{"fail"}}, []string{"qwen/other"}},
		{"untested on tpu", store.ModelQuery{Target: "tpu", Status: []compat.Status{"untested"}},
			[]string{"google/bert_base", "gpt2", "acme/100%-real"}},
		{"pass or untested on cpu", store.ModelQuery{Target: "cpu", Status: []compat.Status{"pass", "untested"}},
			[]string{"Qwen/Qwen3-0.6B", "qwen/other", "gpt2", "acme/100%-real"}},
		{"any target is the newest", store.ModelQuery{Status: []compat.Status{"pass"}}, []string{"Qwen/Qwen3-0.6B", "qwen/other"}},
		{"combined", store.ModelQuery{Q: "e", Task: "fill-mask", Target: "cpu", Status: []compat.Status{"oom"}}, []string{"google/bert_base"}},
		{"id sort", store.ModelQuery{Sort: "id"}, []string{"Qwen/Qwen3-0.6B", "acme/100%-real", "google/bert_base", "gpt2", "qwen/other"}},
		{"downloads ascending", store.ModelQuery{Desc: compat.Ptr(false)}, []string{"acme/100%-real", "gpt2", "google/bert_base", "qwen/other", "Qwen/Qwen3-0.6B"}},
		{"status sort on tpu", store.ModelQuery{Target: "tpu", Sort: "status"}, []string{"Qwen/Qwen3-0.6B", "qwen/other", "google/bert_base", "gpt2", "acme/100%-real"}},
		{"tested_at newest first, untested last", store.ModelQuery{Sort: "tested_at"}, []string{"google/bert_base", "qwen/other", "Qwen/Qwen3-0.6B", "acme/100%-real", "gpt2"}},
		{"tested_at oldest first, untested still last", store.ModelQuery{Sort: "tested_at", Desc: compat.Ptr(false)}, []string{"Qwen/Qwen3-0.6B", "qwen/other", "google/bert_base", "gpt2", "acme/100%-real"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next, err := s.ListModels(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tt.want) || next != "" {
				t.Errorf("got %q (next %q); want %q", ids(got), next, tt.want)
			}
		})
	}
	// The result shown is the target's, and lists leave out the log tail
	// and the continuation.
	withLog := result("cuda", "fail", at(9))
	withLog.LogTail = "long log"
	withLog.Continuation = &compat.Continuation{Prompt: "p", Text: "long text"}
	record(t, s, "gpt2", withLog)
	got, _, err := s.ListModels(ctx, store.ModelQuery{Q: "gpt2", Target: "cuda"})
	if err != nil || len(got) != 1 || got[0].Result == nil || got[0].Result.Status != "fail" || got[0].Result.LogTail != "" ||
		got[0].Result.Continuation != nil {
		t.Errorf("gpt2 on cuda = %+v, %v", got, err)
	}
	if m, err := s.GetModel(ctx, "gpt2", "cuda"); err != nil || m.Result.LogTail != "long log" ||
		m.Result.Continuation == nil || m.Result.Continuation.Text != "long text" {
		t.Errorf("GetModel log tail and continuation = %+v, %v", m.Result, err)
	}
}

func TestListModelsInvalid(t *testing.T) {
	s := storetest.MustOpen(t)
	storetest.MustSeed(t, s, 20, 40)
	_, next, err := s.ListModels(ctx, store.ModelQuery{Limit: 5})
	if err != nil || next == "" {
		t.Fatalf("first page: %q, %v", next, err)
	}
	if !regexp.MustCompile(store.CursorPattern).MatchString(next) {
		t.Errorf("next cursor %q is not in its form %s", next, store.CursorPattern)
	}
	for name, c := range map[string]string{
		"garbage":           "!!!",
		"the old form":      "eyJzIjoiZG93bmxvYWRzIn0",
		"one key":           "5~org/m",
		"a word for a key":  "five~0~org/m",
		"an exponent":       "1e5~0~org/m",
		"a control char":    "1~0~org/\x01m",
		"no id separator":   "1~0",
		"a trailing point":  "1.~0~org/m",
		"a leading plus":    "+1~0~org/m",
		"an empty key":      "~0~org/m",
		"spaces around one": " 1~0~org/m",
	} {
		if _, _, err := s.ListModels(ctx, store.ModelQuery{Cursor: c}); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("%s (%q): %v; want ErrBadCursor", name, c, err)
		}
	}
	// A cursor is a position, not a token: one written by another query
	// (another sort, direction or filter), or by hand, is a page all the
	// same (the rows after it).
	for name, q := range map[string]store.ModelQuery{
		"other sort":             {Cursor: next, Sort: "likes"},
		"other direction":        {Cursor: next, Desc: compat.Ptr(false)},
		"other filter":           {Cursor: next, Task: "fill-mask"},
		"by hand":                {Cursor: "0~0~"},
		"keys past int64":        {Cursor: "99999999999999999999999~-1.5~org/x", Sort: "status"},
		"keys past float64":      {Cursor: strings.Repeat("9", 400) + "~0~a", Sort: "tokens_per_s"},
		"an id no model has":     {Cursor: "12~0~no/such-model ~ here", Sort: "id"},
		"a float for an integer": {Cursor: "1.5~2.25~org", Sort: "tested_at"},
	} {
		if _, _, err := s.ListModels(ctx, q); err != nil {
			t.Errorf("%s: %v; want a page", name, err)
		}
	}
	for name, q := range map[string]store.ModelQuery{
		"sort":   {Sort: "stars"},
		"status": {Status: []compat.Status{"broken"}},
		"target": {Target: "auto"},
	} {
		if _, _, err := s.ListModels(ctx, q); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
	got, _, err := s.ListModels(ctx, store.ModelQuery{Limit: 5000})
	if err != nil || len(got) != 20 {
		t.Errorf("limit above the cap: %d, %v", len(got), err)
	}
}

// less reports the order ListModels promises for sort, in its natural
// direction, with the id ascending as the last key.
func less(sort string) func(a, b compat.Model) int {
	rank := func(m compat.Model) int { return slices.Index(compat.Statuses, m.ModelStatus()) }
	nullsLast := func(a, b compat.Model, v func(r *compat.Result) *float64) (int, bool) {
		var av, bv *float64
		if a.Result != nil {
			av = v(a.Result)
		}
		if b.Result != nil {
			bv = v(b.Result)
		}
		switch {
		case av == nil && bv == nil:
			return 0, true
		case av == nil:
			return 1, false
		case bv == nil:
			return -1, false
		}
		return cmp.Compare(*bv, *av), true
	}
	return func(a, b compat.Model) int {
		c := 0
		switch sort {
		case "downloads":
			c = cmp.Compare(b.Downloads, a.Downloads)
		case "likes":
			c = cmp.Compare(b.Likes, a.Likes)
		case "status":
			c = cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(b.Downloads, a.Downloads))
		case "tested_at":
			c, _ = nullsLast(a, b, func(r *compat.Result) *float64 { return compat.Ptr(float64(r.TestedAt.UnixNano())) })
		case "tokens_per_s":
			c, _ = nullsLast(a, b, func(r *compat.Result) *float64 { return r.Metrics.TokensPerS })
		}
		return cmp.Or(c, strings.Compare(a.ID, b.ID))
	}
}

// TestListModelsCursorWalk walks every sort, both directions, with and
// without filters, at several page sizes: the pages must concatenate to
// the one-page list, which must be in the promised order and hold exactly
// the matching models.
func TestListModelsCursorWalk(t *testing.T) {
	s := storetest.MustOpen(t)
	storetest.MustSeed(t, s, 150, 600)
	everything, _, err := s.ListModels(ctx, store.ModelQuery{Sort: "id", Limit: 1000})
	if err != nil || len(everything) != 150 {
		t.Fatalf("all models: %d, %v", len(everything), err)
	}
	filters := map[string]store.ModelQuery{
		"none":          {},
		"tpu":           {Target: "tpu"},
		"tpu failing":   {Target: "tpu", Status: []compat.Status{"fail", "oom", "untested"}},
		"cpu task":      {Target: "cpu", Task: "fill-mask"},
		"org and query": {Org: "ORG07", Q: "MODEL-00"},
	}
	for fname, f := range filters {
		// Which models match, from GetModel-level data.
		shown, _, err := s.ListModels(ctx, store.ModelQuery{Target: f.Target, Sort: "id", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var match []string
		for _, m := range shown {
			if (f.Task == "" || m.Task == f.Task) &&
				(f.Org == "" || strings.EqualFold(strings.Split(m.ID, "/")[0], f.Org) && strings.Contains(m.ID, "/")) &&
				(f.Q == "" || strings.Contains(strings.ToLower(m.ID), strings.ToLower(f.Q))) &&
				(len(f.Status) == 0 || slices.Contains(f.Status, m.ModelStatus())) {
				match = append(match, m.ID)
			}
		}
		if len(match) == 0 {
			t.Fatalf("%s: no seeded model matches; the walk would prove nothing", fname)
		}
		for _, sort := range []string{"downloads", "likes", "status", "tested_at", "tokens_per_s", "id"} {
			for _, desc := range []*bool{nil, compat.Ptr(true), compat.Ptr(false)} {
				q := f
				q.Sort, q.Desc, q.Limit = sort, desc, 1000
				all, next, err := s.ListModels(ctx, q)
				if err != nil || next != "" {
					t.Fatalf("%s/%s: %v, next %q", fname, sort, err, next)
				}
				name := fname + "/" + sort
				if desc != nil {
					name += map[bool]string{true: "/desc", false: "/asc"}[*desc]
				}
				got := slices.Clone(ids(all))
				slices.Sort(got)
				wantSet := slices.Clone(match)
				slices.Sort(wantSet)
				if !slices.Equal(got, wantSet) {
					t.Errorf("%s: %d models; want %d", name, len(got), len(wantSet))
				}
				order := less(sort)
				if sort == "id" {
					order = func(a, b compat.Model) int { return strings.Compare(a.ID, b.ID) }
				}
				natural := map[string]bool{"downloads": true, "likes": true, "status": false, "tested_at": true, "tokens_per_s": true, "id": false}[sort]
				if desc != nil && *desc != natural {
					// Reversed: everything flips except "no value last".
					base := order
					order = func(a, b compat.Model) int {
						if sort == "tested_at" || sort == "tokens_per_s" {
							an, bn := a.Result == nil || (sort == "tokens_per_s" && a.Result.Metrics.TokensPerS == nil),
								b.Result == nil || (sort == "tokens_per_s" && b.Result.Metrics.TokensPerS == nil)
							if an != bn {
								return map[bool]int{true: 1, false: -1}[an]
							}
						}
						return -base(a, b)
					}
				}
				if !slices.IsSortedFunc(all, order) {
					t.Errorf("%s: not in order: %q", name, ids(all)[:min(10, len(all))])
				}
				for _, size := range []int{4, 50} {
					var walked []string
					q.Limit, q.Cursor = size, ""
					for pages := 0; ; pages++ {
						page, next, err := s.ListModels(ctx, q)
						if err != nil {
							t.Fatalf("%s size %d page %d: %v", name, size, pages, err)
						}
						if len(page) > size || (next != "" && len(page) != size) {
							t.Fatalf("%s size %d: page of %d, next %q", name, size, len(page), next)
						}
						walked = append(walked, ids(page)...)
						if next == "" {
							break
						}
						q.Cursor = next
					}
					if !slices.Equal(walked, ids(all)) {
						t.Errorf("%s size %d: walk differs from the full list (%d vs %d)", name, size, len(walked), len(all))
					}
				}
			}
		}
	}
}

// TestQueryPlans checks that the queries use indexes: no full scan of
// results or events, and the default list order straight from an index.
func TestQueryPlans(t *testing.T) {
	s := storetest.MustOpen(t)
	storetest.MustSeed(t, s, 100, 300)
	named, err := s.ExplainNamed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Sorting a handful of rows is fine: a model's aliases, the ≤3 ids
	// resolve considers, a model's ≤3 current results, the failure groups.
	smallSorts := []string{"aliases", "resolve", "current results", "failure groups"}
	for name, plan := range named {
		for _, line := range plan {
			if fullScan(line) && name != "list scans" { // scans: newest by rowid, LIMIT
				t.Errorf("%s: full scan: %q", name, plan)
			}
			if strings.Contains(line, "TEMP B-TREE") && !slices.Contains(smallSorts, name) {
				t.Errorf("%s: sorts in a temp b-tree: %q", name, plan)
			}
		}
	}
	for name, q := range map[string]store.ModelQuery{
		"default":      {},
		"default tpu":  {Target: "tpu"},
		"likes":        {Sort: "likes"},
		"id":           {Sort: "id", Desc: compat.Ptr(true)},
		"task":         {Task: "fill-mask"},
		"org":          {Org: "org01"},
		"reversed":     {Desc: compat.Ptr(false)},
		"with a query": {Q: "model"},
		"status":       {Target: "tpu", Status: []compat.Status{"fail"}},
		"status sort":  {Target: "tpu", Sort: "status", Desc: compat.Ptr(true)},
		"tested":       {Target: "cpu", Sort: "tested_at"},
		"tested asc":   {Target: "cpu", Sort: "tested_at", Desc: compat.Ptr(false)},
		"tokens":       {Sort: "tokens_per_s"},
		"tokens asc":   {Sort: "tokens_per_s", Desc: compat.Ptr(false), Cursor: ""},
	} {
		plan, err := s.ExplainList(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(plan, "\n")
		// Every order is an index's: the page is an index walk that
		// stops after limit+1 rows, never a sort of all matching models.
		if strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("%s: sorts:\n%s", name, joined)
		}
		for _, line := range plan {
			if fullScan(line) && line != "SCAN page" {
				t.Errorf("%s: full scan %q:\n%s", name, line, joined)
			}
		}
	}
}

// fullScan reports a plan line that reads a whole table without an index
// (a list of constants, or the JSON of one row, are no table).
func fullScan(line string) bool {
	return strings.HasPrefix(line, "SCAN ") && !strings.Contains(line, " USING ") && !strings.HasPrefix(line, "SCAN (subquery") &&
		!strings.HasSuffix(line, "VALUES CLAUSE") && !strings.Contains(line, "VIRTUAL TABLE")
}

// The benchmark's data set is the web's: 10 000 models, 100 000 results.
var (
	benchOnce  sync.Once
	benchStore *store.SQLite
	benchDir   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchStore != nil {
		benchStore.Close()
		if benchDir != "" {
			os.RemoveAll(benchDir)
		}
	}
	os.Exit(code)
}

// benchSeeded opens the benchmarks' database, seeding it on first use. Set
// STORE_BENCH_DB to a file to keep it between runs (seeding takes a while).
func benchSeeded(b *testing.B) *store.SQLite {
	benchOnce.Do(func() {
		path, keep := os.LookupEnv("STORE_BENCH_DB")
		if !keep {
			var err error
			if benchDir, err = os.MkdirTemp("", "storebench"); err != nil {
				b.Fatal(err)
			}
			path = filepath.Join(benchDir, "scanner.db")
		}
		_, statErr := os.Stat(path)
		s, err := store.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		if !keep || statErr != nil {
			storetest.MustSeed(b, s, 10_000, 100_000)
		}
		benchStore = s
	})
	if benchStore == nil {
		b.Fatal("seeding failed")
	}
	return benchStore
}

// BenchmarkListModels lists pages of 50 from 10 000 models with 100 000 results.
func BenchmarkListModels(b *testing.B) {
	s := benchSeeded(b)
	// A cursor half way through the default order.
	_, mid, err := s.ListModels(ctx, store.ModelQuery{Target: "tpu", Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		q    store.ModelQuery
	}{
		{"downloads", store.ModelQuery{Target: "tpu"}},
		{"downloads/page20", store.ModelQuery{Target: "tpu", Cursor: mid}},
		{"downloads/any-target", store.ModelQuery{}},
		{"likes", store.ModelQuery{Target: "tpu", Sort: "likes"}},
		{"status", store.ModelQuery{Target: "tpu", Sort: "status"}},
		{"tokens_per_s", store.ModelQuery{Target: "tpu", Sort: "tokens_per_s"}},
		{"tested_at", store.ModelQuery{Target: "tpu", Sort: "tested_at"}},
		{"id", store.ModelQuery{Target: "tpu", Sort: "id"}},
		{"filter/status=crash", store.ModelQuery{Target: "tpu", Status: []compat.Status{"crash"}}},
		{"filter/task", store.ModelQuery{Target: "tpu", Task: "fill-mask"}},
		{"filter/org", store.ModelQuery{Target: "tpu", Org: "org07"}},
		{"filter/q", store.ModelQuery{Target: "tpu", Q: "model-012"}},
		{"filter/untested", store.ModelQuery{Target: "tpu", Status: []compat.Status{"untested"}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			loopCPU(b, func() {
				ms, _, err := s.ListModels(ctx, c.q)
				if err != nil || len(ms) == 0 {
					b.Fatal(len(ms), err)
				}
			})
		})
	}
}

// BenchmarkReads times the other reads a page needs on the same data.
func BenchmarkReads(b *testing.B) {
	s := benchSeeded(b)
	id := storetest.ModelID(123)
	cases := map[string]func() error{
		"GetModel":     func() error { _, err := s.GetModel(ctx, id, "tpu"); return err },
		"History":      func() error { _, err := s.History(ctx, id, "", 50); return err },
		"Summary":      func() error { _, err := s.Summary(ctx, "tpu"); return err },
		"Failures":     func() error { _, err := s.Failures(ctx, "tpu", 50); return err },
		"Events":       func() error { _, err := s.Events(ctx, 50); return err },
		"Changed":      func() error { _, err := s.Changed(ctx); return err },
		"LatestResult": func() error { _, err := s.LatestResult(ctx, id, ""); return err },
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		b.Run(name, func(b *testing.B) {
			loopCPU(b, func() {
				if err := cases[name](); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// loopCPU runs f b.N times and also reports the process's CPU time per
// call (cpu-ns/op), which a busy shared machine inflates less than the
// wall time.
func loopCPU(b *testing.B, f func()) {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for b.Loop() {
		f()
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// TestListModelsCursorIsAPosition: a cursor written by hand
// ("<k0>~<k1>~<id>") is the rows after that position in the query's
// order, under its filters, like the cursor the list wrote there.
func TestListModelsCursorIsAPosition(t *testing.T) {
	s := storetest.MustOpen(t)
	storetest.MustSeed(t, s, 30, 60)
	byID, _, err := s.ListModels(ctx, store.ModelQuery{Sort: "id", Limit: 1000})
	if err != nil || len(byID) != 30 {
		t.Fatalf("all: %d, %v", len(byID), err)
	}
	got, _, err := s.ListModels(ctx, store.ModelQuery{Sort: "id", Cursor: "7~-3~" + byID[9].ID, Limit: 1000})
	if err != nil || !slices.Equal(ids(got), ids(byID[10:])) {
		t.Errorf("sort=id after %s: %q, %v; want %q", byID[9].ID, ids(got), err, ids(byID[10:]))
	}
	byDownloads, _, err := s.ListModels(ctx, store.ModelQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	m := byDownloads[12]
	hand := strconv.FormatInt(m.Downloads, 10) + "~0~" + m.ID
	got, _, err = s.ListModels(ctx, store.ModelQuery{Cursor: hand, Limit: 1000})
	if err != nil || !slices.Equal(ids(got), ids(byDownloads[13:])) {
		t.Errorf("downloads after %q: %q, %v; want %q", hand, ids(got), err, ids(byDownloads[13:]))
	}
	// The same position in the other direction: the rows before it, reversed.
	got, _, err = s.ListModels(ctx, store.ModelQuery{Cursor: hand, Desc: compat.Ptr(false), Limit: 1000})
	want := slices.Clone(byDownloads[:12])
	slices.Reverse(want)
	if err != nil || !slices.Equal(ids(got), ids(want)) {
		t.Errorf("ascending from %q: %q, %v; want %q", hand, ids(got), err, ids(want))
	}
	// The page a list's own cursor starts is the one a hand-written one does.
	_, next, err := s.ListModels(ctx, store.ModelQuery{Limit: 13})
	if err != nil || next != hand {
		t.Errorf("next cursor after 13 rows = %q, %v; want %q", next, err, hand)
	}
}
