package scan

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// TestFullModeFetchesInputFiles scans a repo on the fake Hub through the
// real Hub client: in full mode the tokenizer and processor files come with
// the weights (and a file over its cap, code and pickles do not, without
// failing the model: the probe is told which file is missing); in arch mode
// only config.json comes.
func TestFullModeFetchesInputFiles(t *testing.T) {
	const id = "acme/lm"
	overCap := "chat_template.jinja"
	repo := hubtest.Repo{
		ID: id, PipelineTag: "text-generation", Library: "transformers", Downloads: 10,
		Files: map[string][]byte{
			"config.json":              []byte(llamaConfig),
			"model.safetensors":        bytes.Repeat([]byte("w"), 4096),
			"tokenizer.json":           []byte(`{"version":"1.0","model":{"type":"BPE"}}`),
			"tokenizer_config.json":    []byte(`{"model_max_length":2048}`),
			"special_tokens_map.json":  []byte(`{"eos_token":"</s>"}`),
			"generation_config.json":   []byte(`{"eos_token_id":2}`),
			"preprocessor_config.json": []byte(`{"do_resize":true}`),
			"tokenizer.model":          []byte("\x0a\x05hello"),
			overCap:                    bytes.Repeat([]byte("{{ x }}"), int(hub.FileCap(overCap)/7)+1),
			"tokenization_evil.py":     []byte("import os"),
			"pytorch_model.bin":        []byte("pickle"),
			"onnx/tokenizer.json":      []byte(`{}`),
		},
		LFS: map[string]bool{"model.safetensors": true},
	}
	tests := []struct {
		mode compat.Mode
		want []string
		note string
	}{
		{compat.ModeFull, []string{"config.json", "generation_config.json", "model.safetensors", "preprocessor_config.json",
			"special_tokens_map.json", "tokenizer.json", "tokenizer.model", "tokenizer_config.json"},
			"input files not fetched: " + overCap + " (over its size cap)"},
		{compat.ModeArch, []string{"config.json"}, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			h := hubtest.New(t, repo)
			s, p, _ := faultScanner(t, h)
			if _, err := s.Run(context.Background(), Options{Mode: tt.mode, Target: compat.TargetCPU}, Hooks{}); err != nil {
				t.Fatal(err)
			}
			req, ok := p.reqs[id]
			if !ok {
				t.Fatal("not probed")
			}
			entries, err := os.ReadDir(req.SnapshotDir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("snapshot holds %v\nwant %v", got, tt.want)
			}
			if tt.note != "" && !strings.Contains(req.PlanNote, tt.note) || tt.note == "" && strings.Contains(req.PlanNote, "input files") {
				t.Errorf("plan note %q; want it to say %q", req.PlanNote, tt.note)
			}
			for _, r := range h.Requests() {
				for _, never := range []string{".py", ".bin", "onnx/"} {
					if strings.Contains(r.Path, never) {
						t.Errorf("%s %s asked for", r.Method, r.Path)
					}
				}
			}
			res, err := s.Store.LatestResult(context.Background(), id, compat.TargetCPU)
			if err != nil || res.Status != compat.StatusPass || res.Mode == nil || *res.Mode != tt.mode {
				t.Errorf("recorded %+v %v, want a %s pass", res.Status, err, tt.mode)
			}
		})
	}
}
