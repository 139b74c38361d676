package serving

import (
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

// allTables is every table FromTables requires, empty.
func allTables() map[string][]Entry {
	t := map[string][]Entry{}
	for name := range tableKinds {
		t[name] = []Entry{}
	}
	return t
}

func TestFromTablesKinds(t *testing.T) {
	tables := allTables()
	tables["_TEXT_GENERATION_MODELS"] = []Entry{{"LlamaForCausalLM", "llama", "LlamaForCausalLM"}, {"Qwen2ForCausalLM", "qwen2", "Qwen2ForCausalLM"}}
	// Qwen2ForCausalLM is also a pooling model: the generate runner wins.
	tables["_EMBEDDING_MODELS"] = []Entry{{"BertModel", "bert", "BertEmbeddingModel"}, {"Qwen2ForCausalLM", "qwen2", "Qwen2ForCausalLM"}}
	tables["_REWARD_MODELS"] = []Entry{{"Qwen2ForRewardModel", "qwen2_rm", "Qwen2ForRewardModel"}}
	// a multimodal model that also embeds: multimodal before pooling.
	tables["_MULTIMODAL_MODELS"] = []Entry{{"Gemma3ForConditionalGeneration", "gemma3_mm", "Gemma3ForConditionalGeneration"}, {"Qwen2VLForConditionalGeneration", "qwen2_vl", "Qwen2VLForConditionalGeneration"}}
	tables["_SEQUENCE_CLASSIFICATION_MODELS"] = []Entry{{"Qwen2VLForConditionalGeneration", "qwen2_vl", "X"}}
	tables["_TRANSFORMERS_SUPPORTED_MODELS"] = []Entry{
		{"Olmo2ForCausalLM", "transformers", "TransformersForCausalLM"},
		{"Emu3ForConditionalGeneration", "transformers", "TransformersMultiModalForCausalLM"},
		{"FooModel", "transformers", "TransformersEmbeddingModel"},
	}
	tables["_SPECULATIVE_DECODING_MODELS"] = []Entry{{"EagleLlamaForCausalLM", "llama_eagle", "EagleLlamaForCausalLM"}}
	tables["_TRANSFORMERS_BACKEND_MODELS"] = []Entry{{"TransformersForCausalLM", "transformers", "TransformersForCausalLM"}}
	r, err := FromTables("9.9.9", "9.9.8", tables)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]compat.ServingKind{
		"LlamaForCausalLM": compat.ServingGeneration, "Qwen2ForCausalLM": compat.ServingGeneration, "BertModel": compat.ServingPooling,
		"Qwen2ForRewardModel": compat.ServingPooling, "Gemma3ForConditionalGeneration": compat.ServingMultimodal,
		"Qwen2VLForConditionalGeneration": compat.ServingMultimodal, "Olmo2ForCausalLM": compat.ServingGeneration,
		"Emu3ForConditionalGeneration": compat.ServingMultimodal, "FooModel": compat.ServingPooling,
	}
	wantKinds(t, r, want) // drafts and backend class names are not served alone
	if r.Version != "9.9.9" || r.VLLMVersion != "9.9.8" {
		t.Errorf("versions %q %q", r.Version, r.VLLMVersion)
	}
}

func TestFromTablesRefuses(t *testing.T) {
	tables := allTables()
	if _, err := FromTables("1", "", tables); err == nil || !strings.Contains(err.Error(), "no architecture") {
		t.Errorf("empty registry: %v", err)
	}
	tables["_TEXT_GENERATION_MODELS"] = []Entry{{"LlamaForCausalLM", "llama", "LlamaForCausalLM"}}
	delete(tables, "_MULTIMODAL_MODELS")
	if _, err := FromTables("1", "", tables); err == nil || !strings.Contains(err.Error(), "_MULTIMODAL_MODELS") {
		t.Errorf("renamed table: %v", err)
	}
}

func TestTensorParallel(t *testing.T) {
	for _, tt := range []struct{ in, want int }{{0, 1}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {8, 8}, {9, 16}, {40, 64}, {1 << 30, 1 << 20}} {
		if got := TensorParallel(tt.in); got != tt.want {
			t.Errorf("TensorParallel(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestDeclare(t *testing.T) {
	reg := Registry{Version: "0.29.0", VLLMVersion: "0.29.0", Archs: map[string]compat.ServingKind{
		"LlamaForCausalLM": compat.ServingGeneration, "Qwen3MoeForCausalLM": compat.ServingGeneration, "BertModel": compat.ServingPooling}}
	llama := &readiness.Readiness{MinDevices: map[string]int{"v5e": 3, "v6e": 2, "v7x": 1}, ContextTokens: ptr[int64](8192)}
	moe := &readiness.Readiness{MinDevices: map[string]int{"v6e": 7}, ContextTokens: ptr[int64](32768),
		Hints: []readiness.Hint{{Code: readiness.HintMoEDynamicRouting}}}
	smallMoE := &readiness.Readiness{MinDevices: map[string]int{"v6e": 3}, ContextTokens: ptr[int64](4096),
		Hints: []readiness.Hint{{Code: readiness.HintMoEDynamicRouting}}}
	for _, tt := range []struct {
		name   string
		archs  []string
		r      *readiness.Readiness
		ok     bool
		served bool
		kind   compat.ServingKind
		arch   string
		cmd    string
		tp     map[string]int
	}{
		{"no architectures", nil, llama, false, false, "", "", "", nil},
		{"llama", []string{"LlamaForCausalLM"}, llama, true, true, compat.ServingGeneration, "LlamaForCausalLM",
			"vllm serve org/m --tensor-parallel-size 2 --max-model-len 8192", map[string]int{"v5e": 4, "v6e": 2, "v7x": 1}},
		{"the first listed decides", []string{"Custom", "BertModel", "LlamaForCausalLM"}, nil, true, true, compat.ServingPooling, "BertModel",
			"vllm serve org/m", map[string]int{}},
		{"not listed", []string{"BartForConditionalGeneration"}, llama, true, false, "", "", "", map[string]int{"v5e": 4, "v6e": 2, "v7x": 1}},
		{"moe on 8", []string{"Qwen3MoeForCausalLM"}, moe, true, true, compat.ServingGeneration, "Qwen3MoeForCausalLM",
			"vllm serve org/m --tensor-parallel-size 8 --max-model-len 32768 --enable-expert-parallel", map[string]int{"v6e": 8}},
		{"moe under 8 chips: no expert parallelism", []string{"Qwen3MoeForCausalLM"}, smallMoE, true, true, compat.ServingGeneration, "Qwen3MoeForCausalLM",
			"vllm serve org/m --tensor-parallel-size 4 --max-model-len 4096", map[string]int{"v6e": 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := Declare(reg, "org/m", tt.archs, tt.r)
			if ok != tt.ok {
				t.Fatalf("ok %v", ok)
			}
			if !ok {
				return
			}
			if c.Evidence != compat.ServingEvidenceDeclared || c.Package != Package || c.Version != "0.29.0" || c.Served != tt.served {
				t.Errorf("cell %+v", c)
			}
			if (c.Kind == nil) == tt.served || (tt.served && *c.Kind != tt.kind) {
				t.Errorf("kind %v, want %q", c.Kind, tt.kind)
			}
			if (c.Architecture == nil) == tt.served || (tt.served && *c.Architecture != tt.arch) {
				t.Errorf("architecture %v, want %q", c.Architecture, tt.arch)
			}
			if (c.Command == nil) == tt.served || (tt.served && *c.Command != tt.cmd) {
				t.Errorf("command %v, want %q", c.Command, tt.cmd)
			}
			if len(c.TensorParallelSize) != len(tt.tp) {
				t.Errorf("tp %v, want %v", c.TensorParallelSize, tt.tp)
			}
			for g, n := range tt.tp {
				if c.TensorParallelSize[g] != n {
					t.Errorf("tp %v, want %v", c.TensorParallelSize, tt.tp)
				}
			}
		})
	}
}

// wantKinds checks that r declares exactly want.
func wantKinds(t *testing.T, r Registry, want map[string]compat.ServingKind) {
	t.Helper()
	if len(r.Archs) != len(want) {
		t.Errorf("archs %v, want %v", r.Archs, want)
	}
	for a, k := range want {
		if r.Archs[a] != k {
			t.Errorf("%s: %q, want %q", a, r.Archs[a], k)
		}
	}
}
