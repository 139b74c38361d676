package readiness

import "testing"

// TestShardOf: the figures a sharded probe is planned from. The bytes are
// what min_devices counts (hand-computed in realConfigs: weights + KV of
// one sequence), so MinDevices over them reproduces every generation's
// min_devices; the heads are the config's.
func TestShardOf(t *testing.T) {
	tests := []struct {
		config         string
		need           int64
		heads, kvHeads int64
	}{
		// 2 × 1,235,814,400 + 1,073,741,824
		{"Llama-3.2-1B", 3545370624, 32, 8},
		// 2 × 494,032,768 + 402,653,184
		{"Qwen2.5-0.5B", 1390718720, 14, 2},
		// 2 × 124,439,808 + 37,748,736; GPT-2 has no separate K/V heads
		{"gpt2", 286628352, 12, 12},
		// 2 × 46,702,792,704 + 4,294,967,296
		{"Mixtral-8x7B-v0.1", 97700552704, 32, 8},
	}
	for _, tt := range tests {
		in := Input{Config: loadConfig(t, tt.config)}
		sh := ShardOf(in)
		if sh.NeedBytes != tt.need || sh.Heads != tt.heads || sh.KVHeads != tt.kvHeads {
			t.Errorf("%s: %+v, want need %d heads %d kv %d", tt.config, sh, tt.need, tt.heads, tt.kvHeads)
		}
		r := Compute(in)
		for _, g := range Generations {
			if got := MinDevices(sh.NeedBytes, g); got != r.MinDevices[g.Name] {
				t.Errorf("%s: MinDevices(need, %s) = %d, readiness says %d", tt.config, g.Name, got, r.MinDevices[g.Name])
			}
		}
	}
	// Nothing known: nothing made up.
	if sh := ShardOf(Input{}); sh != (Shard{}) {
		t.Errorf("empty input: %+v", sh)
	}
	if _, ok := GenerationNamed("v9"); ok {
		t.Error("GenerationNamed found an unknown generation")
	}
	if g, ok := GenerationNamed("v6e"); !ok || g.HBMBytes != 32<<30 {
		t.Errorf("GenerationNamed(v6e) = %+v %v", g, ok)
	}
}
