package hub

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// safetensorsFile is a minimal safetensors file: the header that names the
// tensors, and no data (the fake Hub reads headers only, as the Hub does).
func safetensorsFile(t *testing.T, tensors map[string]any) []byte {
	t.Helper()
	header, err := json.Marshal(tensors)
	if err != nil {
		t.Fatal(err)
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(b, header...)
}

// A listing asks for the safetensors field and keeps each dtype's count;
// the fake Hub answers with the counts given, or the ones the repo's
// checkpoint headers hold, or nothing, like the Hub.
func TestListModelsSafetensors(t *testing.T) {
	weights := safetensorsFile(t, map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"embed.weight": map[string]any{"dtype": "BF16", "shape": []int{10, 4}, "data_offsets": []int{0, 80}},
		"norm.weight":  map[string]any{"dtype": "F32", "shape": []int{4}, "data_offsets": []int{80, 96}},
		"head.weight":  map[string]any{"dtype": "BF16", "shape": []int{10, 4}, "data_offsets": []int{96, 176}},
	})
	e := newEnv(t, nil,
		hubtest.Repo{ID: "org/given", Downloads: 30, Safetensors: map[string]int64{"BF16": 1234814400, "F32": 1000000},
			Files: map[string][]byte{"config.json": []byte(`{}`)}},
		hubtest.Repo{ID: "org/derived", Downloads: 20, Files: map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": weights},
			LFS: map[string]bool{"model.safetensors": true}},
		hubtest.Repo{ID: "org/pickle", Downloads: 10, Files: map[string][]byte{"config.json": []byte(`{}`), "pytorch_model.bin": []byte("x")}},
	)
	got, err := e.c.ListModels(context.Background(), ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int64{
		"org/given": {"BF16": 1234814400, "F32": 1000000},
		// 10·4 + 10·4 BF16 elements, 4 F32
		"org/derived": {"BF16": 80, "F32": 4},
		"org/pickle":  nil,
	}
	if len(got) != len(want) {
		t.Fatalf("%d models", len(got))
	}
	for _, m := range got {
		if !maps.Equal(m.Safetensors, want[m.ID]) || (m.Safetensors == nil) != (want[m.ID] == nil) {
			t.Errorf("%s: safetensors %v, want %v", m.ID, m.Safetensors, want[m.ID])
		}
	}
	reqs := e.requests("hub", "/api/models")
	q, _ := url.ParseQuery(reqs[0].RawQuery)
	if !slices.Contains(q["expand[]"], "safetensors") {
		t.Errorf("listing asked expand[]=%v, without safetensors", q["expand[]"])
	}
}

// The field never fails a listing: other shapes and bad counts give none.
func TestSafetensorsField(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]int64
	}{
		{`{"parameters": {"BF16": 10, "F32": 2}, "total": 12}`, map[string]int64{"BF16": 10, "F32": 2}},
		{`{"parameters": {"BF16": 10}, "total": 999}`, map[string]int64{"BF16": 10}}, // total is not trusted, nor kept
		{`{"parameters": {"BF16": -1, "I8": 7, "F16": 1.5}}`, map[string]int64{"I8": 7}},
		{`{"parameters": [{"BF16": 10}]}`, nil}, // an old list form
		{`{"parameters": {"BF16": "ten"}}`, nil},
		{`{"parameters": {}}`, nil},
		{`{"parameters": {"BF16": -1, "F16": 1.5}}`, nil},                                                            // no count left: none, not an empty set
		{`{"parameters": {"BF16": 0}}`, map[string]int64{"BF16": 0}},                                                 // a count of 0 is a count
		{`{"parameters": {"F8_E4M3FNUZ_2345": 3, "F8_E4M3FNUZ_23456": 4}}`, map[string]int64{"F8_E4M3FNUZ_2345": 3}}, // dtype names up to 16 bytes
		{`{"total": 5}`, nil},
		{`null`, nil},
		{`"x"`, nil},
		{`[1, 2]`, nil},
	}
	for _, tt := range tests {
		var m apiModel
		if err := json.Unmarshal([]byte(`{"id": "a/b", "safetensors": `+tt.in+`}`), &m); err != nil {
			t.Errorf("%s: the listing failed: %v", tt.in, err)
			continue
		}
		if got := m.info().Safetensors; !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("%s: %v, want %v", tt.in, got, tt.want)
		}
	}
}

// The real all-MiniLM-L6-v2 checkpoint, through the fake Hub's header
// reading: BertModel with 6 layers of 384 holds 22,713,216 float32 elements
// (embeddings 30522·384 + 512·384 + 2·384 + LayerNorm 768 = 11,918,592;
// 6 layers × 1,774,464 = 10,646,784; pooler 384·384 + 384 = 147,840).
func TestListRealMiniLMSafetensors(t *testing.T) {
	repo, ok := hubtest.MiniLMRepo(t, venvPython(t))
	if !ok {
		t.Skip("the MiniLM package is not installed")
	}
	e := newEnv(t, nil, repo)
	got, err := e.c.ListModels(context.Background(), ListOptions{Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	if f32 := got[0].Safetensors["F32"]; f32 != 22713216 {
		t.Errorf("F32 elements %d, want 22,713,216 (all: %v)", f32, got[0].Safetensors)
	}
}
