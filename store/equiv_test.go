package store_test

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compare/comparetest"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// The store keeps what the site shows in tables of its own (current,
// runtime_current and the tallies beside them), kept up to date on every
// write. These tests drive every write path in a mixed, deterministic
// order and then check each aggregate answer against a recomputation from
// the raw rows (models and results), written here without the store's
// tables: the newest result per model and target, per model, and per
// model and runtime, found by sorting.

// equivRuntimes are the runtimes of the workload: four on tpu, two on
// cpu, one on cuda.
var equivRuntimes = []compat.Runtime{
	{Torch: "2.15.0", TorchTPU: "0.1.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e"},
	{Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e"},
	{Torch: "2.15.0", TorchTPU: "0.3.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e"},
	{Torch: "2.15.0", TorchTPU: "0.3.0", Transformers: "5.24.0", Harness: "2", Device: "TPU v6e"},
	{Torch: "2.15.0", Transformers: "5.23.0", Harness: "1", Device: "cpu"},
	{Torch: "2.16.0", Transformers: "5.24.0", Harness: "2", Device: "cpu"},
	{Torch: "2.15.0", Transformers: "5.23.0", Harness: "1", Device: "NVIDIA H200"},
}

func equivTarget(i int) compat.Target {
	switch {
	case i < 4:
		return compat.TargetTPU
	case i < 6:
		return compat.TargetCPU
	}
	return compat.TargetCUDA
}

// equivModelID is model i: mostly org/name, some one-part legacy ids.
func equivModelID(i int) string {
	if i%13 == 5 {
		return fmt.Sprintf("legacy-%02d", i)
	}
	return fmt.Sprintf("org%d/m-%02d", i%4, i)
}

var (
	equivTasks     = []string{"text-generation", "fill-mask", "", "image-classification", "text-to-image", ""}
	equivLibraries = []string{"transformers", "transformers", "", "sentence-transformers", "diffusers", "timm"}
	equivResTasks  = []string{"text-generation", "fill-mask", "feature-extraction", ""}
)

// equivUpsert is model i as a listing would bring it, with downloads d.
func equivUpsert(i int, d int64) store.ModelUpsert {
	return store.ModelUpsert{ID: equivModelID(i), Task: equivTasks[i%len(equivTasks)],
		Library: equivLibraries[i%len(equivLibraries)], Downloads: d, Likes: int64(i % 7), SHA: fmt.Sprintf("sha-%d", i)}
}

// equivResult is a random result of runtime rt at minute m: every status,
// with and without a signature or a failure class.
func equivResult(rng *rand.Rand, rt int, m int) compat.Result {
	r := compat.Result{Target: equivTarget(rt), Runtime: equivRuntimes[rt], TestedAt: t0.Add(time.Duration(m) * time.Minute),
		Revision: fmt.Sprintf("rev%d", rng.IntN(3)), Task: equivResTasks[rng.IntN(len(equivResTasks))]}
	switch p := rng.IntN(100); {
	case p < 40:
		r.Status = compat.StatusPass
		r.Metrics.TokensPerS = compat.Ptr(float64(rng.IntN(1000)) / 10)
	case p < 58:
		r.Status = compat.StatusFail
		r.Stage = compat.Ptr(compat.StageForward)
		switch rng.IntN(3) {
		case 0:
			r.Signature = compat.Ptr(fmt.Sprintf("unsupported_op:aten::op%d", rng.IntN(3)))
			r.FailureClass = compat.Ptr(compat.ClassUnsupportedOp)
			r.Op = compat.Ptr("aten::op")
		case 1:
			r.FailureClass = compat.Ptr(compat.ClassCompileError)
		}
	case p < 64:
		r.Status = compat.StatusOOM
		if rng.IntN(2) == 0 {
			r.FailureClass = compat.Ptr(compat.ClassOOM)
		}
	case p < 70:
		r.Status = compat.StatusTimeout
	case p < 76:
		r.Status = compat.StatusCrash
		if rng.IntN(2) == 0 {
			r.Signature = compat.Ptr("crash:SIGSEGV")
		}
	case p < 88:
		r.Status = compat.StatusSkipped
		r.Reason = compat.Ptr(compat.ReasonRemoteCode)
		if rng.IntN(2) == 0 {
			r.Reason = compat.Ptr(compat.ReasonUnsupportedLibrary)
		}
	default: // the scanner's own failures: never held against a model
		r.Status = compat.StatusError
		r.Stage = compat.Ptr(compat.StageEnv)
		r.FailureClass = compat.Ptr(compat.ClassDeviceUnavail)
	}
	// A train verdict on about half (the others are from before the
	// verdict matrix): every status, with and without a signature.
	if p := rng.IntN(100); p < 50 {
		st := []compat.Status{"pass", "pass", "pass", "fail", "oom", "crash", "skipped", "error"}[p%8]
		v := compat.Verdict{Status: st}
		if st != compat.StatusPass && p%3 == 0 {
			v.Signature = compat.Ptr(fmt.Sprintf("train:backward:aten::op%d", p%2))
		}
		r.Modes = map[string]compat.Verdict{compat.ModeTrain: v}
	}
	return r
}

// equivReadiness is a readiness whose min_devices are d (none when d is nil).
func equivReadiness(d []int) readiness.Readiness {
	r := readiness.Readiness{Hints: []readiness.Hint{}}
	if d != nil {
		r.MinDevices = map[string]int{}
		for i, g := range readiness.Generations {
			r.MinDevices[g.Name] = d[i%len(d)]
		}
	}
	return r
}

// equivStep is one step of the workload; check says whether the answers
// are compared after it.
type equivStep struct {
	name string
	run  func(t *testing.T, s *store.SQLite)
}

// equivWorkload is every write the store has, interleaved: listings that
// add models and move downloads, tasks and libraries; results one at a
// time and in batches, out of time order, duplicated, on every target and
// on runtimes that appear before older ones; readiness; flaky events;
// renames that merge two models' histories.
func equivWorkload() []equivStep {
	rng := rand.New(rand.NewPCG(28, 2026))
	downloads := map[int]int64{}
	minute := 1000
	nextMinute := func() int { minute += 1 + rng.IntN(3); return minute }
	var scanID int64
	results := func(n int, rts []int, batch bool, older bool) func(t *testing.T, s *store.SQLite) {
		return func(t *testing.T, s *store.SQLite) {
			t.Helper()
			var recs []store.Record
			for range n {
				i := rng.IntN(len(downloads))
				rt := rts[rng.IntN(len(rts))]
				m := nextMinute()
				if older || rng.IntN(8) == 0 { // recorded out of order
					m -= 200 + rng.IntN(400)
				}
				r := equivResult(rng, rt, m)
				if scanID > 0 && rng.IntN(3) == 0 {
					r.ScanID = compat.Ptr(scanID)
				}
				recs = append(recs, store.Record{ModelID: equivModelID(i), Result: r})
				if rng.IntN(10) == 0 { // the same probe again: a duplicate
					recs = append(recs, recs[len(recs)-1])
				}
			}
			if batch {
				if _, err := s.RecordResults(ctx, recs); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, rec := range recs {
				if _, err := s.RecordResult(ctx, rec.ModelID, rec.Result); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	listing := func(add int, changed float64) func(t *testing.T, s *store.SQLite) {
		return func(t *testing.T, s *store.SQLite) {
			t.Helper()
			n := len(downloads)
			for i := n; i < n+add; i++ {
				downloads[i] = int64(rng.IntN(40)) * 100 // ties, and some 0
			}
			var ups []store.ModelUpsert
			for i := range len(downloads) {
				if i < n && rng.Float64() < changed {
					downloads[i] = int64(rng.IntN(60)) * 100
				}
				u := equivUpsert(i, downloads[i])
				if i < n && rng.IntN(12) == 0 { // the Hub re-tags a model
					u.Task, u.Library = equivTasks[(i+1)%len(equivTasks)], equivLibraries[(i+2)%len(equivLibraries)]
				}
				ups = append(ups, u)
			}
			rng.Shuffle(len(ups), func(i, j int) { ups[i], ups[j] = ups[j], ups[i] })
			if err := s.UpsertModels(ctx, ups); err != nil {
				t.Fatal(err)
			}
		}
	}
	readinessStep := func(t *testing.T, s *store.SQLite) {
		t.Helper()
		devs := [][]int{nil, {1}, {1, 2}, {2, 4, 1, 1}, {8}}
		for i := range len(downloads) {
			if rng.IntN(3) == 0 {
				continue
			}
			u := store.ReadinessUpdate{ModelID: equivModelID(i), SHA: fmt.Sprintf("sha-%d", i), Version: 1 + rng.IntN(2),
				Full: rng.IntN(2) == 0, Readiness: equivReadiness(devs[rng.IntN(len(devs))])}
			if err := s.SetReadiness(ctx, u); err != nil && !errors.Is(err, store.ErrNotFound) { // renamed away
				t.Fatal(err)
			}
		}
	}
	return []equivStep{
		{"first listing", listing(40, 0)},
		{"readiness", readinessStep},
		{"results one by one", results(60, []int{0, 4}, false, false)},
		{"a scan's results in a batch", func(t *testing.T, s *store.SQLite) {
			id, err := s.StartScan(ctx, store.Scan{Trigger: "cli", Target: "tpu", StartedAt: t0, Runtime: equivRuntimes[1]})
			if err != nil {
				t.Fatal(err)
			}
			scanID = id
			results(120, []int{1, 4, 6}, true, false)(t, s)
		}},
		{"listing with new models and moved downloads", listing(12, 0.3)},
		{"more results, runtimes 2 and 5", results(150, []int{2, 5, 0, 1}, true, false)},
		{"an old runtime imported late", results(40, []int{3}, true, true)},
		{"flaky", func(t *testing.T, s *store.SQLite) {
			for i := range 5 {
				seen := equivResult(rng, i%7, nextMinute())
				if err := s.RecordFlaky(ctx, equivModelID(i*3), seen, compat.StatusPass); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"renames", func(t *testing.T, s *store.SQLite) {
			// Model 7 becomes model 8 (both have results: their histories
			// merge); model 11 is renamed to a new id; an alias for an id
			// that never was a model.
			downloads[8] += 50
			ups := []store.ModelUpsert{equivUpsert(8, downloads[8]), {ID: "neworg/renamed-11", Task: "fill-mask",
				Library: "transformers", Downloads: 777, Aliases: []string{equivModelID(11)}}}
			ups[0].Aliases = []string{equivModelID(7), "ghost/never"}
			if err := s.UpsertModels(ctx, ups); err != nil {
				t.Fatal(err)
			}
		}},
		{"results after the renames (through an alias too)", results(80, []int{0, 1, 2, 3, 4, 5, 6}, false, false)},
		{"readiness again", readinessStep},
		{"last listing: a tenth changed", listing(3, 0.1)},
		{"a listing that moves every model's downloads (the tallies follow them)", listing(0, 1)},
		{"a scan's listing: downloads and likes moved, new models, a rename, one listed twice, one left out", func(t *testing.T, s *store.SQLite) {
			n := len(downloads)
			for i := n; i < n+4; i++ {
				downloads[i] = int64(rng.IntN(40)) * 100
			}
			var ups []store.ModelUpsert
			for i := range len(downloads) {
				switch i {
				case 21: // left out of this listing: it stays as it was
					continue
				case 23, 24: // listed last, below
					continue
				case 20: // renamed: the new id comes with the old as its alias
					ups = append(ups, store.ModelUpsert{ID: "neworg/renamed-20", Task: equivTasks[20%len(equivTasks)],
						Library: equivLibraries[20%len(equivLibraries)], Downloads: downloads[20], Aliases: []string{equivModelID(20)}})
					continue
				}
				if i < n && rng.IntN(10) == 0 {
					downloads[i] += int64(1 + rng.IntN(300))
				}
				u := equivUpsert(i, downloads[i])
				switch {
				case i%17 == 3:
					u.Likes++
				case i%17 == 4:
					u.Tags, u.Gated, u.LastModified = []string{"pytorch", "<tag & more>"}, true, t0.Add(time.Duration(i)*time.Hour)
				}
				ups = append(ups, u)
			}
			twice := equivUpsert(22, downloads[22]+5) // listed twice: the later wins
			downloads[22] += 5
			ups = append(ups, twice)
			rng.Shuffle(len(ups), func(i, j int) { ups[i], ups[j] = ups[j], ups[i] })
			// Model 23 comes with model 24 as its alias (their histories
			// merge), and then 24 is listed again: a new model of that id.
			merged := equivUpsert(23, downloads[23])
			merged.Aliases = []string{equivModelID(24)}
			ups = append(ups, equivUpsert(22, downloads[22]), merged, equivUpsert(24, downloads[24]+1))
			if err := s.UpsertModels(ctx, ups); err != nil {
				t.Fatal(err)
			}
		}},
		{"the same listing again: nothing changes", func(t *testing.T, s *store.SQLite) {
			var ups []store.ModelUpsert
			for i := range len(downloads) {
				if i != 20 && i != 21 {
					ups = append(ups, equivUpsert(i, downloads[i]))
				}
			}
			if err := s.UpsertModels(ctx, ups); err != nil {
				t.Fatal(err)
			}
		}},
		{"a listing that moves every model's likes alone", func(t *testing.T, s *store.SQLite) {
			var ups []store.ModelUpsert
			for i := range len(downloads) {
				if i != 20 && i != 21 {
					u := equivUpsert(i, downloads[i])
					u.Likes += 3
					ups = append(ups, u)
				}
			}
			if err := s.UpsertModels(ctx, ups); err != nil {
				t.Fatal(err)
			}
		}},
	}
}

// runEquivWorkload runs the workload on s, checking the answers after
// every step when check is set.
func runEquivWorkload(t *testing.T, s *store.SQLite, path string, check bool) {
	for _, st := range equivWorkload() {
		st.run(t, s)
		if check {
			t.Run(st.name, func(t *testing.T) { checkEquiv(t, s, path) })
		}
	}
}

// listingModes are the ways a listing is written: asking the database per
// model, reading every model at once (as a scan's listing of thousands
// does) and writing each, and reading every model at once and writing
// those that touch no other in one batch.
var listingModes = []listingMode{
	{"per model", 1 << 30, false},
	{"bulk, one by one", 2, false},
	{"bulk, in a batch", 2, true},
}

type listingMode = struct {
	name  string
	bulk  int
	batch bool
}

// openInMode opens a new store whose listings are written in mode (until
// the test ends), and returns it with its database's path.
func openInMode(t *testing.T, mode listingMode) (*store.SQLite, string) {
	t.Cleanup(store.SetBulkListing(mode.bulk))
	t.Cleanup(store.SetBatchListing(mode.batch))
	path := t.TempDir() + "/scanner.db"
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// TestAggregatesMatchRecomputation: after every step of the workload, the
// summary, failure groups, runtimes, comparisons and lists equal a
// recomputation from the raw rows, whichever way listings are written.
func TestAggregatesMatchRecomputation(t *testing.T) {
	for _, mode := range listingModes {
		t.Run(mode.name, func(t *testing.T) {
			s, path := openInMode(t, mode)
			runEquivWorkload(t, s, path, true)
			rts, err := s.Runtimes(ctx, "")
			if err != nil || len(rts) != len(equivRuntimes) {
				t.Errorf("%d runtimes, %v; the workload has %d", len(rts), err, len(equivRuntimes))
			}
			// The train lists were there to check: the workload's train
			// verdicts make both kinds, on kept comparisons and others.
			n := map[compare.Kind]int{}
			for _, b := range rts {
				for _, h := range rts {
					if b.Ref == h.Ref {
						continue
					}
					p, err := s.Compare(ctx, store.CompareQuery{Base: b.Ref, Head: h.Ref})
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range compare.TrainListed {
						n[k] += p.Headline.Counts[k]
					}
				}
			}
			if n[compare.TrainFixed] < 5 || n[compare.TrainRegressed] < 5 {
				t.Errorf("train changes over every comparison: %v; the workload should make several of each", n)
			}
			t.Logf("train changes over every comparison: %v", n)
		})
	}
}

// raw is the database read without the store: models and every result.
type raw struct {
	models  map[string]rawModel
	ids     []string // sorted
	results []rawResult
}

type rawModel struct {
	task, library string
	downloads     int64
	readiness     sql.NullString
}

type rawResult struct {
	id                           int64
	model, target, status        string
	reason, sig, class, op, task sql.NullString
	train, trainSig              string // the train verdict's status and signature, "" for none
	tested                       int64
	key                          string
	ref                          compat.RuntimeRef
	runtime                      string
}

// openRaw opens the database at path without the store, to read.
func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// readRaw reads the models and results tables of the database at path.
func readRaw(t *testing.T, path string) raw {
	t.Helper()
	db := openRaw(t, path)
	defer db.Close()
	r := raw{models: map[string]rawModel{}}
	rows, err := db.Query(`SELECT id, task, library, downloads, readiness FROM models`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var m rawModel
		if err := rows.Scan(&id, &m.task, &m.library, &m.downloads, &m.readiness); err != nil {
			t.Fatal(err)
		}
		r.models[id] = m
		r.ids = append(r.ids, id)
	}
	rows.Close()
	slices.Sort(r.ids)
	rows, err = db.Query(`SELECT id, model_id, target, status, reason, signature, failure_class, op, task, tested_at,
		runtime_key, torch, torch_tpu, transformers, harness, runtime, modes FROM results`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			x     rawResult
			modes sql.NullString
		)
		if err := rows.Scan(&x.id, &x.model, &x.target, &x.status, &x.reason, &x.sig, &x.class, &x.op, &x.task, &x.tested,
			&x.key, &x.ref.Torch, &x.ref.TorchTPU, &x.ref.Transformers, &x.ref.Harness, &x.runtime, &modes); err != nil {
			t.Fatal(err)
		}
		if modes.Valid { // the verdict matrix, read here from its JSON
			var m map[string]compat.Verdict
			if err := json.Unmarshal([]byte(modes.String), &m); err != nil {
				t.Fatal(err)
			}
			if v, ok := m[compat.ModeTrain]; ok {
				x.train = string(v.Status)
				if v.Signature != nil {
					x.trainSig = *v.Signature
				}
			}
		}
		x.ref.Target = compat.Target(x.target)
		r.results = append(r.results, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// newer orders results by tested_at, then id.
func newer(a, b rawResult) bool { return a.tested > b.tested || (a.tested == b.tested && a.id > b.id) }

// newest keeps the newest result of each group.
func newest(rs []rawResult, group func(rawResult) string) map[string]rawResult {
	out := map[string]rawResult{}
	for _, r := range rs {
		if cur, ok := out[group(r)]; !ok || newer(r, cur) {
			out[group(r)] = r
		}
	}
	return out
}

// onTarget is each model's newest result on target ("" = any).
func (r raw) onTarget(target compat.Target) map[string]rawResult {
	var rs []rawResult
	for _, x := range r.results {
		if target == "" || x.target == string(target) {
			rs = append(rs, x)
		}
	}
	return newest(rs, func(x rawResult) string { return x.model })
}

// failKey is the root cause of a result held against its model.
func failKey(x rawResult) string {
	switch {
	case !compat.Status(x.status).HeldAgainstModel():
		return ""
	case x.sig.Valid:
		return x.sig.String
	case x.class.Valid:
		return x.class.String
	}
	return string(statusClass(compat.Status(x.status)))
}

// statusClass is the class a status implies when a result has none,
// written out here apart from the store's rule.
func statusClass(s compat.Status) compat.FailureClass {
	if c, ok := map[compat.Status]compat.FailureClass{"oom": "oom", "timeout": "timeout", "crash": "crash"}[s]; ok {
		return c
	}
	return compat.ClassOther
}

func ratio(a, b int64) *float64 {
	if b == 0 {
		return nil
	}
	r := float64(a) / float64(b)
	return &r
}

// wantSummary recomputes Summary(target) but for LastScan.
func (r raw) wantSummary(t *testing.T, target compat.Target) store.Summary {
	cur := r.onTarget(target)
	sum := store.Summary{Models: len(r.ids), Counts: map[compat.Status]int{}, Fit: store.Fit{One: map[string]int{}}}
	for _, st := range compat.Statuses {
		sum.Counts[st] = 0
	}
	for _, g := range readiness.Generations {
		sum.Fit.One[g.Name] = 0
	}
	var passDL, verdictDL int64
	tasks := map[store.TaskTally]store.TaskTally{}
	var latest *rawResult
	anyTarget := r.onTarget("")
	for _, id := range r.ids {
		m := r.models[id]
		st := compat.StatusUntested
		if x, ok := cur[id]; ok {
			st = compat.Status(x.status)
			if latest == nil || x.tested > latest.tested || (x.tested == latest.tested && id < latest.model) {
				latest = &x
			}
		}
		sum.Counts[st]++
		if st.IsVerdict() {
			sum.Tested++
			verdictDL += m.downloads
			if st == compat.StatusPass {
				passDL += m.downloads
			}
		}
		// Task tallies are over each model's newest result on any target.
		k := store.TaskTally{Task: m.task, Library: m.library}
		if x, ok := anyTarget[id]; ok {
			k.Tested = true
			if k.Task == "" {
				k.Task = x.task.String
			}
			k.LibraryRejected = x.status == "skipped" && x.reason.String == string(compat.ReasonUnsupportedLibrary)
		}
		tt := tasks[k]
		tt.Task, tt.Library, tt.Tested, tt.LibraryRejected = k.Task, k.Library, k.Tested, k.LibraryRejected
		tt.Models++
		tt.Downloads += m.downloads
		tasks[k] = tt
		if m.readiness.Valid {
			var rd readiness.Readiness
			if err := json.Unmarshal([]byte(m.readiness.String), &rd); err != nil {
				t.Fatal(err)
			}
			if rd.MinDevices != nil {
				sum.Fit.Known++
				for _, g := range readiness.Generations {
					if rd.MinDevices[g.Name] == 1 {
						sum.Fit.One[g.Name]++
					}
				}
			}
		}
	}
	if sum.Tested > 0 {
		sum.PassRate = ratio(int64(sum.Counts[compat.StatusPass]), int64(sum.Tested))
	}
	sum.WeightedPassRate = ratio(passDL, verdictDL)
	for _, tt := range tasks {
		sum.Tasks = append(sum.Tasks, tt)
	}
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	slices.SortFunc(sum.Tasks, func(a, b store.TaskTally) int {
		return cmp.Or(strings.Compare(a.Task, b.Task), strings.Compare(a.Library, b.Library),
			b2i(a.Tested)-b2i(b.Tested), b2i(a.LibraryRejected)-b2i(b.LibraryRejected))
	})
	if sum.Tasks == nil {
		sum.Tasks = []store.TaskTally{}
	}
	if latest != nil {
		sum.Runtime = new(compat.Runtime)
		if err := json.Unmarshal([]byte(latest.runtime), sum.Runtime); err != nil {
			t.Fatal(err)
		}
	}
	return sum
}

// wantFailures recomputes Failures(target, limit).
func (r raw) wantFailures(target compat.Target, limit int) []store.FailureGroup {
	cur := r.onTarget(target)
	var total int64
	byKey := map[string][]string{}
	for _, id := range r.ids {
		total += r.models[id].downloads
		if x, ok := cur[id]; ok && failKey(x) != "" {
			byKey[failKey(x)] = append(byKey[failKey(x)], id)
		}
	}
	groups := []store.FailureGroup{}
	for key, ids := range byKey {
		g := store.FailureGroup{Signature: key, Models: len(ids), Examples: []string{}}
		slices.SortFunc(ids, func(a, b string) int {
			return cmp.Or(cmp.Compare(r.models[b].downloads, r.models[a].downloads), strings.Compare(a, b))
		})
		for i, id := range ids {
			g.Downloads += r.models[id].downloads
			if i < 5 {
				g.Examples = append(g.Examples, id)
			}
		}
		top := cur[ids[0]]
		g.FailureClass = compat.FailureClass(top.class.String)
		if !top.class.Valid {
			g.FailureClass = statusClass(compat.Status(top.status))
		}
		if top.op.Valid {
			g.Op = &top.op.String
		}
		if total > 0 {
			g.DownloadShare = float64(g.Downloads) / float64(total)
		}
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b store.FailureGroup) int {
		return cmp.Or(cmp.Compare(b.Downloads, a.Downloads), strings.Compare(a.Signature, b.Signature))
	})
	return groups[:min(limit, len(groups))]
}

// runtimeEntries is each model's newest result on each runtime, as
// comparison entries, by runtime key.
func (r raw) runtimeEntries() map[string][]compare.Entry {
	byRuntime := map[string][]rawResult{}
	for _, x := range r.results {
		byRuntime[x.ref.Key()] = append(byRuntime[x.ref.Key()], x)
	}
	out := map[string][]compare.Entry{}
	for key, rs := range byRuntime {
		for _, x := range newest(rs, func(x rawResult) string { return x.model }) {
			out[key] = append(out[key], compare.Entry{ID: x.model, Downloads: r.models[x.model].downloads,
				Status: compat.Status(x.status), Signature: failKey(x), Train: compat.Status(x.train), TrainSignature: x.trainSig})
		}
		slices.SortFunc(out[key], func(a, b compare.Entry) int { return strings.Compare(a.ID, b.ID) })
	}
	return out
}

// wantRuntimes recomputes Runtimes(target) but for the versions.
func (r raw) wantRuntimes(target compat.Target) []store.RuntimeStats {
	entries := r.runtimeEntries()
	stats := map[string]*store.RuntimeStats{}
	for _, x := range r.results {
		if target != "" && x.target != string(target) {
			continue
		}
		st := stats[x.ref.Key()]
		if st == nil {
			st = &store.RuntimeStats{Ref: x.ref, FirstSeen: time.Unix(0, x.tested).UTC(), LastSeen: time.Unix(0, x.tested).UTC()}
			stats[x.ref.Key()] = st
		}
		if tt := time.Unix(0, x.tested).UTC(); tt.Before(st.FirstSeen) {
			st.FirstSeen = tt
		} else if tt.After(st.LastSeen) {
			st.LastSeen = tt
		}
	}
	out := []store.RuntimeStats{}
	for key, st := range stats {
		var passDL, verdictDL int64
		for _, e := range entries[key] {
			st.Models++
			if e.Status.IsVerdict() {
				st.Tested++
				verdictDL += e.Downloads
			}
			if e.Status == compat.StatusPass {
				st.Passed++
				passDL += e.Downloads
			}
		}
		if st.Tested > 0 {
			st.PassRate = ratio(int64(st.Passed), int64(st.Tested))
		}
		st.WeightedPassRate = ratio(passDL, verdictDL)
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b store.RuntimeStats) int {
		return cmp.Or(b.FirstSeen.Compare(a.FirstSeen), strings.Compare(a.Ref.Key(), b.Ref.Key()))
	})
	return out
}

// listed is one row of a list walk: the model and its shown status.
type listed struct {
	ID     string
	Status compat.Status
	Result int64 // tested_at of the shown result, 0 when untested
}

// wantList is every model, most downloaded first, with its result on target.
func (r raw) wantList(target compat.Target) []listed {
	cur := r.onTarget(target)
	out := []listed{}
	for _, id := range r.ids {
		l := listed{ID: id, Status: compat.StatusUntested}
		if x, ok := cur[id]; ok {
			l.Status, l.Result = compat.Status(x.status), x.tested
		}
		out = append(out, l)
	}
	slices.SortStableFunc(out, func(a, b listed) int { return cmp.Compare(r.models[b.ID].downloads, r.models[a.ID].downloads) })
	return out
}

// walkList reads every page of the list on target, most downloaded first.
func walkList(t *testing.T, s *store.SQLite, target compat.Target) []listed {
	t.Helper()
	out := []listed{}
	q := store.ModelQuery{Target: target, Limit: 7}
	for {
		ms, next, err := s.ListModels(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			l := listed{ID: m.ID, Status: m.ModelStatus()}
			if m.Result != nil {
				l.Result = m.Result.TestedAt.UnixNano()
			}
			out = append(out, l)
		}
		if next == "" {
			return out
		}
		q.Cursor = next
	}
}

// checkEquiv compares every aggregate answer of s with the recomputation
// from the raw rows of the database at path.
func checkEquiv(t *testing.T, s *store.SQLite, path string) {
	t.Helper()
	r := readRaw(t, path)
	if len(r.ids) == 0 {
		t.Fatal("the workload wrote nothing")
	}
	for _, target := range []compat.Target{"", "tpu", "cpu", "cuda"} {
		got, err := s.Summary(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		got.LastScan = nil
		if want := r.wantSummary(t, target); !reflect.DeepEqual(got, want) {
			t.Errorf("Summary(%q):\n got %s\nwant %s", target, jsonOf(got), jsonOf(want))
		}
		gotF, err := s.Failures(ctx, target, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if want := r.wantFailures(target, 1000); !reflect.DeepEqual(gotF, want) {
			t.Errorf("Failures(%q):\n got %s\nwant %s", target, jsonOf(gotF), jsonOf(want))
		}
		if top, err := s.Failures(ctx, target, 2); err != nil || !reflect.DeepEqual(top, r.wantFailures(target, 2)) {
			t.Errorf("Failures(%q, 2) = %s, %v", target, jsonOf(top), err)
		}
		gotR, err := s.Runtimes(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		for i := range gotR {
			gotR[i].Version = 0
		}
		if want := r.wantRuntimes(target); !reflect.DeepEqual(gotR, want) {
			t.Errorf("Runtimes(%q):\n got %s\nwant %s", target, jsonOf(gotR), jsonOf(want))
		}
		if got, want := walkList(t, s, target), r.wantList(target); !reflect.DeepEqual(got, want) {
			t.Errorf("ListModels(%q) walk:\n got %v\nwant %v", target, got, want)
		}
	}
	checkComparisons(t, s, r)
}

// checkComparisons compares every ordered pair of runtimes (on any
// targets) with comparetest.Compare of the recomputed entries.
func checkComparisons(t *testing.T, s *store.SQLite, r raw) {
	t.Helper()
	rts, err := s.Runtimes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	entries := r.runtimeEntries()
	for _, base := range rts {
		for _, head := range rts {
			if base.Ref == head.Ref {
				continue
			}
			want := comparetest.Compare(entries[base.Ref.Key()], entries[head.Ref.Key()])
			got := storeCompare(t, s, base.Ref, head.Ref)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("compare %s → %s:\n got %s\nwant %s", base.Ref.Key(), head.Ref.Key(), jsonOf(got), jsonOf(want))
			}
			for _, limit := range []int{1, 4, 0} {
				if got := pagedCompare(t, s, base.Ref, head.Ref, limit); !reflect.DeepEqual(got, want) {
					t.Errorf("compare %s → %s in pages of %d:\n got %s\nwant %s", base.Ref.Key(), head.Ref.Key(), limit, jsonOf(got), jsonOf(want))
				}
			}
		}
	}
}

// storeCompare is the store's whole comparison of base and head.
func storeCompare(t *testing.T, s *store.SQLite, base, head compat.RuntimeRef) compare.Result {
	t.Helper()
	b, err := s.RuntimeResults(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.RuntimeResults(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	return comparetest.Compare(b, h)
}

// pagedCompare is the store's comparison of base and head read in pages
// of limit models per list, each list followed to its end by its cursors.
func pagedCompare(t *testing.T, s *store.SQLite, base, head compat.RuntimeRef, limit int) compare.Result {
	t.Helper()
	first, err := s.Compare(ctx, store.CompareQuery{Base: base, Head: head, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	out := first.Result
	for _, kind := range append(slices.Clone(compare.Listed), compare.TrainListed...) {
		list := out.List(kind)
		*list = slices.Clone(*list)
		for pages, next := 0, first.Next[kind]; next != ""; pages++ {
			if pages > first.Headline.Counts[kind] {
				t.Fatalf("%s: more pages than models", kind)
			}
			p, err := s.Compare(ctx, store.CompareQuery{Base: base, Head: head, Limit: limit, Cursor: next})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Headline, first.Headline) {
				t.Errorf("%s: a later page's headline differs", kind)
			}
			for _, other := range append(slices.Clone(compare.Listed), compare.TrainListed...) {
				if other != kind && (p.Next[other] != "" || len(listOf(p.Result, other)) > 0) {
					t.Errorf("%s's next page has items or a cursor of %s", kind, other)
				}
			}
			if len(listOf(p.Result, kind)) == 0 {
				t.Fatalf("%s: an empty page behind a cursor", kind)
			}
			*list = append(*list, listOf(p.Result, kind)...)
			next = p.Next[kind]
		}
		if got := len(*list); got != first.Headline.Counts[kind] {
			t.Errorf("%s: %d items, its total says %d", kind, got, first.Headline.Counts[kind])
		}
	}
	return out
}

func listOf(r compare.Result, k compare.Kind) []compare.Item {
	return *r.List(k)
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// The fixture: testdata/equiv-v6.db.gz is the workload's database as the
// store of schema 6 (before the tallies of migration 7) wrote it, and
// testdata/equiv-v6.json that store's answers on it. Both were written
// once, by that code, with STORE_WRITE_EQUIV_FIXTURE=1; never rewrite them
// with a later store, whose answers they pin.
const (
	equivFixtureDB      = "testdata/equiv-v6.db.gz"
	equivFixtureAnswers = "testdata/equiv-v6.json"
)

// equivAnswers are the store's aggregate answers on a database.
type equivAnswers struct {
	Summaries   map[compat.Target]store.Summary
	Failures    map[compat.Target][]store.FailureGroup
	Runtimes    map[compat.Target][]store.RuntimeStats
	Lists       map[compat.Target][]listed
	Comparisons map[string]compare.Result // "base head" keys
}

func answersOf(t *testing.T, s *store.SQLite) equivAnswers {
	t.Helper()
	a := equivAnswers{Summaries: map[compat.Target]store.Summary{}, Failures: map[compat.Target][]store.FailureGroup{},
		Runtimes: map[compat.Target][]store.RuntimeStats{}, Lists: map[compat.Target][]listed{}, Comparisons: map[string]compare.Result{}}
	for _, target := range []compat.Target{"", "tpu", "cpu", "cuda"} {
		sum, err := s.Summary(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		a.Summaries[target] = sum
		if a.Failures[target], err = s.Failures(ctx, target, 1000); err != nil {
			t.Fatal(err)
		}
		rts, err := s.Runtimes(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rts {
			rts[i].Version = 0 // opaque: it counts changes
		}
		a.Runtimes[target] = rts
		a.Lists[target] = walkList(t, s, target)
	}
	for _, base := range a.Runtimes[""] {
		for _, head := range a.Runtimes[""] {
			if base.Ref != head.Ref {
				a.Comparisons[base.Ref.Key()+" "+head.Ref.Key()] = storeCompare(t, s, base.Ref, head.Ref)
			}
		}
	}
	return a
}

// TestWriteEquivFixture writes the fixture when STORE_WRITE_EQUIV_FIXTURE
// is set (see equivFixtureDB).
func TestWriteEquivFixture(t *testing.T) {
	if os.Getenv("STORE_WRITE_EQUIV_FIXTURE") == "" {
		t.Skip("writes testdata/equiv-v6.* only when STORE_WRITE_EQUIV_FIXTURE is set")
	}
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	runEquivWorkload(t, s, path, false)
	a := answersOf(t, s)
	if err := s.Backup(ctx, path+".copy"); err != nil { // compacted
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(path + ".copy")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(db)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(equivFixtureDB, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(a, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(equivFixtureAnswers, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEquivFixtureMigrates: the fixture written by the store of schema 6,
// opened (and migrated) by this one, gives the answers that store gave,
// and those of the recomputation.
func TestEquivFixtureMigrates(t *testing.T) {
	path := storetest.Unpack(t, equivFixtureDB)
	wantJSON, err := os.ReadFile(equivFixtureAnswers)
	if err != nil {
		t.Fatal(err)
	}
	var want equivAnswers
	if err := json.Unmarshal(wantJSON, &want); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := answersOf(t, s)
	// Through JSON, as the fixture's answers were stored: every field
	// they have is the same (the train lists and counts came later; the
	// fixture has no train verdict, so they are empty and 0).
	gb, _ := json.Marshal(got)
	wb := wantJSON // as written, not through today's types (which have more fields)
	var g, w any
	if err := json.Unmarshal(gb, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(wb, &w); err != nil {
		t.Fatal(err)
	}
	if path, ok := storetest.KeepsFields(w, g, "$"); !ok {
		t.Errorf("answers on the migrated fixture differ from schema 6's at %s:\n got %.3000s\nwant %.3000s", path, gb, wb)
	}
	for key, c := range got.Comparisons {
		if len(c.TrainFixed)+len(c.TrainRegressed) != 0 || c.Headline.Counts[compare.TrainFixed]+c.Headline.Counts[compare.TrainRegressed] != 0 {
			t.Errorf("%s: train changes on a fixture without train verdicts: %+v", key, c.Headline.Counts)
		}
	}
	if len(want.Comparisons) < 12 || len(want.Lists[""]) < 40 {
		t.Fatalf("the fixture is too small: %d comparisons, %d models", len(want.Comparisons), len(want.Lists[""]))
	}
	checkEquiv(t, s, path)
}

// TestAggregatesOnAGivenDatabase checks the database at $STORE_EQUIV_DB
// (the Hub-scale benchmark's, say) as TestAggregatesMatchRecomputation
// does, but for lists read in pages of 1000 and, of each comparison, its
// headline and the first page of each list. It writes nothing the store
// would not (opening it settles it).
func TestAggregatesOnAGivenDatabase(t *testing.T) {
	path := os.Getenv("STORE_EQUIV_DB")
	if path == "" {
		t.Skip("checks a given database only when STORE_EQUIV_DB names it")
	}
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := readRaw(t, path)
	for _, target := range []compat.Target{"", "tpu", "cpu", "cuda"} {
		got, err := s.Summary(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		got.LastScan = nil
		if want := r.wantSummary(t, target); !reflect.DeepEqual(got, want) {
			t.Errorf("Summary(%q):\n got %s\nwant %s", target, jsonOf(got), jsonOf(want))
		}
		if gotF, err := s.Failures(ctx, target, 1000); err != nil || !reflect.DeepEqual(gotF, r.wantFailures(target, 1000)) {
			t.Errorf("Failures(%q) = %s, %v; want %s", target, jsonOf(gotF), err, jsonOf(r.wantFailures(target, 1000)))
		}
		gotR, err := s.Runtimes(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		for i := range gotR {
			gotR[i].Version = 0
		}
		if want := r.wantRuntimes(target); !reflect.DeepEqual(gotR, want) {
			t.Errorf("Runtimes(%q):\n got %s\nwant %s", target, jsonOf(gotR), jsonOf(want))
		}
	}
	rts, err := s.Runtimes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	entries := r.runtimeEntries()
	for _, base := range rts {
		for _, head := range rts {
			if base.Ref == head.Ref {
				continue
			}
			want := comparetest.Compare(entries[base.Ref.Key()], entries[head.Ref.Key()])
			got, err := s.Compare(ctx, store.CompareQuery{Base: base.Ref, Head: head.Ref})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Headline, want.Headline) {
				t.Errorf("compare %s → %s: headline %s, want %s", base.Ref.Key(), head.Ref.Key(), jsonOf(got.Headline), jsonOf(want.Headline))
			}
			for _, kind := range append(slices.Clone(compare.Listed), compare.TrainListed...) {
				w := listOf(want, kind)
				if g := listOf(got.Result, kind); !reflect.DeepEqual(g, w[:min(len(w), 100)]) {
					t.Errorf("compare %s → %s: first page of %s differs", base.Ref.Key(), head.Ref.Key(), kind)
				}
			}
		}
	}
}

// TestListingModesWriteTheSameRows: the workload, its listings written
// each way (listingModes), leaves the same rows in every table a listing
// writes or the tallies read (the runtimes' versions aside: they count
// changes).
func TestListingModesWriteTheSameRows(t *testing.T) {
	tables := []string{"models", "model_aliases", "current", "runtime_current", "status_tallies", "fail_tallies",
		"task_tallies", "fit_tallies", "runtime_tallies", "runtime_pairs", "compare_pairs", "compare_items", "events"}
	var first [][]string
	for _, mode := range listingModes {
		t.Run(mode.name, func(t *testing.T) {
			s, path := openInMode(t, mode)
			tick := t0
			s.SetClock(func() time.Time { tick = tick.Add(time.Second); return tick })
			var got [][]string // after each step, each table's rows
			for _, st := range equivWorkload() {
				st.run(t, s)
				for _, table := range tables {
					got = append(got, dumpTable(t, path, table))
				}
			}
			if n := len(got) - len(tables); len(got[n]) < 40 || len(got[n+2]) < 160 { // models, current
				t.Fatalf("the workload wrote too little: %d models, %d current rows", len(got[n]), len(got[n+2]))
			}
			if first == nil {
				first = got
				return
			}
			for i := range got {
				if !slices.Equal(got[i], first[i]) {
					t.Errorf("step %d: %s differs from %s's:\n got %q\nwant %q", i/len(tables), tables[i%len(tables)],
						listingModes[0].name, got[i], first[i])
				}
			}
		})
	}
}

// dumpTable is every row of table in the database at path, each printed,
// sorted; an event's epoch (random per database) is left out.
func dumpTable(t *testing.T, path, table string) []string {
	t.Helper()
	db := openRaw(t, path)
	defer db.Close()
	rows, err := db.Query("SELECT * FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			if table == "events" && cols[i] == "epoch" {
				continue
			}
			fmt.Fprintf(&b, "%s=%v ", cols[i], v)
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
