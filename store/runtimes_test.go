package store_test

import (
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compare/comparetest"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// Two releases of torch_tpu on tpu, and a cpu runtime.
var (
	rtOld = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.1.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e"}
	rtNew = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e"}
	rtCPU = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", Transformers: "5.23.0", Harness: "1", Device: "cpu"}
)

func onRuntime(target compat.Target, rt compat.Runtime, status compat.Status, minute int) compat.Result {
	r := result(target, status, at(minute))
	r.Runtime = rt
	if status.HeldAgainstModel() {
		r.Stage = compat.Ptr(compat.StageForward)
	}
	return r
}

// seedRuntimes records: a (1000 downloads) fail on old then pass on new;
// b (900) pass then crash; c (800) pass on both, retested on old; d (700)
// only on new, fail with a signature; e (600) skipped on old; f (500) on cpu.
func seedRuntimes(t *testing.T, s *store.SQLite) {
	upsert(t, s, "o/a", "o/b", "o/c", "o/d", "o/e", "o/f")
	aFail := onRuntime("tpu", rtOld, "fail", 0)
	aFail.FailureClass = compat.Ptr(compat.ClassUnsupportedOp)
	aFail.Signature = compat.Ptr("unsupported_op:aten::x")
	record(t, s, "o/a", aFail)
	record(t, s, "o/b", onRuntime("tpu", rtOld, "pass", 1))
	cFail := onRuntime("tpu", rtOld, "oom", 2) // then passes on a rerun on the same runtime
	cFail.Revision = "rev0"
	record(t, s, "o/c", cFail)
	record(t, s, "o/c", onRuntime("tpu", rtOld, "pass", 3))
	record(t, s, "o/e", onRuntime("tpu", rtOld, "skipped", 4))

	record(t, s, "o/a", onRuntime("tpu", rtNew, "pass", 10))
	bCrash := onRuntime("tpu", rtNew, "crash", 11) // no signature, no class: grouped as crash
	record(t, s, "o/b", bCrash)
	record(t, s, "o/c", onRuntime("tpu", rtNew, "pass", 12))
	dFail := onRuntime("tpu", rtNew, "fail", 13)
	dFail.FailureClass = compat.Ptr(compat.ClassCompileError)
	record(t, s, "o/d", dFail)

	record(t, s, "o/f", onRuntime("cpu", rtCPU, "pass", 20))
}

func TestRuntimes(t *testing.T) {
	s := storetest.MustOpen(t)
	seedRuntimes(t, s)

	got, err := s.Runtimes(ctx, "tpu")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d runtimes on tpu, want 2: %+v", len(got), got)
	}
	// Newest first. New: a pass, b crash, c pass, d fail = 4 tested, 2 pass;
	// downloads 1000+800 of 1000+900+800+700.
	want := []struct {
		ref                    compat.RuntimeRef
		first, last            int
		models, tested, passed int
		rate, weighted         float64
	}{
		{rtNew.Ref("tpu"), 10, 13, 4, 4, 2, 0.5, 1800.0 / 3400},
		// Old: a fail, b pass, c pass (its newest), e skipped = 3 tested, 2 pass.
		{rtOld.Ref("tpu"), 0, 4, 4, 3, 2, 2.0 / 3, 1700.0 / 2700},
	}
	for i, w := range want {
		g := got[i]
		if g.Ref != w.ref || !g.FirstSeen.Equal(at(w.first)) || !g.LastSeen.Equal(at(w.last)) ||
			g.Models != w.models || g.Tested != w.tested || g.Passed != w.passed {
			t.Errorf("runtime %d = %+v, want %+v", i, g, w)
		}
		if g.PassRate == nil || math.Abs(*g.PassRate-w.rate) > 1e-12 {
			t.Errorf("runtime %d pass rate %v, want %v", i, g.PassRate, w.rate)
		}
		if g.WeightedPassRate == nil || math.Abs(*g.WeightedPassRate-w.weighted) > 1e-12 {
			t.Errorf("runtime %d weighted pass rate %v, want %v", i, g.WeightedPassRate, w.weighted)
		}
	}

	all, err := s.Runtimes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Ref != rtCPU.Ref("cpu") {
		t.Errorf("all targets: %+v, want 3 with cpu newest", all)
	}
	if _, err := s.Runtimes(ctx, "tpu2"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("unknown target: %v, want ErrInvalid", err)
	}
	none, err := s.Runtimes(ctx, "cuda")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("cuda: %v, %v; want an empty list", none, err)
	}
}

func TestRuntimeResults(t *testing.T) {
	s := storetest.MustOpen(t)
	seedRuntimes(t, s)
	entries := func(rt compat.Runtime) []compare.Entry {
		t.Helper()
		es, err := s.RuntimeResults(ctx, rt.Ref("tpu"))
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
		return es
	}
	old := entries(rtOld)
	wantOld := []compare.Entry{
		{ID: "o/a", Downloads: 1000, Status: "fail", Signature: "unsupported_op:aten::x"},
		{ID: "o/b", Downloads: 900, Status: "pass"},
		{ID: "o/c", Downloads: 800, Status: "pass"}, // the newest of its two results
		{ID: "o/e", Downloads: 600, Status: "skipped"},
	}
	if !reflect.DeepEqual(old, wantOld) {
		t.Errorf("old runtime:\n got %+v\nwant %+v", old, wantOld)
	}
	cur := entries(rtNew)
	wantNew := []compare.Entry{
		{ID: "o/a", Downloads: 1000, Status: "pass"},
		{ID: "o/b", Downloads: 900, Status: "crash", Signature: "crash"}, // the class its status implies
		{ID: "o/c", Downloads: 800, Status: "pass"},
		{ID: "o/d", Downloads: 700, Status: "fail", Signature: "compile_error"}, // its failure class
	}
	if !reflect.DeepEqual(cur, wantNew) {
		t.Errorf("new runtime:\n got %+v\nwant %+v", cur, wantNew)
	}
	// The comparison the site shows, end to end from the store.
	cmp := comparetest.Compare(old, cur)
	if len(cmp.Fixed) != 1 || cmp.Fixed[0].ID != "o/a" || cmp.Fixed[0].Signature != "unsupported_op:aten::x" ||
		len(cmp.Regressed) != 1 || cmp.Regressed[0].ID != "o/b" || len(cmp.New) != 1 || cmp.New[0].ID != "o/d" {
		t.Errorf("comparison: %+v", cmp)
	}

	none, err := s.RuntimeResults(ctx, compat.RuntimeRef{Target: "tpu", Torch: "9"})
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("unknown runtime: %v, %v; want an empty list", none, err)
	}
	if _, err := s.RuntimeResults(ctx, compat.RuntimeRef{}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("no target: %v, want ErrInvalid", err)
	}
}

// A model's downloads change with every scan; the runtimes' weighted pass
// rates and the comparisons' items follow.
func TestRuntimesFollowDownloads(t *testing.T) {
	s := storetest.MustOpen(t)
	seedRuntimes(t, s)
	before := versions(t, s)
	// o/f (cpu only) keeps its downloads; o/c (both tpu runtimes) gets more.
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "o/c", Downloads: 5000}, {ID: "o/f", Downloads: 500}}); err != nil {
		t.Fatal(err)
	}
	after := versions(t, s)
	for _, rt := range []compat.Runtime{rtOld, rtNew} {
		if k := rt.Ref("tpu").Key(); after[k] == before[k] {
			t.Errorf("%s: version %d did not move with o/c's downloads", k, after[k])
		}
	}
	if k := rtCPU.Ref("cpu").Key(); after[k] != before[k] {
		t.Errorf("%s: version moved %d → %d, though none of its models changed", k, before[k], after[k])
	}
	record(t, s, "o/f", onRuntime("cpu", rtCPU, "fail", 30))
	if k := rtCPU.Ref("cpu").Key(); versions(t, s)[k] == after[k] {
		t.Errorf("%s: version did not move with a new result", k)
	}
	rts, err := s.Runtimes(ctx, "tpu")
	if err != nil {
		t.Fatal(err)
	}
	// New: a pass 1000, b crash 900, c pass 5000, d fail 700.
	if w := 6000.0 / 7600; rts[0].WeightedPassRate == nil || math.Abs(*rts[0].WeightedPassRate-w) > 1e-12 {
		t.Errorf("weighted pass rate %v, want %v", rts[0].WeightedPassRate, w)
	}
	es, err := s.RuntimeResults(ctx, rtNew.Ref("tpu"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range es {
		if e.ID == "o/c" {
			found++
			if e.Downloads != 5000 {
				t.Errorf("o/c downloads %d, want 5000", e.Downloads)
			}
		}
	}
	if found != 1 {
		t.Errorf("o/c found %d times", found)
	}
}

// versions maps each runtime's key to its version.
func versions(t *testing.T, s *store.SQLite) map[string]int64 {
	t.Helper()
	rts, err := s.Runtimes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, rt := range rts {
		out[rt.Ref.Key()] = rt.Version
	}
	return out
}

// A renamed model (the Hub redirects its old id) takes the old id's
// results, on every runtime.
func TestRuntimesAfterRename(t *testing.T) {
	s := storetest.MustOpen(t)
	seedRuntimes(t, s)
	// o/e was skipped on the old runtime; it is renamed to o/e2, which has
	// a result of its own on the new runtime.
	upsert(t, s, "o/e2")
	record(t, s, "o/e2", onRuntime("tpu", rtNew, "pass", 14))
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "o/e2", Downloads: 650, Aliases: []string{"o/e"}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rt   compat.Runtime
		want compare.Entry
	}{
		{rtOld, compare.Entry{ID: "o/e2", Downloads: 650, Status: "skipped"}},
		{rtNew, compare.Entry{ID: "o/e2", Downloads: 650, Status: "pass"}},
	} {
		es, err := s.RuntimeResults(ctx, c.rt.Ref("tpu"))
		if err != nil {
			t.Fatal(err)
		}
		var got []compare.Entry
		for _, e := range es {
			if e.ID == "o/e" || e.ID == "o/e2" {
				got = append(got, e)
			}
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: %+v, want [%+v]", c.rt.TorchTPU, got, c.want)
		}
	}
}

// The migrations file the results recorded before them exactly as
// recording files new ones: drop the tables of 0003 (runtimes), of the scale migration
// (which reshapes 0003's and adds the tallies) and of the train comparison
// (0012: the train verdicts' copies, tallies and kept lists), reopen, and
// every answer is the same.
func TestRuntimesMigrationBackfill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	seedRuntimes(t, s)
	// Train verdicts: g's training breaks, h's is fixed; i has one on the
	// new runtime only.
	upsert(t, s, "o/g", "o/h", "o/i")
	gNew := withTrain(onRuntime("tpu", rtNew, "pass", 15), compat.StatusFail)
	gNew.Modes[compat.ModeTrain] = compat.Verdict{Status: compat.StatusFail, Signature: compat.Ptr("train:backward:aten::y")}
	record(t, s, "o/g", withTrain(onRuntime("tpu", rtOld, "pass", 5), compat.StatusPass))
	record(t, s, "o/g", gNew)
	record(t, s, "o/h", withTrain(onRuntime("tpu", rtOld, "pass", 6), compat.StatusOOM))
	record(t, s, "o/h", withTrain(onRuntime("tpu", rtNew, "pass", 16), compat.StatusPass))
	record(t, s, "o/i", onRuntime("tpu", rtOld, "pass", 7))
	record(t, s, "o/i", withTrain(onRuntime("tpu", rtNew, "pass", 17), compat.StatusFail))
	readCompare := func(s *store.SQLite) store.ComparePage {
		t.Helper()
		p, err := s.Compare(ctx, store.CompareQuery{Base: rtOld.Ref("tpu"), Head: rtNew.Ref("tpu")})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := readCompare(s)
	if len(before.TrainRegressed) != 1 || before.TrainRegressed[0].Signature != "train:backward:aten::y" ||
		len(before.TrainFixed) != 1 || before.TrainFixed[0].ID != "o/h" {
		t.Fatalf("train lists before the migration: %+v %+v", before.TrainRegressed, before.TrainFixed)
	}
	read := func(s *store.SQLite) ([]store.RuntimeStats, [][]compare.Entry) {
		t.Helper()
		rts, err := s.Runtimes(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var entries [][]compare.Entry
		for _, rt := range rts {
			es, err := s.RuntimeResults(ctx, rt.Ref)
			if err != nil {
				t.Fatal(err)
			}
			sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
			entries = append(entries, es)
		}
		return rts, entries
	}
	wantRts, wantEntries := read(s)
	if len(wantRts) != 3 {
		t.Fatalf("%d runtimes before, want 3", len(wantRts))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE compare_train_items`, `DROP TABLE train_pairs`,
		`DROP TABLE compare_items`, `DROP TABLE compare_pairs`, `DROP TABLE runtime_pairs`,
		`DROP TABLE runtime_tallies`, `DROP TABLE fit_tallies`, `DROP TABLE task_tallies`, `DROP TABLE fail_tallies`, `DROP TABLE status_tallies`,
		`DROP TABLE runtime_current`, `DROP TABLE runtimes`,
		`DELETE FROM schema_migrations WHERE name LIKE '%_runtimes.sql' OR name LIKE '%_scale.sql' OR name LIKE '%_train_compare.sql'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	db.Close()
	s2, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	gotRts, gotEntries := read(s2)
	for i := range gotRts { // versions count changes: opaque, not equal across a backfill
		if gotRts[i].Version == 0 {
			t.Errorf("runtime %d: version 0 after the backfill", i)
		}
		gotRts[i].Version = 0
	}
	for i := range wantRts {
		wantRts[i].Version = 0
	}
	if !reflect.DeepEqual(gotRts, wantRts) {
		t.Errorf("runtimes after the migration:\n got %+v\nwant %+v", gotRts, wantRts)
	}
	if !reflect.DeepEqual(gotEntries, wantEntries) {
		t.Errorf("results after the migration:\n got %+v\nwant %+v", gotEntries, wantEntries)
	}
	if after := readCompare(s2); !reflect.DeepEqual(after, before) {
		t.Errorf("comparison after the migration:\n got %+v\nwant %+v", after, before)
	}
}

// BenchmarkRuntimes reads the runtimes and one runtime's results over
// 10 000 models and 100 000 results.
func BenchmarkRuntimes(b *testing.B) {
	s := benchSeeded(b)
	b.Run("Runtimes", func(b *testing.B) {
		loopCPU(b, func() {
			rts, err := s.Runtimes(ctx, "tpu")
			if err != nil || len(rts) == 0 {
				b.Fatal(len(rts), err)
			}
		})
	})
	b.Run("RuntimeResults", func(b *testing.B) {
		ref := storetest.Runtime.Ref("tpu")
		loopCPU(b, func() {
			es, err := s.RuntimeResults(ctx, ref)
			if err != nil || len(es) == 0 {
				b.Fatal(len(es), err)
			}
		})
	})
}

// A runtime's weighted rate is nil when its denominator is 0: verdicts
// only from models with no downloads. (A runtime without a verdict is not
// listed at all: TestRuntimesNeedAVerdict.)
func TestRuntimeRatesWithoutDenominator(t *testing.T) {
	s := storetest.MustOpen(t)
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "o/skipped", Downloads: 50}, {ID: "o/zero", Downloads: 0}}); err != nil {
		t.Fatal(err)
	}
	record(t, s, "o/skipped", onRuntime("tpu", rtOld, "skipped", 0))
	record(t, s, "o/zero", onRuntime("tpu", rtNew, "pass", 1))
	got, err := s.Runtimes(ctx, "tpu")
	if err != nil || len(got) != 1 {
		t.Fatalf("runtimes: %+v, %v; want 1 (the skipped-only one has no verdict)", got, err)
	}
	if g := got[0]; g.Ref != rtNew.Ref("tpu") || g.Tested != 1 || g.PassRate == nil || *g.PassRate != 1 || g.WeightedPassRate != nil {
		t.Errorf("no downloads: %+v, rates %v %v; want pass rate 1, no weighted rate", g, g.PassRate, g.WeightedPassRate)
	}
}

// TestRuntimesNeedAVerdict: a runtime is public (the runtimes list, and so
// compare's default head and the feed's "new runtime" item) only once a
// verdict was measured on it. An error result carrying any runtime ("torch
// 99.0.0" from a broken worker) or skips alone never make one.
func TestRuntimesNeedAVerdict(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "o/a", "o/b", "o/c")
	bogus := compat.Runtime{Torch: "99.0.0", Transformers: "5.23.0", Harness: "1", Device: "cpu"}
	errRes := onRuntime("cpu", bogus, "error", 0)
	errRes.FailureClass = compat.Ptr(compat.ClassDeviceUnavail)
	record(t, s, "o/a", errRes)
	record(t, s, "o/b", onRuntime("cpu", bogus, "skipped", 1))
	record(t, s, "o/c", onRuntime("cpu", rtCPU, "pass", 2))
	got, err := s.Runtimes(ctx, "")
	if err != nil || len(got) != 1 || got[0].Ref != rtCPU.Ref("cpu") {
		t.Fatalf("runtimes %+v (%v): want only the runtime with a verdict", got, err)
	}
	record(t, s, "o/c", onRuntime("cpu", bogus, "fail", 3))
	got, _ = s.Runtimes(ctx, "cpu")
	if len(got) != 2 || got[1].Ref != bogus.Ref("cpu") || got[1].Models != 3 || got[1].Tested != 1 {
		t.Errorf("after a verdict on it: %+v; want it listed, with its 3 models and 1 verdict", got)
	}
}
