package readiness

import (
	"maps"
	"slices"
)

// sizeDefaults are transformers 5.23's configuration defaults for the sizes
// of model types whose published configs often leave them out (the
// text_config of LLaVA checkpoints carries only vocab_size and
// max_position_embeddings, for example). A key the config has always wins;
// a model_type not listed here gets no defaults, and what its config lacks
// is reported as missing.
var sizeDefaults = map[string]map[string]int64{
	// LlamaConfig (models/llama/configuration_llama.py)
	"llama": {
		"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
		"num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
	},
	// MistralConfig (models/mistral/configuration_mistral.py)
	"mistral": {
		"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
		"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
		"max_position_embeddings": 131072, "sliding_window": 4096,
	},
	// FalconConfig (models/falcon/configuration_falcon.py)
	"falcon": {
		"vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71,
		"max_position_embeddings": 2048,
	},
	// CLIPVisionConfig (models/clip/configuration_clip.py)
	"clip_vision_model": {
		"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
	},
}

// withDefaults returns r with its model_type's size defaults filled in
// where the config has no such key. A config with none of the sizes at all
// is not a config.json that relies on defaults but a summary of one (the
// Hub listing's): it gets none.
func withDefaults(r reader) reader {
	d := sizeDefaults[lower(r.str("model_type"))]
	if d == nil || !slices.ContainsFunc(slices.Collect(maps.Keys(d)), r.has) {
		return r
	}
	m := maps.Clone(r.m)
	for k, v := range d {
		if _, ok := m[k]; !ok {
			m[k] = float64(v)
		}
	}
	r.m = m
	return r
}
