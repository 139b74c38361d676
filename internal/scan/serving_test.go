package scan

import (
	"context"
	"errors"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
)

// A scan reads the pinned release's registry when the store lacks it, and
// only then; a failed read is retried by the next scan and ends none.
func TestScanDeclaresServing(t *testing.T) {
	llama := model("org/llama", "text-generation", "transformers")
	llama.Config = map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama"}
	f := newFixture(t, llama)
	f.hub.configs["org/llama"] = llama1BConfig
	calls := 0
	fail := true
	f.s.Serving = func(context.Context) (serving.Registry, error) {
		calls++
		if fail {
			return serving.Registry{}, errors.New("index unreachable")
		}
		return serving.Registry{Version: serving.Version, VLLMVersion: "v", Archs: map[string]compat.ServingKind{"LlamaForCausalLM": compat.ServingGeneration}}, nil
	}
	opts := Options{Target: compat.TargetAuto, Mode: compat.ModeArch, Limit: 100, Force: true}
	ctx := context.Background()
	for i, want := range []int{1, 2, 2} {
		if i == 1 {
			fail = false
		}
		sc, err := f.s.Run(ctx, opts, Hooks{})
		if err != nil || sc.Done != 1 {
			t.Fatalf("scan %d: %+v %v (a failed read must not end it)", i, sc, err)
		}
		if calls != want {
			t.Errorf("scan %d: %d reads, want %d", i, calls, want)
		}
	}
	reg, err := f.store.ServingRegistry(ctx, serving.Version)
	if err != nil || reg.Archs["LlamaForCausalLM"] != compat.ServingGeneration || reg.VLLMVersion != "v" {
		t.Errorf("stored %+v, %v", reg, err)
	}
}
