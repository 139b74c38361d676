package hub

import (
	"encoding/json"
	"testing"
)

// parseModels decodes a JSON array of models in the Hub's /api/models
// shape, field for field as ListModels reads a page.
func parseModels(data []byte) ([]ModelInfo, error) {
	var items []apiModel
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, err
	}
	out := make([]ModelInfo, 0, len(items))
	for _, it := range items {
		out = append(out, it.info())
	}
	return out, nil
}

func TestParseModels(t *testing.T) {
	got, err := parseModels([]byte(`[
	 {"id": "org/a", "pipeline_tag": "fill-mask", "library_name": "transformers", "tags": ["custom_code"],
	  "downloads": 7, "gated": "manual", "config": {"model_type": "bert", "architectures": ["BertForMaskedLM"]},
	  "siblings": [{"rfilename": "model.safetensors"}]},
	 {"modelId": "org/b", "gated": false}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d models, want 2", len(got))
	}
	a, b := got[0], got[1]
	if a.ID != "org/a" || a.PipelineTag != "fill-mask" || a.Library != "transformers" || len(a.Tags) != 1 ||
		a.Downloads != 7 || !a.Gated || a.GatedMode != "manual" || a.Config["model_type"] != "bert" ||
		len(a.Siblings) != 1 || a.Siblings[0].Name != "model.safetensors" {
		t.Errorf("first model: %+v", a)
	}
	if b.ID != "org/b" || b.Gated {
		t.Errorf("second model: %+v", b)
	}
	if _, err := parseModels([]byte(`{"id": "not a list"}`)); err == nil {
		t.Error("an object instead of a list: want an error")
	}
}
