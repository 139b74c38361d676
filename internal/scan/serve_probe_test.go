package scan

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving/measure"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving/measure/measuretest"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// A scan with a serving probe (--vllm-python: here the stand-in vllm) runs
// it after the probe of each model probed in full mode whose architecture
// the release declares served, on the devices still held, and stores its
// verdict beside the result, never in its place: one that serves (pass,
// its tokens agreed and its figures), one that fails to load (fail), and
// none for a model not declared served or probed in arch mode.
func TestScanRunsServingProbe(t *testing.T) {
	py := measuretest.VLLMPython(t)
	llama := func(id string) hub.ModelInfo {
		m := model(id, "text-generation", "transformers")
		m.Config = map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama"}
		m.Siblings = []hub.Sibling{{Name: "config.json", Size: 600}, {Name: "model.safetensors", Size: 1 << 20}}
		m.FilesMetadata = true
		return m
	}
	f := newFixture(t, llama("org/serves"), llama("org/noload"), llama("org/custom"))
	f.hub.configs["org/custom"] = `{"architectures":["CustomForCausalLM"],"model_type":"custom"}`
	f.s.Serving = func(context.Context) (serving.Registry, error) {
		return serving.Registry{Version: serving.Version, Archs: map[string]compat.ServingKind{"LlamaForCausalLM": compat.ServingGeneration}}, nil
	}
	ref := &measure.Reference{PromptTokenIDs: []int{1, 2, 3}, Tokens: []int{5, 6, 7, 8, 9, 10}}
	behaviour := map[string]string{"org/serves": "ok", "org/noload": "load_error"}
	var asked []string
	var probed []compat.Result
	f.s.ServeProbe = func(ctx context.Context, dir string, res compat.Result) (compat.ServingMeasured, error) {
		// the folder the probe read (the fake Hub's org/NAME/sha-NAME), where the stand-in reads how to behave
		id := "org/" + filepath.Base(filepath.Dir(dir))
		if want := filepath.Join(f.hub.dir, id, "sha-"+filepath.Base(id)); dir != want {
			t.Errorf("serving probe in %s, want the snapshot the probe read, %s", dir, want)
		}
		asked, probed = append(asked, id), append(probed, res)
		measuretest.WriteSpec(t, dir, behaviour[id], ref.Tokens)
		return measure.Run(ctx, measure.Request{VLLMPython: py, ModelDir: dir, TensorParallel: res.DevicesUsed, Timeout: time.Minute, Reference: ref}), nil
	}
	ctx := context.Background()
	// arch mode: vLLM needs the real weights, so no serving probe
	if _, err := f.s.Run(ctx, Options{Target: compat.TargetAuto, Mode: compat.ModeArch, Limit: 100, Force: true}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 0 {
		t.Fatalf("serving probes after arch-mode probes: %v", asked)
	}
	sc, err := f.s.Run(ctx, Options{Target: compat.TargetAuto, Mode: compat.ModeFull, Limit: 100, Force: true}, Hooks{})
	if err != nil || sc.Done != 3 {
		t.Fatalf("scan %+v %v", sc, err)
	}
	if len(asked) != 2 {
		t.Fatalf("serving probes for %v: want org/serves and org/noload (org/custom is not declared served)", asked)
	}
	for _, r := range probed {
		if r.Mode == nil || *r.Mode != compat.ModeFull {
			t.Errorf("serving probe after a %v probe", r.Mode)
		}
	}
	got, err := f.store.ServingResult(ctx, "org/serves")
	if err != nil {
		t.Fatal(err)
	}
	if got.Evidence != compat.ServingEvidenceMeasured || got.Status != string(compat.StatusPass) || got.Metrics.AgreedTokens == nil ||
		*got.Metrics.AgreedTokens != len(ref.Tokens) || got.Metrics.TokensPerS == nil || got.Metrics.LoadS == nil ||
		got.Runtime.Key() != "0.29.0~"+deref(got.Runtime.Torch)+"~"+deref(got.Runtime.TorchTPU)+"~"+deref(got.Runtime.Libtpu) ||
		got.MeasuredAt.IsZero() {
		t.Errorf("org/serves: %+v", got)
	}
	got, err = f.store.ServingResult(ctx, "org/noload")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != string(compat.StatusFail) || got.Stage == nil || *got.Stage != "load" || got.FailureClass == nil ||
		*got.FailureClass != string(compat.ClassLoadError) {
		t.Errorf("org/noload: %+v", got)
	}
	// its serving change names the revision the probe ran on, and the stage it failed at
	evs, err := f.store.ModelEvents(ctx, "org/noload", 10)
	if err != nil {
		t.Fatal(err)
	}
	var named bool
	for _, e := range evs {
		if e.Serving() {
			named = e.Revision != "" && e.Revision == got.Revision && e.Stage != nil && *e.Stage == compat.StageLoad
		}
	}
	if !named {
		t.Errorf("org/noload's serving change does not name its revision (%q) and stage: %+v", got.Revision, evs)
	}
	if _, err := f.store.ServingResult(ctx, "org/custom"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("org/custom (not declared served) has a serving verdict: %v", err)
	}
	// the inference result stands as the probe left it
	if st := f.status(t, "org/noload"); st != compat.StatusPass {
		t.Errorf("org/noload's inference status %s: the serving verdict replaced it", st)
	}
}
