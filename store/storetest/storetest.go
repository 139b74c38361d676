// Package storetest helps tests and benchmarks of packages that use the
// store: a fresh database in a temporary folder, and deterministic data.
package storetest

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// MustOpen opens a new, empty store in t.TempDir(), closed when the test ends.
func MustOpen(t testing.TB) *store.SQLite {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "scanner.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Epoch is the tested_at of Seed's first result; each next one is a minute later.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Runtime is the runtime of Seed's results.
var Runtime = compat.Runtime{
	Python: "3.12.8", Torch: "2.9.0", Transformers: "4.57.1", TorchTPU: "0.1.0", Harness: "1",
	Device: "TPU v6e", DeviceCount: 1,
}

// Signatures are the failure signatures Seed's failing results carry (the
// last one is used with a nil signature, grouped by failure class).
var Signatures = []string{
	"unsupported_op:aten::_fft_r2c", "unsupported_op:aten::_upsample_bicubic2d_aa",
	"unsupported_dtype:float8_e4m3fn", "compile_error:dynamic_shape", "numerics_mismatch:logits",
}

var tasks = []string{"text-generation", "fill-mask", "feature-extraction", "image-classification", "automatic-speech-recognition"}

// ModelID is the id of Seed's model i: "orgNN/model-NNNNN", or a legacy
// one-part id "model-NNNNN" for every 50th.
func ModelID(i int) string {
	if i%50 == 49 {
		return fmt.Sprintf("model-%05d", i)
	}
	return fmt.Sprintf("org%02d/model-%05d", i%40, i)
}

// Seed fills s with nModels models (ModelID(0)…) in one transaction and
// nResults results in transactions of SeedBatch, deterministically.
// Downloads and likes repeat (ties for cursor tests); every 10th model
// stays untested; the results go round the others, on tpu except every 4th
// round on cpu, a minute apart from Epoch, with a mix of every recorded
// status and unmeasured metrics nil. It returns the model ids. Tests call
// MustSeed; programs (cmd/benchload, cmd/benchscale) call Seed or SeedScale.
func Seed(ctx context.Context, s *store.SQLite, nModels, nResults int) ([]string, error) {
	return SeedRuntimes(ctx, s, nModels, nResults, 1)
}

// SeedRuntimes is Seed with the tpu results spread over nRuntimes
// torch_tpu releases (0.1.0, 0.2.0, …; at least 1) in time order: the
// first nResults/nRuntimes results report the first, and so on.
func SeedRuntimes(ctx context.Context, s *store.SQLite, nModels, nResults, nRuntimes int) ([]string, error) {
	return SeedScale(ctx, s, nModels, nResults, nRuntimes, nil)
}

// SeedBatch is how many results Seed records per transaction.
const SeedBatch = 20000

// SeedScale is SeedRuntimes that calls progress (when not nil) with the
// number of results recorded after each transaction.
func SeedScale(ctx context.Context, s *store.SQLite, nModels, nResults, nRuntimes int, progress func(done int)) ([]string, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, nModels)
	ups := make([]store.ModelUpsert, nModels)
	for i := range ups {
		ids[i] = ModelID(i)
		ups[i] = store.ModelUpsert{
			ID:           ids[i],
			Task:         tasks[i%len(tasks)],
			Library:      "transformers",
			Downloads:    int64(rng.IntN(1000)) * 1000,
			Likes:        int64(rng.IntN(200)),
			Gated:        i%20 == 0,
			SHA:          fmt.Sprintf("%040x", i),
			Tags:         []string{"transformers", tasks[i%len(tasks)]},
			LastModified: Epoch.Add(-time.Duration(i) * time.Hour),
		}
	}
	if err := s.UpsertModels(ctx, ups); err != nil {
		return nil, fmt.Errorf("seed models: %w", err)
	}
	var tested []string
	for i, id := range ids {
		if i%10 != 9 {
			tested = append(tested, id)
		}
	}
	if len(tested) == 0 || nResults == 0 {
		return ids, nil
	}
	recs := make([]store.Record, 0, min(nResults, SeedBatch))
	for j := range nResults {
		target := compat.TargetTPU
		if (j/len(tested))%4 == 3 { // every 4th round of the models
			target = compat.TargetCPU
		}
		rec := store.Record{ModelID: tested[j%len(tested)], Result: SeedResult(rng, target, Epoch.Add(time.Duration(j)*time.Minute))}
		if nRuntimes > 1 && target == compat.TargetTPU {
			rec.Result.Runtime.TorchTPU = fmt.Sprintf("0.%d.0", 1+j*nRuntimes/nResults)
		}
		rec.Result.Revision = fmt.Sprintf("%040x", j%len(tested))
		rec.Result.Repro = compat.Repro(rec.ModelID, rec.Result.Revision, target, compat.ModeFull)
		recs = append(recs, rec)
		if len(recs) == cap(recs) || j == nResults-1 {
			if _, err := s.RecordResults(ctx, recs); err != nil {
				return nil, fmt.Errorf("seed results: %w", err)
			}
			recs = recs[:0]
			if progress != nil {
				progress(j + 1)
			}
		}
	}
	return ids, nil
}

// MustSeed is Seed for tests and benchmarks: an error fails t.
func MustSeed(t testing.TB, s *store.SQLite, nModels, nResults int) []string {
	t.Helper()
	ids, err := Seed(context.Background(), s, nModels, nResults)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// SeedResult is a random result on target at time at, as Seed makes them.
func SeedResult(rng *rand.Rand, target compat.Target, at time.Time) compat.Result {
	r := compat.Result{
		Target:    target,
		Mode:      compat.Ptr(compat.ModeFull),
		TestedAt:  at,
		DurationS: float64(rng.IntN(60000)) / 1000,
		Runtime:   Runtime,
		Task:      "text-generation",
	}
	if target != compat.TargetTPU {
		r.Runtime.TorchTPU = ""
		r.Runtime.Device = "cpu"
	}
	switch p := rng.IntN(100); {
	case p < 60:
		r.Status = compat.StatusPass
		r.Stage = compat.Ptr(compat.StageGenerate)
		r.Metrics = compat.Metrics{
			LoadS:         compat.Ptr(float64(rng.IntN(10000)) / 1000),
			ForwardMS:     compat.Ptr(float64(rng.IntN(100000)) / 1000),
			TokensPerS:    compat.Ptr(float64(rng.IntN(200000)) / 100),
			PeakMemBytes:  compat.Ptr(int64(rng.IntN(1 << 30))),
			MaxAbsDiff:    compat.Ptr(float64(rng.IntN(1000)) / 1e6),
			Top1Agreement: compat.Ptr(1.0),
		}
	case p < 80:
		r.Status = compat.StatusFail
		sig := Signatures[rng.IntN(len(Signatures))]
		r.Stage = compat.Ptr(compat.StageForward)
		r.FailureClass = compat.Ptr(compat.ClassUnsupportedOp)
		if sig != Signatures[len(Signatures)-1] {
			r.Signature = compat.Ptr(sig)
		}
		r.Message = compat.Ptr("RuntimeError: " + sig)
		r.LogTail = "Traceback (most recent call last):\n  ...\nRuntimeError: " + sig + "\n"
	case p < 85:
		r.Status = compat.StatusOOM
		r.Stage = compat.Ptr(compat.StageLoad)
		r.FailureClass = compat.Ptr(compat.ClassOOM)
	case p < 90:
		r.Status = compat.StatusTimeout
		r.Stage = compat.Ptr(compat.StageCompile)
	case p < 93:
		r.Status = compat.StatusCrash
		r.Stage = compat.Ptr(compat.StageForward)
		r.FailureClass = compat.Ptr(compat.ClassCrash)
	case p < 98:
		r.Status = compat.StatusSkipped
		r.Reason = compat.Ptr(compat.ReasonRemoteCode)
		r.Mode = nil
	default:
		r.Status = compat.StatusError
		r.Stage = compat.Ptr(compat.StageEnv)
		r.FailureClass = compat.Ptr(compat.ClassDeviceUnavail)
	}
	seedTrain(&r)
	return r
}

// seedTrain gives a result with a mode a train verdict on half the runs
// (the others as from before the verdict matrix): mostly pass, every
// failing status, a signature on some. It draws nothing from the random
// source (it reads the duration drawn already), so that results drawn
// after it are what they were before train verdicts.
func seedTrain(r *compat.Result) {
	ms := int(r.DurationS * 1000)
	if r.Mode == nil || ms%2 == 1 {
		return
	}
	st := []compat.Status{"pass", "pass", "pass", "pass", "fail", "oom", "crash", "error"}[ms/2%8]
	v := compat.Verdict{Status: st, Stage: compat.Ptr("train")}
	if st == compat.StatusFail {
		v.Signature = compat.Ptr(fmt.Sprintf("train:backward:aten::op%d", ms/16%4))
	}
	r.Modes = map[string]compat.Verdict{compat.ModeTrain: v}
}

// Unpack writes the gzip-compressed database file gz (a fixture in a
// testdata folder) to a file in t.TempDir() and returns its path.
func Unpack(t testing.TB, gz string) string {
	t.Helper()
	f, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scanner.db")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// KeepsFields reports whether got (decoded JSON) has every field of want
// with the same value, and where it does not: objects may have more keys
// (fields added since want was written); arrays and scalars are equal.
func KeepsFields(want, got any, path string) (string, bool) {
	wm, ok := want.(map[string]any)
	if !ok {
		return path, reflect.DeepEqual(want, got)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return path, false
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok {
			return path + "." + k, false
		}
		if p, ok := KeepsFields(wv, gv, path+"."+k); !ok {
			return p, false
		}
	}
	return "", true
}

// UpsertOf is the listing entry that would leave model m as it is.
func UpsertOf(m compat.Model) store.ModelUpsert {
	return store.ModelUpsert{ID: m.ID, Task: m.Task, Library: m.Library, Downloads: m.Downloads, Likes: m.Likes,
		Gated: m.Gated, SHA: m.SHA, Tags: m.Tags, LastModified: m.LastModified}
}

// Listing is every model of s as a listing that would leave it as it is,
// most downloaded first (as the Hub lists them).
func Listing(ctx context.Context, s *store.SQLite) ([]store.ModelUpsert, error) {
	var listing []store.ModelUpsert
	q := store.ModelQuery{Limit: 1000}
	for {
		ms, next, err := s.ListModels(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			listing = append(listing, UpsertOf(m))
		}
		if next == "" {
			return listing, nil
		}
		q.Cursor = next
	}
}
