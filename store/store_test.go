package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

var ctx = context.Background()

// t0 is the base of the tests' times.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

// upsert adds models with the given ids (downloads 1000, 900, … in order).
func upsert(t *testing.T, s *store.SQLite, ids ...string) {
	t.Helper()
	var ups []store.ModelUpsert
	for i, id := range ids {
		ups = append(ups, store.ModelUpsert{ID: id, Task: "text-generation", Library: "transformers",
			Downloads: int64(1000 - 100*i), SHA: "sha-" + id})
	}
	if err := s.UpsertModels(ctx, ups); err != nil {
		t.Fatal(err)
	}
}

// result is a minimal result (a skip names its reason, as compat.Result.Validate asks).
func result(target compat.Target, status compat.Status, tested time.Time) compat.Result {
	r := compat.Result{Target: target, Status: status, Revision: "rev1", TestedAt: tested, Runtime: storetest.Runtime}
	if status == compat.StatusSkipped {
		r.Reason = compat.Ptr(compat.ReasonUnsupportedTask)
	}
	return r
}

func record(t *testing.T, s *store.SQLite, id string, r compat.Result) store.RecordOutcome {
	t.Helper()
	out, err := s.RecordResult(ctx, id, r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// migrationFiles counts the migration files in the source tree, read here
// rather than asked of the store.
func migrationFiles(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations/*.sql: %d files, %v", len(files), err)
	}
	return len(files)
}

func TestMigrationsApplyOnce(t *testing.T) {
	want := migrationFiles(t)
	path := filepath.Join(t.TempDir(), "sub", "dir", "scanner.db")
	for range 3 {
		s, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, maxV int
	if err := db.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if n != want || maxV != want {
		t.Errorf("schema_migrations: %d rows, max %d; want %d", n, maxV, want)
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future.sql', 0)`,
		migrationFiles(t)+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = store.Open(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("Open = %v; want a newer-schema error", err)
	}
}

// TestOpenFillsCurrent: a model without a current row on a target (a
// target added to compat after it was stored: no rows there, no tallies)
// gets one on the next Open, and the target's tallies count it.
func TestOpenFillsCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustSeed(t, s, 30, 0)
	s.Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM current WHERE target = 'cuda'`, `DELETE FROM status_tallies WHERE target = 'cuda'`,
		`DELETE FROM fail_tallies WHERE target = 'cuda'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, _, err := s.ListModels(ctx, store.ModelQuery{Target: "cuda", Status: []compat.Status{"untested"}})
	if err != nil || len(ms) != 30 {
		t.Errorf("untested on cuda after reopen: %d, %v; want 30", len(ms), err)
	}
	sum, err := s.Summary(ctx, "cuda")
	if err != nil || sum.Models != 30 || sum.Counts[compat.StatusUntested] != 30 {
		t.Errorf("cuda's summary after reopen: %+v, %v; want 30 untested", sum, err)
	}
}

func TestOpenRefusesMemory(t *testing.T) {
	for _, p := range []string{":memory:", "", "file:x.db?mode=memory"} {
		if s, err := store.Open(ctx, p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func TestResultRoundTrip(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "Qwen/Qwen3-0.6B")
	scanID, err := s.StartScan(ctx, store.Scan{Trigger: "cli", Target: "tpu"})
	if err != nil {
		t.Fatal(err)
	}
	full := compat.Result{
		Target: compat.TargetTPU, Status: compat.StatusFail,
		Stage: compat.Ptr(compat.StageForward), FailureClass: compat.Ptr(compat.ClassUnsupportedOp),
		Op: compat.Ptr("aten::_fft_r2c"), Reason: compat.Ptr(compat.ReasonTooLarge),
		Signature: compat.Ptr("unsupported_op:aten::_fft_r2c"), Message: compat.Ptr("no lowering\nfor fft"),
		Mode: compat.Ptr(compat.ModeArch), Revision: "abc123", TestedAt: at(1), DurationS: 12.3456789,
		Runtime: compat.Runtime{Python: "3.12", Torch: "2.9.0", Transformers: "4.57", TorchTPU: "0.1", Harness: "7",
			Device: "TPU v6e", DeviceCount: 4, LibTPU: "0.0.21", DeviceMemGB: compat.Ptr(31.25)},
		Metrics: compat.Metrics{LoadS: compat.Ptr(1.5), FirstForwardS: compat.Ptr(0.1), ForwardMS: compat.Ptr(3.25),
			CompileS: compat.Ptr(0.0), TokensPerS: compat.Ptr(1234.5678), PeakMemBytes: compat.Ptr(int64(1) << 40),
			MaxAbsDiff: compat.Ptr(1e-7), Top1Agreement: compat.Ptr(0.99), CompiledStepMS: compat.Ptr(2.0),
			TTFTMS: compat.Ptr(15.0), Perplexity: compat.Ptr(7.5), Tolerance: compat.Ptr(1e-3), ParamCount: compat.Ptr(int64(600e6))},
		Repro:   "scanner probe Qwen/Qwen3-0.6B --revision abc123 --target tpu --mode arch",
		Task:    "text-generation",
		Stages:  []compat.StageRun{{Stage: compat.StageEnv, OK: true, DurationS: 0.5}, {Stage: compat.StageForward, Note: "boom"}},
		LogTail: "Traceback…\nRuntimeError: boom\n",
		ScanID:  &scanID,
		// Model text, stored as written (markup included: pages escape it).
		Continuation: &compat.Continuation{Prompt: "The capital of France is", Text: " Paris.\n<b>\"Oui\"</b> é"},
		Worker:       "tpu-worker-3", WorkerTestedAt: compat.Ptr(at(0).Add(-time.Second)),
		DevicesUsed: 4, Sharding: compat.Ptr(compat.ShardingTP),
	}
	bare := compat.Result{Target: compat.TargetCPU, Status: compat.StatusPass, TestedAt: at(2), DevicesUsed: 1}
	for _, r := range []compat.Result{full, bare} {
		t.Run(string(r.Target), func(t *testing.T) {
			out := record(t, s, "Qwen/Qwen3-0.6B", r)
			want := mustJSON(t, r)
			got, err := s.LatestResult(ctx, "Qwen/Qwen3-0.6B", r.Target)
			if err != nil {
				t.Fatal(err)
			}
			if g := mustJSON(t, got); g != want {
				t.Errorf("LatestResult:\n got %s\nwant %s", g, want)
			}
			h, err := s.History(ctx, "Qwen/Qwen3-0.6B", r.Target, 0)
			if err != nil || len(h) != 1 {
				t.Fatalf("History = %d results, %v", len(h), err)
			}
			if g := mustJSON(t, h[0]); g != want {
				t.Errorf("History:\n got %s\nwant %s", g, want)
			}
			m, err := s.GetModel(ctx, "Qwen/Qwen3-0.6B", r.Target)
			if err != nil {
				t.Fatal(err)
			}
			if g := mustJSON(t, m.Result); g != want {
				t.Errorf("GetModel:\n got %s\nwant %s", g, want)
			}
			if out.Event == nil || out.Event.Kind != compat.EventNew {
				t.Errorf("event = %+v; want new", out.Event)
			}
		})
	}
	// Unmeasured metrics stay null in the JSON.
	got, err := s.LatestResult(ctx, "Qwen/Qwen3-0.6B", compat.TargetCPU)
	if err != nil {
		t.Fatal(err)
	}
	if j := mustJSON(t, got.Metrics); !strings.Contains(j, `"tokens_per_s":null`) {
		t.Errorf("metrics = %s; want nulls", j)
	}
	cur, err := s.CurrentResults(ctx, "Qwen/Qwen3-0.6B")
	if err != nil || len(cur) != 2 || cur[0].Target != compat.TargetTPU || cur[1].Target != compat.TargetCPU {
		t.Errorf("CurrentResults = %+v, %v", cur, err)
	}
}

func TestRecordResultRejects(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "a/b")
	for name, r := range map[string]compat.Result{
		"auto target":  result(compat.TargetAuto, compat.StatusPass, at(0)),
		"no target":    result("", compat.StatusPass, at(0)),
		"untested":     result(compat.TargetTPU, compat.StatusUntested, at(0)),
		"bad status":   result(compat.TargetTPU, "great", at(0)),
		"no tested_at": result(compat.TargetTPU, compat.StatusPass, time.Time{}),
		// compat.Result.Validate's rules the store did not hold before.
		"skip without a reason": {Target: compat.TargetTPU, Status: compat.StatusSkipped, TestedAt: at(0)},
		"unknown stage":         {Target: compat.TargetTPU, Status: compat.StatusFail, TestedAt: at(0), Stage: compat.Ptr(compat.Stage("warmup"))},
	} {
		if _, err := s.RecordResult(ctx, "a/b", r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: err = %v; want ErrInvalid", name, err)
		}
	}
	if _, err := s.RecordResult(ctx, "nobody/none", result(compat.TargetTPU, compat.StatusPass, at(0))); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown model: err = %v; want ErrNotFound", err)
	}
}

func TestRecordResultEvents(t *testing.T) {
	type step struct {
		target compat.Target
		status compat.Status
		want   compat.EventKind // "" = no event
		from   compat.Status
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first is new", []step{{"tpu", "pass", compat.EventNew, ""}}},
		{"first failure is new", []step{{"tpu", "fail", compat.EventNew, ""}}},
		{"same status no event", []step{{"tpu", "pass", compat.EventNew, ""}, {"tpu", "pass", "", ""}}},
		{"regression", []step{{"tpu", "pass", compat.EventNew, ""}, {"tpu", "oom", compat.EventRegression, "pass"}}},
		{"fix", []step{{"tpu", "crash", compat.EventNew, ""}, {"tpu", "pass", compat.EventFix, "crash"}}},
		{"change", []step{{"tpu", "fail", compat.EventNew, ""}, {"tpu", "timeout", compat.EventChange, "fail"}}},
		// an error is the scanner's own: no event, and what follows is compared with what came before it
		{"pass to error is no event", []step{{"tpu", "pass", compat.EventNew, ""}, {"tpu", "error", "", ""}}},
		{"a first error is no event", []step{{"tpu", "error", "", ""}, {"tpu", "pass", compat.EventNew, ""}}},
		{"back from an error to the same verdict", []step{{"tpu", "pass", compat.EventNew, ""}, {"tpu", "error", "", ""},
			{"tpu", "error", "", ""}, {"tpu", "pass", "", ""}}},
		{"a regression across an error", []step{{"tpu", "pass", compat.EventNew, ""}, {"tpu", "error", "", ""},
			{"tpu", "fail", compat.EventRegression, "pass"}}},
		{"a fix across an error", []step{{"tpu", "oom", compat.EventNew, ""}, {"tpu", "error", "", ""},
			{"tpu", "pass", compat.EventFix, "oom"}}},
		{"targets are separate", []step{{"tpu", "pass", compat.EventNew, ""}, {"cpu", "fail", compat.EventNew, ""}, {"tpu", "pass", "", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := storetest.MustOpen(t)
			upsert(t, s, "a/b")
			var events int
			for i, st := range tt.steps {
				out := record(t, s, "a/b", result(st.target, st.status, at(i)))
				switch {
				case st.want == "" && out.Event != nil:
					t.Errorf("step %d: event %+v; want none", i, out.Event)
				case st.want != "" && out.Event == nil:
					t.Errorf("step %d: no event; want %s", i, st.want)
				case st.want != "":
					events++
					e := out.Event
					if e.Kind != st.want || e.FromStatus != st.from || e.ToStatus != st.status || e.Target != st.target ||
						e.ModelID != "a/b" || !e.At.Equal(at(i)) || e.ID == 0 {
						t.Errorf("step %d: event %+v; want %s %s→%s", i, e, st.want, st.from, st.status)
					}
				}
			}
			evs, err := s.ModelEvents(ctx, "a/b", 0)
			if err != nil || len(evs) != events {
				t.Fatalf("ModelEvents = %d, %v; want %d", len(evs), err, events)
			}
			for i := 1; i < len(evs); i++ {
				if evs[i].At.After(evs[i-1].At) {
					t.Errorf("events not newest first: %v", evs)
				}
			}
		})
	}
}

func TestRecordResultOutOfOrder(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "a/b")
	record(t, s, "a/b", result("tpu", "pass", at(10)))
	out := record(t, s, "a/b", result("tpu", "fail", at(5))) // older: history only
	if out.Event != nil || out.Duplicate {
		t.Errorf("older result: %+v; want no event", out)
	}
	got, err := s.LatestResult(ctx, "a/b", "tpu")
	if err != nil || got.Status != compat.StatusPass {
		t.Errorf("LatestResult = %s, %v; want pass", got.Status, err)
	}
	h, err := s.History(ctx, "a/b", "", 0)
	if err != nil || len(h) != 2 || h[0].Status != "pass" || h[1].Status != "fail" {
		t.Errorf("History = %+v, %v", h, err)
	}
}

func TestRecordResultIdempotent(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "a/b")
	scan, err := s.StartScan(ctx, store.Scan{Trigger: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	inScan := result("tpu", "pass", at(1))
	inScan.ScanID = &scan
	first := record(t, s, "a/b", inScan)
	before, _ := s.Changed(ctx)

	again := inScan
	again.TestedAt = at(2) // a rerun in the same scan, same revision and runtime
	for _, r := range []compat.Result{inScan, again} {
		dup := record(t, s, "a/b", r)
		if !dup.Duplicate || dup.ResultID != first.ResultID || dup.Event != nil {
			t.Errorf("re-record = %+v; want duplicate of %d", dup, first.ResultID)
		}
	}
	if after, _ := s.Changed(ctx); !after.Equal(before) {
		t.Errorf("a duplicate moved Changed")
	}
	// Another runtime in the same scan is another result.
	other := inScan
	other.Runtime.Torch = "2.10.0"
	if out := record(t, s, "a/b", other); out.Duplicate {
		t.Errorf("new runtime recorded as duplicate")
	}
	// Outside a scan, only the very same probe is a duplicate.
	free := result("cpu", "pass", at(3))
	record(t, s, "a/b", free)
	if out := record(t, s, "a/b", free); !out.Duplicate {
		t.Errorf("same unscanned probe not a duplicate")
	}
	free.TestedAt = at(4)
	if out := record(t, s, "a/b", free); out.Duplicate {
		t.Errorf("forced retest outside a scan recorded as duplicate")
	}
	h, err := s.History(ctx, "a/b", "", 0)
	if err != nil || len(h) != 4 {
		t.Errorf("History = %d results, %v; want 4", len(h), err)
	}
	// The batch path dedupes the same way.
	outs, err := s.RecordResults(ctx, []store.Record{{ModelID: "a/b", Result: inScan}, {ModelID: "a/b", Result: free}})
	if err != nil || !outs[0].Duplicate || !outs[1].Duplicate {
		t.Errorf("RecordResults = %+v, %v; want duplicates", outs, err)
	}
}

func TestAliasesAndRenames(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "gpt2")
	record(t, s, "gpt2", result("tpu", "fail", at(1)))
	record(t, s, "gpt2", result("cpu", "pass", at(2)))
	// The Hub now redirects gpt2 to openai-community/gpt2.
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "openai-community/gpt2", Downloads: 5, Aliases: []string{"gpt2", "GPT-2-old"}}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"openai-community/gpt2", "gpt2", "gpt-2-OLD", "OpenAI-Community/GPT2"} {
		m, err := s.GetModel(ctx, id, "tpu")
		if err != nil {
			t.Fatalf("GetModel(%q): %v", id, err)
		}
		if m.ID != "openai-community/gpt2" || !slices.Equal(m.Aliases, []string{"GPT-2-old", "gpt2"}) ||
			m.Result == nil || m.Result.Status != compat.StatusFail || m.URL != "https://huggingface.co/openai-community/gpt2" {
			t.Errorf("GetModel(%q) = %+v", id, m)
		}
	}
	h, err := s.History(ctx, "gpt2", "", 0)
	if err != nil || len(h) != 2 {
		t.Errorf("History after rename = %d, %v; want 2", len(h), err)
	}
	evs, err := s.ModelEvents(ctx, "openai-community/gpt2", 0)
	if err != nil || len(evs) != 2 || evs[0].ModelID != "openai-community/gpt2" {
		t.Errorf("ModelEvents after rename = %+v, %v", evs, err)
	}
	all, _, err := s.ListModels(ctx, store.ModelQuery{})
	if err != nil || len(all) != 1 {
		t.Errorf("ListModels after rename = %d models, %v; want 1", len(all), err)
	}
	// Recording under the old id lands on the new one.
	if out := record(t, s, "gpt2", result("tpu", "pass", at(3))); out.Event == nil || out.Event.Kind != compat.EventFix {
		t.Errorf("record via alias: %+v", out)
	}
	if _, err := s.GetModel(ctx, "nobody/none", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown model: %v; want ErrNotFound", err)
	}
	for name, f := range map[string]func() error{
		"history":       func() error { _, err := s.History(ctx, "x/y", "", 0); return err },
		"latest":        func() error { _, err := s.LatestResult(ctx, "x/y", "tpu"); return err },
		"current":       func() error { _, err := s.CurrentResults(ctx, "x/y"); return err },
		"events":        func() error { _, err := s.ModelEvents(ctx, "x/y", 0); return err },
		"latest none":   func() error { _, err := s.LatestResult(ctx, "gpt2", "cuda"); return err },
		"get scan":      func() error { _, err := s.GetScan(ctx, 42); return err },
		"progress":      func() error { return s.UpdateScanProgress(ctx, 42, 1, 1, 1, 1) },
		"finish":        func() error { return s.FinishScan(ctx, 42, store.ScanFinish{}) },
		"flaky unknown": func() error { return s.RecordFlaky(ctx, "x/y", result("tpu", "fail", at(0)), "pass") },
	} {
		if err := f(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v; want ErrNotFound", name, err)
		}
	}
}

func TestUpsertModelsUpdates(t *testing.T) {
	s := storetest.MustOpen(t)
	lm := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	m := store.ModelUpsert{ID: "a/b", Task: "fill-mask", Library: "transformers", Downloads: 10, Likes: 2, Gated: true,
		SHA: "s1", Tags: []string{"x", "y"}, LastModified: lm}
	if err := s.UpsertModels(ctx, []store.ModelUpsert{m}); err != nil {
		t.Fatal(err)
	}
	m.Downloads, m.SHA = 20, "s2"
	if err := s.UpsertModels(ctx, []store.ModelUpsert{m}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetModel(ctx, "a/b", "")
	if err != nil {
		t.Fatal(err)
	}
	want := compat.Model{ID: "a/b", Task: "fill-mask", Library: "transformers", Downloads: 20, Likes: 2, Gated: true,
		SHA: "s2", URL: "https://huggingface.co/a/b", Tags: []string{"x", "y"}, LastModified: lm}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("GetModel:\n got %s\nwant %s", g, w)
	}
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: ""}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("empty id: %v; want ErrInvalid", err)
	}
}

func TestScans(t *testing.T) {
	s := storetest.MustOpen(t)
	now := at(0)
	s.SetClock(func() time.Time { return now })
	rt := storetest.Runtime
	a, err := s.StartScan(ctx, store.Scan{Trigger: "schedule", Target: "tpu", Params: `{"limit":100}`, Planned: 100, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.StartScan(ctx, store.Scan{Trigger: "manual", Target: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateScanProgress(ctx, a, 100, 10, 7, 3); err != nil {
		t.Fatal(err)
	}
	now = at(5)
	busy := 0.75
	if err := s.FinishScan(ctx, a, store.ScanFinish{Status: store.ScanDone, DeviceBusy: &busy}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishScan(ctx, a, store.ScanFinish{Status: store.ScanRunning}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("finish as running: %v; want ErrInvalid", err)
	}
	got, err := s.GetScan(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	fin := at(5)
	want := store.Scan{ID: a, Trigger: "schedule", Status: store.ScanDone, Target: "tpu", Params: `{"limit":100}`,
		StartedAt: at(0), FinishedAt: &fin, Planned: 100, Done: 10, Probed: 7, Unchanged: 3, DeviceBusy: &busy, Runtime: rt}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("GetScan:\n got %s\nwant %s", g, w)
	}
	now = at(9)
	s.Restart() // b's process is gone: this is the next one
	n, err := s.MarkInterrupted(ctx)
	if err != nil || n != 1 {
		t.Fatalf("MarkInterrupted = %d, %v; want 1", n, err)
	}
	if n, err := s.MarkInterrupted(ctx); err != nil || n != 0 {
		t.Errorf("second MarkInterrupted = %d, %v; want 0", n, err)
	}
	gb, err := s.GetScan(ctx, b)
	if err != nil || gb.Status != store.ScanInterrupted || gb.FinishedAt == nil || !gb.FinishedAt.Equal(at(9)) {
		t.Errorf("interrupted scan = %+v, %v", gb, err)
	}
	list, err := s.ListScans(ctx, 0)
	if err != nil || len(list) != 2 || list[0].ID != b || list[1].ID != a {
		t.Errorf("ListScans = %+v, %v; want newest first", list, err)
	}
}

// TestSummaryTaskTallies: the models counted by task and library, for the
// coverage figure; a model without a pipeline tag counts under its newest
// result's task.
func TestSummaryTaskTallies(t *testing.T) {
	s := storetest.MustOpen(t)
	ups := []store.ModelUpsert{
		{ID: "o/llm", Task: "text-generation", Library: "transformers", Downloads: 100},
		{ID: "o/llm2", Task: "text-generation", Library: "transformers", Downloads: 50},
		{ID: "o/sd", Task: "text-to-image", Library: "diffusers", Downloads: 70},
		{ID: "o/notag", Library: "", Downloads: 30},
		{ID: "o/other", Library: "", Downloads: 20},
		{ID: "o/untested", Library: "", Downloads: 10},
	}
	if err := s.UpsertModels(ctx, ups); err != nil {
		t.Fatal(err)
	}
	probed := result("cpu", "pass", at(1))
	probed.Task = "fill-mask"
	record(t, s, "o/notag", probed)
	refused := result("tpu", "skipped", at(2))
	refused.Reason = compat.Ptr(compat.ReasonUnsupportedLibrary)
	record(t, s, "o/other", refused)
	record(t, s, "o/llm", result("tpu", "fail", at(3)))
	sum, err := s.Summary(ctx, "tpu") // the tallies are the same whatever the target
	if err != nil {
		t.Fatal(err)
	}
	want := []store.TaskTally{
		{Task: "", Library: "", Tested: false, LibraryRejected: false, Models: 1, Downloads: 10},
		{Task: "", Library: "", Tested: true, LibraryRejected: true, Models: 1, Downloads: 20},
		{Task: "fill-mask", Library: "", Tested: true, Models: 1, Downloads: 30},
		{Task: "text-generation", Library: "transformers", Tested: false, Models: 1, Downloads: 50},
		{Task: "text-generation", Library: "transformers", Tested: true, Models: 1, Downloads: 100},
		{Task: "text-to-image", Library: "diffusers", Tested: false, Models: 1, Downloads: 70},
	}
	if mustJSON(t, sum.Tasks) != mustJSON(t, want) {
		t.Errorf("tasks =\n%s\nwant\n%s", mustJSON(t, sum.Tasks), mustJSON(t, want))
	}
}

func TestSummary(t *testing.T) {
	s := storetest.MustOpen(t)
	empty, err := s.Summary(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if empty.PassRate != nil || empty.WeightedPassRate != nil || empty.LastScan != nil || empty.Runtime != nil ||
		empty.Models != 0 || len(empty.Counts) != len(compat.Statuses) {
		t.Errorf("empty summary = %+v", empty)
	}
	// a 1000, b 900, c 800, d 700, e 600, f 500 downloads.
	upsert(t, s, "o/a", "o/b", "o/c", "o/d", "o/e", "o/f")
	record(t, s, "o/a", result("tpu", "pass", at(1)))
	record(t, s, "o/b", result("tpu", "fail", at(2)))
	record(t, s, "o/c", result("tpu", "oom", at(3)))
	record(t, s, "o/d", result("tpu", "skipped", at(4)))
	late := result("cpu", "pass", at(5))
	late.Runtime.Torch = "9.9"
	record(t, s, "o/e", late)
	if _, err := s.StartScan(ctx, store.Scan{Trigger: "cli"}); err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		target   compat.Target
		counts   map[compat.Status]int
		tested   int
		rate     *float64
		weighted *float64
		torch    string
	}{
		{"tpu", map[compat.Status]int{"pass": 1, "fail": 1, "oom": 1, "skipped": 1, "untested": 2}, 3,
			f(1.0 / 3), f(1000.0 / 2700), storetest.Runtime.Torch},
		{"", map[compat.Status]int{"pass": 2, "fail": 1, "oom": 1, "skipped": 1, "untested": 1}, 4,
			f(2.0 / 4), f(1600.0 / 3300), "9.9"},
		{"cuda", map[compat.Status]int{"untested": 6}, 0, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.target), func(t *testing.T) {
			sum, err := s.Summary(ctx, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range compat.Statuses {
				if sum.Counts[st] != tt.counts[st] {
					t.Errorf("count %s = %d; want %d", st, sum.Counts[st], tt.counts[st])
				}
			}
			if sum.Models != 6 || sum.Tested != tt.tested {
				t.Errorf("models %d tested %d; want 6, %d", sum.Models, sum.Tested, tt.tested)
			}
			if mustJSON(t, sum.PassRate) != mustJSON(t, tt.rate) || mustJSON(t, sum.WeightedPassRate) != mustJSON(t, tt.weighted) {
				t.Errorf("rates %v %v; want %v %v", deref(sum.PassRate), deref(sum.WeightedPassRate), deref(tt.rate), deref(tt.weighted))
			}
			if sum.LastScan == nil || sum.LastScan.Status != store.ScanRunning {
				t.Errorf("last scan = %+v", sum.LastScan)
			}
			if (tt.torch == "") != (sum.Runtime == nil) || (sum.Runtime != nil && sum.Runtime.Torch != tt.torch) {
				t.Errorf("runtime = %+v; want torch %q", sum.Runtime, tt.torch)
			}
		})
	}
	t.Run("no downloads", func(t *testing.T) {
		s := storetest.MustOpen(t)
		if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "o/a"}, {ID: "o/b"}}); err != nil {
			t.Fatal(err)
		}
		record(t, s, "o/a", result("tpu", "pass", at(1)))
		record(t, s, "o/b", result("tpu", "fail", at(1)))
		sum, err := s.Summary(ctx, "tpu")
		if err != nil || sum.PassRate == nil || *sum.PassRate != 0.5 || sum.WeightedPassRate != nil {
			t.Errorf("summary = %+v, %v; want pass rate 0.5, no weighted rate", sum, err)
		}
	})
	if _, err := s.Summary(ctx, "auto"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("target auto: %v; want ErrInvalid", err)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestFailures(t *testing.T) {
	s := storetest.MustOpen(t)
	// Downloads 1000, 900, … 400.
	upsert(t, s, "o/a", "o/b", "o/c", "o/d", "o/e", "o/f", "o/g")
	fail := func(sig string, class compat.FailureClass) compat.Result {
		r := result("tpu", "fail", at(1))
		if sig != "" {
			r.Signature = &sig
		}
		if class != "" {
			r.FailureClass = &class
			if class == compat.ClassUnsupportedOp {
				r.Op = compat.Ptr("aten::fft")
			}
		}
		return r
	}
	record(t, s, "o/a", fail("unsupported_op:aten::fft", compat.ClassUnsupportedOp)) // 1000
	record(t, s, "o/b", fail("", compat.ClassCompileError))                          // 900
	record(t, s, "o/c", fail("unsupported_op:aten::fft", compat.ClassUnsupportedOp)) // 800
	record(t, s, "o/d", result("tpu", "timeout", at(1)))                             // 700, no class
	record(t, s, "o/e", fail("", compat.ClassCompileError))                          // 600
	record(t, s, "o/f", result("tpu", "pass", at(1)))                                // 500
	record(t, s, "o/g", result("tpu", "fail", at(1)))                                // 400, earlier failure…
	record(t, s, "o/g", result("tpu", "pass", at(2)))                                // …fixed
	got, err := s.Failures(ctx, "tpu", 0)
	if err != nil {
		t.Fatal(err)
	}
	const total = 1000 + 900 + 800 + 700 + 600 + 500 + 400
	want := []store.FailureGroup{
		{Signature: "unsupported_op:aten::fft", FailureClass: compat.ClassUnsupportedOp, Op: compat.Ptr("aten::fft"),
			Models: 2, Downloads: 1800, DownloadShare: 1800.0 / total, Examples: []string{"o/a", "o/c"}},
		{Signature: "compile_error", FailureClass: compat.ClassCompileError, Models: 2, Downloads: 1500,
			DownloadShare: 1500.0 / total, Examples: []string{"o/b", "o/e"}},
		{Signature: "timeout", FailureClass: compat.ClassTimeout, Models: 1, Downloads: 700,
			DownloadShare: 700.0 / total, Examples: []string{"o/d"}},
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("Failures:\n got %s\nwant %s", g, w)
	}
	if got, err := s.Failures(ctx, "tpu", 1); err != nil || len(got) != 1 {
		t.Errorf("limit 1: %d groups, %v", len(got), err)
	}
	if got, err := s.Failures(ctx, "cuda", 0); err != nil || got == nil || len(got) != 0 {
		t.Errorf("no failures: %v, %v; want empty", got, err)
	}
}

func TestEventsAndFlaky(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "o/a", "o/b")
	record(t, s, "o/a", result("tpu", "pass", at(1)))
	record(t, s, "o/b", result("tpu", "pass", at(2)))
	seen := result("tpu", "crash", at(3))
	seen.Message = compat.Ptr("SIGSEGV")
	if err := s.RecordFlaky(ctx, "o/a", seen, compat.StatusPass); err != nil {
		t.Fatal(err)
	}
	cur, err := s.LatestResult(ctx, "o/a", "tpu")
	if err != nil || cur.Status != compat.StatusPass {
		t.Errorf("current after flaky = %s, %v; want pass", cur.Status, err)
	}
	evs, err := s.Events(ctx, 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("Events = %d, %v; want 3", len(evs), err)
	}
	e := evs[0]
	if e.Kind != compat.EventFlaky || e.ModelID != "o/a" || e.FromStatus != "pass" || e.ToStatus != "crash" ||
		e.Message == nil || *e.Message != "SIGSEGV" || evs[1].ModelID != "o/b" || evs[2].ModelID != "o/a" {
		t.Errorf("Events = %+v", evs)
	}
	if evs, err := s.Events(ctx, 1); err != nil || len(evs) != 1 {
		t.Errorf("Events(1) = %d, %v", len(evs), err)
	}
}

func TestChanged(t *testing.T) {
	s := storetest.MustOpen(t)
	fixed := at(0)
	s.SetClock(func() time.Time { return fixed })
	c0, err := s.Changed(ctx)
	if err != nil || !c0.IsZero() {
		t.Fatalf("Changed on a new store = %v, %v; want zero", c0, err)
	}
	upsert(t, s, "o/a")
	c1, _ := s.Changed(ctx)
	record(t, s, "o/a", result("tpu", "pass", at(-100))) // same clock tick, old result
	c2, _ := s.Changed(ctx)
	if !c1.After(c0) || !c2.After(c1) {
		t.Errorf("Changed did not move forward: %v %v %v", c0, c1, c2)
	}
}

func TestBackupAndIntegrity(t *testing.T) {
	s := storetest.MustOpen(t)
	storetest.MustSeed(t, s, 50, 200)
	if ok, err := s.IntegrityCheck(ctx); err != nil || ok != "ok" {
		t.Fatalf("IntegrityCheck = %q, %v", ok, err)
	}
	path := filepath.Join(t.TempDir(), "backups", "copy.db")
	if err := s.Backup(ctx, path); err != nil {
		t.Fatal(err)
	}
	// A backup killed half-way leaves its temporary copy: the next one
	// starts afresh, and the second overwrites the first.
	if err := os.WriteFile(path+".tmp", []byte("half a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(ctx, path); err != nil {
		t.Fatalf("Backup over a stale %s: %v", filepath.Base(path+".tmp"), err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary copy is still there after the backup (%v)", err)
	}
	b, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := b.IntegrityCheck(ctx); err != nil || ok != "ok" {
		t.Errorf("backup IntegrityCheck = %q, %v", ok, err)
	}
	want, _ := s.Summary(ctx, "")
	got, err := b.Summary(ctx, "")
	if err != nil || mustJSON(t, got) != mustJSON(t, want) {
		t.Errorf("backup summary = %+v, %v; want %+v", got, err, want)
	}
}

// TestConcurrentReadersAndWriter reads while one goroutine records results:
// WAL readers and the single writer connection must never see "database is
// locked" or any other error. Each reader must have read while the writer
// was between its first and last write (the overlap the test is about), and
// the writes must all have landed.
func TestConcurrentReadersAndWriter(t *testing.T) {
	s := storetest.MustOpen(t)
	ids := storetest.MustSeed(t, s, 200, 0)
	const writes = 1000
	statuses := []compat.Status{"pass", "fail", "oom", "pass"}
	done := make(chan struct{})
	var written atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	wg.Go(func() {
		defer close(done)
		for i := range writes {
			r := result("tpu", statuses[i%len(statuses)], at(i))
			if _, err := s.RecordResult(ctx, ids[i%len(ids)], r); err != nil {
				errs <- fmt.Errorf("write %d: %w", i, err)
				return
			}
			written.Add(1)
		}
	})
	reads := make([]int, 4)
	during := make([]int, 4) // reads that began after the first write and ended before the last
	for g := range reads {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				before := written.Load()
				var err error
				switch i % 4 {
				case 0:
					_, _, err = s.ListModels(ctx, store.ModelQuery{Target: "tpu", Sort: "status"})
				case 1:
					_, err = s.GetModel(ctx, ids[i%len(ids)], "tpu")
				case 2:
					_, err = s.Summary(ctx, "tpu")
				case 3:
					_, err = s.Events(ctx, 20)
				}
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", g, err)
					return
				}
				reads[g]++
				if before > 0 && written.Load() < writes {
					during[g]++
				}
				time.Sleep(500 * time.Microsecond) // leave the writer some CPU
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("reads per reader: %v, of which while the writer wrote: %v", reads, during)
	for g, n := range during {
		if n < 4 {
			t.Errorf("reader %d read %d times while the writer wrote (of %d reads); want at least 4", g, n, reads[g])
		}
	}
	if n := written.Load(); n != writes {
		t.Fatalf("%d writes, want %d", n, writes)
	}
	// Model k's last result is write 800+k: pass for k%4 in {0, 3}, else fail or oom.
	for st, want := range map[compat.Status]int{"pass": 100, "fail": 50, "oom": 50, "untested": 0} {
		got, _, err := s.ListModels(ctx, store.ModelQuery{Target: "tpu", Status: []compat.Status{st}, Limit: 1000})
		if err != nil || len(got) != want {
			t.Errorf("%s: %d models, %v; want %d", st, len(got), err, want)
		}
	}
	h, err := s.Events(ctx, 1000)
	if err != nil || len(h) == 0 {
		t.Errorf("Events = %d, %v", len(h), err)
	}
}

// TestEventsCarryTheirDevices: an event says how many devices the probe
// that made it ran on (its result's devices_used, issue 37's evidence),
// on every reader of events.
func TestEventsCarryTheirDevices(t *testing.T) {
	s := storetest.MustOpen(t)
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/sharded", SHA: "rev1"}}); err != nil {
		t.Fatal(err)
	}
	r := result("tpu", "pass", time.Now().Add(-time.Hour))
	r.DevicesUsed = 4
	r.Sharding = compat.Ptr(compat.ShardingTP)
	record(t, s, "org/sharded", r)
	all, err := s.Events(ctx, 10)
	if err != nil || len(all) != 1 || all[0].DevicesUsed != 4 {
		t.Fatalf("events %+v, %v; want one on 4 devices", all, err)
	}
	mine, err := s.ModelEvents(ctx, "org/sharded", 10)
	if err != nil || len(mine) != 1 || mine[0].DevicesUsed != 4 {
		t.Errorf("model events %+v, %v; want one on 4 devices", mine, err)
	}
	after, err := s.EventsAfter(ctx, 0, 10)
	if err != nil || len(after) != 1 || after[0].DevicesUsed != 4 {
		t.Errorf("events after 0: %+v, %v; want one on 4 devices", after, err)
	}
}
