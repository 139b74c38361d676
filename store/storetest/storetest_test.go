package storetest

import (
	"bytes"
	"compress/gzip"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestModelID: "orgNN/model-NNNNN" with NN the index modulo 40, and every
// 50th (index 49, 99, ...) a one-part legacy id; written out by hand.
func TestModelID(t *testing.T) {
	for i, want := range map[int]string{
		0:     "org00/model-00000",
		1:     "org01/model-00001",
		39:    "org39/model-00039",
		40:    "org00/model-00040",
		41:    "org01/model-00041",
		48:    "org08/model-00048",
		49:    "model-00049",
		50:    "org10/model-00050",
		99:    "model-00099",
		100:   "org20/model-00100",
		12345: "org25/model-12345",
		12349: "model-12349",
	} {
		if got := ModelID(i); got != want {
			t.Errorf("ModelID(%d) = %q, want %q", i, got, want)
		}
	}
}

// history is every result of every model of s, by model id, oldest first.
func history(t *testing.T, s *store.SQLite, ids []string) map[string][]compat.Result {
	t.Helper()
	out := map[string][]compat.Result{}
	for _, id := range ids {
		rs, err := s.History(context.Background(), id, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(rs)
		out[id] = rs
	}
	return out
}

// TestSeed: 30 models, 9 of them ("every 10th") untested, and 113
// results going round the 27 others: four whole rounds and five more.
// Each result is a minute after the one before from Epoch; the fourth
// round (results 81–107) is on cpu, the rest on tpu with Runtime.
func TestSeed(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t)
	var calls []int
	ids, err := SeedScale(ctx, s, 30, 113, 1, func(done int) { calls = append(calls, done) })
	if err != nil {
		t.Fatal(err)
	}
	// Fewer results than SeedBatch: one transaction, one progress call.
	if !slices.Equal(calls, []int{113}) {
		t.Errorf("progress calls %v, want [113]", calls)
	}
	want := make([]string, 30)
	for i := range want {
		want[i] = ModelID(i)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	hist := history(t, s, ids)
	total, cpu, revs := 0, 0, map[string]string{}
	for i, id := range ids {
		rs := hist[id]
		total += len(rs)
		if i%10 == 9 {
			if len(rs) != 0 {
				t.Errorf("model %d (%s): %d results, want none (every 10th untested)", i, id, len(rs))
			}
			continue
		}
		// k is the model's place among the tested: i less the untested before it.
		k := i - i/10
		wantN := 4
		if k < 5 {
			wantN = 5
		}
		if len(rs) != wantN {
			t.Errorf("model %d (%s): %d results, want %d", i, id, len(rs), wantN)
			continue
		}
		for round, r := range rs {
			j := round*27 + k
			if at := Epoch.Add(time.Duration(j) * time.Minute); !r.TestedAt.Equal(at) {
				t.Errorf("model %d round %d: tested at %v, want %v", i, round, r.TestedAt, at)
			}
			wantTarget, wantRT := compat.TargetTPU, Runtime
			if round == 3 {
				cpu++
				wantTarget = compat.TargetCPU
				wantRT.TorchTPU, wantRT.Device = "", "cpu"
			}
			if r.Target != wantTarget || r.Runtime != wantRT {
				t.Errorf("model %d round %d: %s on %+v, want %s on %+v", i, round, r.Target, r.Runtime, wantTarget, wantRT)
			}
			// One revision per model, and a repro that reproduces the result.
			if rev, ok := revs[id]; ok && rev != r.Revision {
				t.Errorf("model %d: revisions %s and %s", i, rev, r.Revision)
			}
			revs[id] = r.Revision
			// A skip has no mode; its repro still names the full probe Seed asked for.
			if want := compat.Repro(id, r.Revision, r.Target, compat.ModeFull); r.Repro != want {
				t.Errorf("model %d round %d: repro %q, want %q", i, round, r.Repro, want)
			}
		}
	}
	if total != 113 || cpu != 27 {
		t.Errorf("%d results, %d on cpu; want 113, 27", total, cpu)
	}
	// Revisions are 40 hex digits, one model's not another's.
	seen := map[string]bool{}
	for id, rev := range revs {
		if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(rev) || seen[rev] {
			t.Errorf("%s: revision %q (40 hex digits, its own)", id, rev)
		}
		seen[rev] = true
	}
	if len(revs) != 27 {
		t.Errorf("%d models with results, want 27", len(revs))
	}
}

// TestSeedDeterministic: the same sizes give the same data, models and
// results alike, in two stores.
func TestSeedDeterministic(t *testing.T) {
	ctx := context.Background()
	a, b := MustOpen(t), MustOpen(t)
	ida := MustSeed(t, a, 25, 60)
	idb, err := Seed(ctx, b, 25, 60)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ida, idb) {
		t.Fatalf("ids differ: %v, %v", ida, idb)
	}
	la, err := Listing(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := Listing(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(la) != 25 || !reflect.DeepEqual(la, lb) {
		t.Errorf("listings differ (%d, %d models)", len(la), len(lb))
	}
	ha, hb := history(t, a, ida), history(t, b, idb)
	n := 0
	for _, id := range ida {
		n += len(ha[id])
		if !reflect.DeepEqual(ha[id], hb[id]) {
			t.Errorf("%s: results differ:\n%+v\n%+v", id, ha[id], hb[id])
		}
	}
	if n != 60 {
		t.Errorf("%d results, want 60", n)
	}
}

// TestSeedModels: downloads and likes repeat (ties), and the listing has
// every model; no results when asked for none, nor when no model is tested.
func TestSeedModels(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t)
	ids := MustSeed(t, s, 200, 0)
	l, err := Listing(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	downloads, likes := map[int64]int{}, map[int64]int{}
	for _, u := range l {
		downloads[u.Downloads]++
		likes[u.Likes]++
	}
	// Ties, among downloads spread wide enough to order by (not all one
	// value): at least half distinct.
	if len(l) != 200 || len(downloads) == 200 || len(likes) == 200 || len(downloads) < 100 || len(likes) < 100 {
		t.Errorf("%d models, %d distinct downloads, %d distinct likes: want 200, ties in both and a spread", len(l), len(downloads), len(likes))
	}
	// Some gated models, most not; each model last modified before the
	// first result (Epoch), at its own time.
	gated, modified := 0, map[time.Time]bool{}
	for _, u := range l {
		if u.Gated {
			gated++
		}
		if u.LastModified.After(Epoch) {
			t.Errorf("%s last modified %v, after the first result at %v", u.ID, u.LastModified, Epoch)
		}
		modified[u.LastModified] = true
	}
	if gated < 2 || gated > 20 || len(modified) != 200 {
		t.Errorf("%d of 200 gated (want some, at most a tenth), %d distinct modification times (want 200)", gated, len(modified))
	}
	for _, id := range ids {
		if rs, err := s.History(ctx, id, "", 10); err != nil || len(rs) != 0 {
			t.Fatalf("%s: %d results, %v; want none", id, len(rs), err)
		}
	}
	// Nine models: the tenth, the first untested one, is not there, so
	// every one gets results; one model: no tested one, so none.
	s1 := MustOpen(t)
	ids1 := MustSeed(t, s1, 9, 18)
	for _, id := range ids1 {
		if rs := history(t, s1, []string{id})[id]; len(rs) != 2 {
			t.Errorf("9 models, 18 results: %s has %d, want 2", id, len(rs))
		}
	}
}

// TestSeedRuntimes: the tpu results spread over three torch_tpu releases
// in time order, a third each; cpu results name none.
func TestSeedRuntimes(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t)
	// 10 models, 9 tested: 90 results are ten rounds; rounds 3 and 7 on cpu.
	ids, err := SeedRuntimes(ctx, s, 10, 90, 3)
	if err != nil {
		t.Fatal(err)
	}
	byRelease := map[string]int{}
	n := 0
	for _, rs := range history(t, s, ids) {
		for _, r := range rs {
			n++
			j := int(r.TestedAt.Sub(Epoch) / time.Minute)
			want := []string{"0.1.0", "0.2.0", "0.3.0"}[j/30]
			if r.Target == compat.TargetCPU {
				want = ""
			}
			if round := j / 9; (round%4 == 3) != (r.Target == compat.TargetCPU) {
				t.Errorf("result %d (round %d) on %s", j, round, r.Target)
			}
			if r.Runtime.TorchTPU != want {
				t.Errorf("result %d on %s: torch_tpu %q, want %q", j, r.Target, r.Runtime.TorchTPU, want)
			}
			byRelease[r.Runtime.TorchTPU]++
		}
	}
	// 90 results, 18 on cpu (rounds 3 and 7: results 27–35 and 63–71);
	// 0.1.0 is results 0–29 less 27–29, 0.2.0 30–59 less 30–35, 0.3.0
	// 60–89 less 63–71.
	want := map[string]int{"": 18, "0.1.0": 27, "0.2.0": 24, "0.3.0": 21}
	if n != 90 || !reflect.DeepEqual(byRelease, want) {
		t.Errorf("%d results by release %v, want 90 as %v", n, byRelease, want)
	}
}

// TestSeedBatches: results are recorded SeedBatch at a time, progress
// told after each transaction, the last batch a short one.
func TestSeedBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("records 20 001 results")
	}
	ctx := context.Background()
	s := MustOpen(t)
	var calls []int
	ids, err := SeedScale(ctx, s, 2, SeedBatch+1, 1, func(done int) { calls = append(calls, done) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []int{SeedBatch, SeedBatch + 1}) {
		t.Errorf("progress %v, want [%d %d]", calls, SeedBatch, SeedBatch+1)
	}
	last, err := s.LatestResult(ctx, ids[0], "")
	if err != nil {
		t.Fatal(err)
	}
	// 20 001 results round two models: the last is result 20 000, model 0's.
	if at := Epoch.Add(SeedBatch * time.Minute); !last.TestedAt.Equal(at) {
		t.Errorf("model 0's last result at %v, want %v", last.TestedAt, at)
	}
}

// TestSeedResult: the mix of statuses Seed's data has (the benchmarks'
// figures were measured on it), each status's fields as a real result of
// that status has them, and unmeasured metrics nil; drawn 200 000 times.
func TestSeedResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	at := Epoch.Add(time.Hour)
	const n = 200000
	count := map[compat.Status]int{}
	sigs := map[string]int{}
	withMode, withTrain := 0, 0
	train := map[compat.Status]int{}
	trainSigs := map[string]int{}
	for range n {
		r := SeedResult(rng, compat.TargetTPU, at)
		count[r.Status]++
		if r.Target != compat.TargetTPU || !r.TestedAt.Equal(at) || r.Runtime != Runtime || r.Task != "text-generation" {
			t.Fatalf("result %+v: not on tpu at %v with Runtime", r, at)
		}
		if r.DurationS < 0 || r.DurationS >= 60 || math.Abs(r.DurationS*1000-math.Round(r.DurationS*1000)) > 1e-6 {
			t.Fatalf("duration %v: want whole milliseconds under a minute", r.DurationS)
		}
		m := r.Metrics
		measured := m.LoadS != nil || m.ForwardMS != nil || m.TokensPerS != nil || m.PeakMemBytes != nil || m.MaxAbsDiff != nil || m.Top1Agreement != nil
		if (r.Status == compat.StatusPass) != measured {
			t.Fatalf("%s with metrics %+v: only a pass is measured", r.Status, m)
		}
		if (r.Mode == nil) != (r.Status == compat.StatusSkipped) {
			t.Fatalf("%s with mode %v: only a skip has none", r.Status, r.Mode)
		}
		if r.Mode != nil && *r.Mode != compat.ModeFull {
			t.Fatalf("mode %s, want full", *r.Mode)
		}
		switch r.Status {
		case compat.StatusPass:
			if *m.LoadS < 0 || *m.LoadS >= 10 || *m.ForwardMS < 0 || *m.ForwardMS >= 100 || *m.TokensPerS < 0 || *m.TokensPerS >= 2000 ||
				*m.PeakMemBytes < 0 || *m.PeakMemBytes >= 1<<30 || *m.MaxAbsDiff < 0 || *m.MaxAbsDiff >= 1e-3 || *m.Top1Agreement != 1 {
				t.Fatalf("pass metrics out of range: load %v forward %v tok/s %v mem %v diff %v top1 %v",
					*m.LoadS, *m.ForwardMS, *m.TokensPerS, *m.PeakMemBytes, *m.MaxAbsDiff, *m.Top1Agreement)
			}
			if r.Stage == nil || *r.Stage != compat.StageGenerate || r.FailureClass != nil {
				t.Fatalf("pass: stage %v class %v", r.Stage, r.FailureClass)
			}
		case compat.StatusFail:
			// Its signature in the message and log; the last signature
			// has none recorded (grouped by class).
			sig := strings.TrimPrefix(deref(r.Message), "RuntimeError: ")
			sigs[sig]++
			if !slices.Contains(Signatures, sig) || !strings.HasSuffix(r.LogTail, "RuntimeError: "+sig+"\n") ||
				!strings.HasPrefix(r.LogTail, "Traceback (most recent call last):\n") {
				t.Fatalf("fail: message %q, log %q", deref(r.Message), r.LogTail)
			}
			if want := sig != Signatures[len(Signatures)-1]; (r.Signature != nil) != want || (want && *r.Signature != sig) {
				t.Fatalf("fail on %q: signature %v", sig, r.Signature)
			}
			if *r.Stage != compat.StageForward || *r.FailureClass != compat.ClassUnsupportedOp {
				t.Fatalf("fail: stage %s class %s", *r.Stage, *r.FailureClass)
			}
		case compat.StatusOOM:
			if *r.Stage != compat.StageLoad || *r.FailureClass != compat.ClassOOM {
				t.Fatalf("oom: stage %s class %s", *r.Stage, *r.FailureClass)
			}
		case compat.StatusTimeout:
			if *r.Stage != compat.StageCompile || r.FailureClass != nil {
				t.Fatalf("timeout: stage %s class %v", *r.Stage, r.FailureClass)
			}
		case compat.StatusCrash:
			if *r.Stage != compat.StageForward || *r.FailureClass != compat.ClassCrash {
				t.Fatalf("crash: stage %s class %s", *r.Stage, *r.FailureClass)
			}
		case compat.StatusSkipped:
			if r.Reason == nil || *r.Reason != compat.ReasonRemoteCode || r.Stage != nil {
				t.Fatalf("skipped: reason %v stage %v", r.Reason, r.Stage)
			}
		case compat.StatusError:
			if *r.Stage != compat.StageEnv || *r.FailureClass != compat.ClassDeviceUnavail {
				t.Fatalf("error: stage %s class %s", *r.Stage, *r.FailureClass)
			}
		default:
			t.Fatalf("status %q", r.Status)
		}
		if r.Status != compat.StatusFail && (r.Signature != nil || r.Message != nil || r.LogTail != "") {
			t.Fatalf("%s with a failure's signature %v, message %v, log %q", r.Status, r.Signature, r.Message, r.LogTail)
		}
		// A train verdict on half the runs that have a mode, never on a skip.
		if r.Mode != nil {
			withMode++
		}
		if len(r.Modes) == 0 {
			continue
		}
		v, ok := r.Modes[compat.ModeTrain]
		if !ok || len(r.Modes) != 1 || r.Mode == nil {
			t.Fatalf("modes %v on a %s with mode %v: want a train verdict alone, on a run with a mode", r.Modes, r.Status, r.Mode)
		}
		withTrain++
		train[v.Status]++
		if v.Stage == nil || *v.Stage != "train" {
			t.Fatalf("train verdict's stage %v", v.Stage)
		}
		if (v.Signature != nil) != (v.Status == compat.StatusFail) {
			t.Fatalf("train verdict %s with signature %v: a fail has one, nothing else", v.Status, v.Signature)
		}
		if v.Signature != nil {
			trainSigs[*v.Signature]++
		}
	}
	// The mix: pass 60%, fail 20%, oom, timeout and skipped 5% each, crash
	// 3%, error 2%; each share within 0.4 points (200 000 draws: about
	// three standard deviations of the largest).
	for st, want := range map[compat.Status]float64{"pass": 60, "fail": 20, "oom": 5, "timeout": 5, "crash": 3, "skipped": 5, "error": 2} {
		if got := 100 * float64(count[st]) / n; math.Abs(got-want) > 0.4 {
			t.Errorf("%s: %.2f%% of results, want %v%%", st, got, want)
		}
	}
	// Every signature drawn, about as often as each other (a fifth of fails).
	for _, sig := range Signatures {
		if got := float64(sigs[sig]) / float64(count["fail"]); math.Abs(got-0.2) > 0.02 {
			t.Errorf("signature %s: %.3f of fails, want 0.2", sig, got)
		}
	}
	if got := float64(withTrain) / float64(withMode); math.Abs(got-0.5) > 0.01 {
		t.Errorf("%.3f of the runs with a mode have a train verdict, want half", got)
	}
	// Mostly pass (half), every failing status a train step can end in.
	for st, want := range map[compat.Status]float64{"pass": 0.5, "fail": 0.125, "oom": 0.125, "crash": 0.125, "error": 0.125} {
		if got := float64(train[st]) / float64(withTrain); math.Abs(got-want) > 0.01 {
			t.Errorf("train %s: %.3f of train verdicts, want %v", st, got, want)
		}
	}
	if len(train) != 5 {
		t.Errorf("train statuses %v", train)
	}
	for i := range 4 {
		sig := "train:backward:aten::op" + string(rune('0'+i))
		if got := float64(trainSigs[sig]) / float64(train["fail"]); math.Abs(got-0.25) > 0.03 {
			t.Errorf("train signature %s: %.3f of train fails, want a quarter", sig, got)
		}
	}
	if len(trainSigs) != 4 {
		t.Errorf("train signatures %v, want the four", trainSigs)
	}
}

// TestSeedResultCPU: a result on cpu names no torch_tpu and runs on the cpu.
func TestSeedResultCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		r := SeedResult(rng, compat.TargetCPU, Epoch)
		want := Runtime
		want.TorchTPU, want.Device = "", "cpu"
		if r.Target != compat.TargetCPU || r.Runtime != want {
			t.Fatalf("%s on %+v, want cpu on %+v", r.Target, r.Runtime, want)
		}
	}
	if Runtime.TorchTPU == "" || Runtime.Device == "cpu" {
		t.Fatalf("SeedResult changed Runtime: %+v", Runtime)
	}
}

// TestSeedResultSameSource: the same source gives the same results.
func TestSeedResultSameSource(t *testing.T) {
	a, b := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	for i := range 500 {
		ra, rb := SeedResult(a, compat.TargetTPU, Epoch), SeedResult(b, compat.TargetTPU, Epoch)
		if !reflect.DeepEqual(ra, rb) {
			t.Fatalf("draw %d differs:\n%+v\n%+v", i, ra, rb)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestListing: every model, most downloaded first, as upserts that leave
// each as it is; more than one page of the store's (1000) is all there.
func TestListing(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t)
	ids := MustSeed(t, s, 1203, 0)
	l, err := Listing(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for i, u := range l {
		got[u.ID] = true
		if i > 0 && u.Downloads > l[i-1].Downloads {
			t.Fatalf("listing not most downloaded first at %d: %d after %d", i, u.Downloads, l[i-1].Downloads)
		}
	}
	if len(l) != len(ids) || len(got) != len(ids) {
		t.Fatalf("listing of %d models (%d distinct), want %d", len(l), len(got), len(ids))
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("%s not in the listing", id)
		}
	}
	// Each upsert is the model as the store has it.
	for _, u := range l[:50] {
		m, err := s.GetModel(ctx, u.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(u, UpsertOf(m)) {
			t.Errorf("%s: listing %+v, model %+v", u.ID, u, m)
		}
	}
	// Upserted back, it leaves every model as it was.
	if err := s.UpsertModels(ctx, l); err != nil {
		t.Fatal(err)
	}
	again, err := Listing(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, l) {
		t.Error("the listing upserted back changed the models")
	}
}

// TestUpsertOf: every field a listing carries, from the model; the rest
// (result, readiness, url, aliases) is not a listing's.
func TestUpsertOf(t *testing.T) {
	m := compat.Model{ID: "org/m", Task: "fill-mask", Library: "transformers", Downloads: 12, Likes: 3, Gated: true,
		SHA: strings.Repeat("a", 40), URL: "https://huggingface.co/org/m", Tags: []string{"x", "y"},
		Aliases: []string{"old/m"}, LastModified: Epoch, Result: &compat.Result{Status: "pass"}}
	want := store.ModelUpsert{ID: "org/m", Task: "fill-mask", Library: "transformers", Downloads: 12, Likes: 3, Gated: true,
		SHA: strings.Repeat("a", 40), Tags: []string{"x", "y"}, LastModified: Epoch}
	if got := UpsertOf(m); !reflect.DeepEqual(got, want) {
		t.Errorf("UpsertOf = %+v, want %+v", got, want)
	}
}

// TestKeepsFields: objects may gain keys, never lose or change one; arrays
// and scalars are equal; the path names the first field that differs.
func TestKeepsFields(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name      string
		want, got any
		path      string
		ok        bool
	}{
		{"same scalar", 1.0, 1.0, "", true},
		{"other scalar", 1.0, 2.0, "$", false},
		{"same object", obj("a", 1.0), obj("a", 1.0), "", true},
		{"a key more", obj("a", 1.0), obj("a", 1.0, "b", "x"), "", true},
		{"a key less", obj("a", 1.0, "b", "x"), obj("a", 1.0), "$.b", false},
		{"a changed value", obj("a", 1.0, "b", "x"), obj("a", 1.0, "b", "y"), "$.b", false},
		{"nested key more", obj("a", obj("b", true)), obj("a", obj("b", true, "c", nil)), "", true},
		{"nested change", obj("a", obj("b", true)), obj("a", obj("b", false)), "$.a.b", false},
		{"object made scalar", obj("a", obj("b", true)), obj("a", "b"), "$.a", false},
		{"array equal", []any{1.0, "x"}, []any{1.0, "x"}, "", true},
		{"array longer", []any{1.0}, []any{1.0, 2.0}, "$", false},
		{"array element gains a key", []any{obj("a", 1.0)}, []any{obj("a", 1.0, "b", 2.0)}, "$", false},
		{"null kept", obj("a", nil), obj("a", nil), "", true},
		{"null made a value", obj("a", nil), obj("a", 0.0), "$.a", false},
	} {
		path, ok := KeepsFields(c.want, c.got, "$")
		if ok != c.ok || (!ok && path != c.path) {
			t.Errorf("%s: KeepsFields = %q, %v; want %q, %v", c.name, path, ok, c.path, c.ok)
		}
	}
}

// fakeTB stands in for a test in MustOpen's and Unpack's own tests: it
// records a failure and ends the goroutine as Fatal does, and keeps the
// cleanups to run when the test says.
type fakeTB struct {
	testing.TB
	dir      string
	mu       sync.Mutex
	failed   []string
	cleanups []func()
}

func (f *fakeTB) Helper()         {}
func (f *fakeTB) TempDir() string { return f.dir }
func (f *fakeTB) Cleanup(fn func()) {
	f.cleanups = append(f.cleanups, fn)
}
func (f *fakeTB) Error(args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = append(f.failed, "error")
}
func (f *fakeTB) Fatal(args ...any) {
	f.mu.Lock()
	f.failed = append(f.failed, "fatal")
	f.mu.Unlock()
	runtime.Goexit()
}

// run runs fn as a test body on f, in its own goroutine (Fatal ends it).
func (f *fakeTB) run(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// TestMustOpen: an empty store in the test's temporary folder, closed
// when the test ends; a store that cannot be opened fails the test.
func TestMustOpen(t *testing.T) {
	ctx := context.Background()
	f := &fakeTB{TB: t, dir: t.TempDir()}
	var s *store.SQLite
	f.run(func() { s = MustOpen(f) })
	if len(f.failed) != 0 || s == nil {
		t.Fatalf("MustOpen failed: %v", f.failed)
	}
	if s.Path() != filepath.Join(f.dir, "scanner.db") {
		t.Errorf("store at %s, want in %s", s.Path(), f.dir)
	}
	if ms, _, err := s.ListModels(ctx, store.ModelQuery{}); err != nil || len(ms) != 0 {
		t.Errorf("a new store has %d models, %v", len(ms), err)
	}
	if len(f.cleanups) != 1 {
		t.Fatalf("%d cleanups, want 1 (the close)", len(f.cleanups))
	}
	f.cleanups[0]()
	if len(f.failed) != 0 {
		t.Errorf("closing failed the test: %v", f.failed)
	}
	if _, _, err := s.ListModels(ctx, store.ModelQuery{}); err == nil {
		t.Error("the store is still open after the test's cleanup")
	}
	// A close that fails fails the test (an error, not fatal: the other
	// cleanups still run). Here the test closed the store itself first,
	// so the cleanup's close is a second one, which the store refuses.
	f2 := &fakeTB{TB: t, dir: t.TempDir()}
	f2.run(func() { s = MustOpen(f2) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err == nil {
		t.Fatal("a second Close did not fail: this check needs another way to make a close fail")
	}
	f2.cleanups[0]()
	if !slices.Equal(f2.failed, []string{"error"}) {
		t.Errorf("a failed close reported %v, want one error", f2.failed)
	}
	// A "folder" that is a file: the open fails the test.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f3 := &fakeTB{TB: t, dir: file}
	f3.run(func() { s = MustOpen(f3); t.Error("MustOpen went on after a failed open") })
	if !slices.Equal(f3.failed, []string{"fatal"}) {
		t.Errorf("open in a file: %v, want a fatal failure", f3.failed)
	}
}

// TestUnpack: the fixture's bytes, decompressed, in a file of the test's
// temporary folder; a missing, a non-gzip and a truncated fixture fail
// the test.
func TestUnpack(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Repeat([]byte("SQLite format 3\x00 and some pages "), 5000)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	fixture := filepath.Join(dir, "fixture.db.gz")
	if err := os.WriteFile(fixture, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeTB{TB: t, dir: t.TempDir()}
	var path string
	f.run(func() { path = Unpack(f, fixture) })
	if len(f.failed) != 0 || filepath.Dir(path) != f.dir {
		t.Fatalf("Unpack = %q, failures %v; want a file in %s", path, f.failed, f.dir)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, content) {
		t.Errorf("unpacked %d bytes (%v), want the %d written", len(got), err, len(content))
	}
	notGzip := filepath.Join(dir, "plain.db")
	if err := os.WriteFile(notGzip, content[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "cut.db.gz")
	if err := os.WriteFile(truncated, gz.Bytes()[:gz.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for name, gzPath := range map[string]string{"missing": filepath.Join(dir, "none.gz"), "not gzip": notGzip, "truncated": truncated} {
		f := &fakeTB{TB: t, dir: t.TempDir()}
		f.run(func() { Unpack(f, gzPath); t.Errorf("%s: Unpack went on", name) })
		if !slices.Equal(f.failed, []string{"fatal"}) {
			t.Errorf("%s: failures %v, want one fatal", name, f.failed)
		}
	}
	// A folder that cannot take the file.
	f = &fakeTB{TB: t, dir: filepath.Join(t.TempDir(), "missing")}
	f.run(func() { Unpack(f, fixture); t.Error("unwritable: Unpack went on") })
	if !slices.Equal(f.failed, []string{"fatal"}) {
		t.Errorf("unwritable: failures %v, want one fatal", f.failed)
	}
}
