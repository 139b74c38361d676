package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

func TestPreflight(t *testing.T) {
	llama := func() map[string]any {
		return map[string]any{"model_type": "llama", "architectures": []any{"LlamaForCausalLM"}}
	}
	ok := Candidate{
		ID: "org/model", Revision: "abc", Task: "text-generation", Library: "transformers",
		Tags: []string{"transformers", "safetensors"}, Config: llama(), Mode: compat.ModeAuto,
	}
	tests := []struct {
		name   string
		mod    func(c *Candidate)
		status compat.Status // "" = go ahead
		reason compat.Reason
		msg    string
	}{
		{"go ahead", func(c *Candidate) {}, "", "", ""},
		{"disabled", func(c *Candidate) { c.Disabled = true }, compat.StatusSkipped, compat.ReasonDisabled, "operator"},
		{"disabled beats gated", func(c *Candidate) { c.Disabled, c.Gated = true, true }, compat.StatusSkipped, compat.ReasonDisabled, ""},
		{"gated without token", func(c *Candidate) { c.Gated = true }, compat.StatusSkipped, compat.ReasonGated, "no token"},
		{"gated with token", func(c *Candidate) { c.Gated, c.HasToken = true, true }, "", "", ""},
		{"custom_code tag", func(c *Candidate) { c.Tags = append(c.Tags, "custom_code") }, compat.StatusSkipped, compat.ReasonRemoteCode, "trust_remote_code"},
		{"auto_map", func(c *Candidate) { c.Config["auto_map"] = map[string]any{"AutoModel": "modeling.M"} }, compat.StatusSkipped, compat.ReasonRemoteCode, "auto_map"},
		{"library timm", func(c *Candidate) { c.Library, c.Config = "timm", nil }, compat.StatusSkipped, compat.ReasonUnsupportedLibrary, `"timm"`},
		{"library diffusers with config", func(c *Candidate) { c.Library = "diffusers" }, compat.StatusSkipped, compat.ReasonUnsupportedLibrary, "diffusers"},
		{"sentence-transformers backbone", func(c *Candidate) {
			c.Library, c.Task = "sentence-transformers", "sentence-similarity"
			c.Config = map[string]any{"model_type": "bert", "architectures": []any{"BertModel"}}
		}, "", "", ""},
		{"sentence-transformers without config", func(c *Candidate) { c.Library, c.Config = "sentence-transformers", nil }, compat.StatusSkipped, compat.ReasonUnsupportedLibrary, ""},
		{"no library, config with model_type", func(c *Candidate) { c.Library = "" }, "", "", ""},
		{"no library, no config", func(c *Candidate) { c.Library, c.Config = "", nil }, compat.StatusSkipped, compat.ReasonUnsupportedLibrary, "no library_name"},
		{"no library, config without model_type", func(c *Candidate) { c.Library, c.Config = "", map[string]any{"foo": 1.0} }, compat.StatusSkipped, compat.ReasonUnsupportedLibrary, ""},
		{"config not JSON", func(c *Candidate) {
			c.Config, c.ConfigErr = nil, errors.New("config.json: invalid character 'x' looking for beginning of value")
		}, compat.StatusFail, "", "invalid character"},
		{"config not JSON, no library", func(c *Candidate) {
			c.Library, c.Config, c.ConfigErr = "", nil, errors.New("config.json: unexpected end of JSON input")
		}, compat.StatusFail, "", "unexpected end"},
		{"config missing is no error", func(c *Candidate) {
			c.Config, c.ConfigErr = nil, fmt.Errorf("open: %w", fs.ErrNotExist)
		}, "", "", ""},
		{"unsupported tag, with why", func(c *Candidate) { c.Task = "text-to-image" }, compat.StatusSkipped, compat.ReasonUnsupportedTask, `"text-to-image" is not one the harness tests: diffusion pipelines`},
		{"unknown tag", func(c *Candidate) { c.Task = "made-up-task" }, compat.StatusSkipped, compat.ReasonUnsupportedTask, `"made-up-task" is not one the harness tests (supported: `},
		{"vlm tag", func(c *Candidate) {
			c.Task = "image-text-to-text"
			c.Config["architectures"] = []any{"Qwen2_5_VLForConditionalGeneration"}
		}, "", "", ""},
		{"no tag, causal LM", func(c *Candidate) { c.Task = "" }, "", "", ""},
		{"no tag, detector", func(c *Candidate) {
			c.Task = ""
			c.Config["architectures"] = []any{"DetrForObjectDetection"}
		}, "", "", ""},
		{"no tag, unknown architecture", func(c *Candidate) {
			c.Task = ""
			c.Config["architectures"] = []any{"StableDiffusionSafetyChecker"}
		}, compat.StatusSkipped, compat.ReasonUnsupportedTask, "StableDiffusionSafetyChecker"},
		{"no tag, no architectures", func(c *Candidate) { c.Task = ""; delete(c.Config, "architectures") }, compat.StatusSkipped, compat.ReasonUnsupportedTask, "none"},
		// Whether the weights exist and fit is the plan's (scan.Plan), not preflight's.
		{"full is the plan's to decline", func(c *Candidate) { c.Mode = compat.ModeFull }, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			c.Tags = append([]string(nil), ok.Tags...)
			c.Config = llama()
			tc.mod(&c)
			res := Preflight(c)
			if tc.status == "" {
				if res != nil {
					t.Fatalf("want go ahead, got %s %s: %s", res.Status, deref(res.Reason), deref(res.Message))
				}
				return
			}
			if res == nil {
				t.Fatalf("want %s %s, got go ahead", tc.status, tc.reason)
			}
			if res.Status != tc.status || deref(res.Reason) != string(tc.reason) {
				t.Errorf("got %s %s, want %s %s", res.Status, deref(res.Reason), tc.status, tc.reason)
			}
			if !strings.Contains(deref(res.Message), tc.msg) || deref(res.Message) == "" {
				t.Errorf("message %q lacks %q", deref(res.Message), tc.msg)
			}
			if res.Status == compat.StatusFail && (deref(res.Stage) != "config" || deref(res.FailureClass) != "config_error") {
				t.Errorf("broken config: stage %q class %q, want config/config_error", deref(res.Stage), deref(res.FailureClass))
			}
			if res.Status == compat.StatusSkipped && (res.Stage != nil || res.FailureClass != nil || !res.Reason.Valid()) {
				t.Errorf("skipped with stage %q class %q reason %q", deref(res.Stage), deref(res.FailureClass), deref(res.Reason))
			}
			if res.Revision != "abc" || res.TestedAt.IsZero() || res.Target != "" || res.Repro != "" {
				t.Errorf("revision %q tested_at %v target %q repro %q", res.Revision, res.TestedAt, res.Target, res.Repro)
			}
		})
	}
}

func TestPreflightTargetAndRepro(t *testing.T) {
	c := Candidate{ID: "org/model", Revision: "abc", Task: "text-generation", Library: "transformers",
		Config: map[string]any{"model_type": "llama"}, Disabled: true, Target: compat.TargetTPU, Mode: compat.ModeFull}
	res := Preflight(c)
	if res.Target != compat.TargetTPU || res.Repro != "scanner probe org/model --revision abc --target tpu --mode full" ||
		res.Mode == nil || *res.Mode != compat.ModeFull {
		t.Errorf("target %q repro %q mode %v", res.Target, res.Repro, res.Mode)
	}
}

// TestPreflightRecordsAResolvedMode: a declined result names the mode only
// when the scan resolved it to full or arch; auto or none is left out.
func TestPreflightRecordsAResolvedMode(t *testing.T) {
	for mode, want := range map[compat.Mode]string{compat.ModeArch: "arch", compat.ModeFull: "full", compat.ModeAuto: "", "": ""} {
		c := Candidate{ID: "org/model", Revision: "abc", Library: "transformers", Disabled: true, Mode: mode}
		res := Preflight(c)
		if res == nil {
			t.Fatalf("mode %q: a disabled model went ahead", mode)
		}
		if deref(res.Mode) != want {
			t.Errorf("mode %q: result's mode %q, want %q", mode, deref(res.Mode), want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	if c, err := ParseConfig([]byte(`{"model_type": "bert"}`)); err != nil || c["model_type"] != "bert" {
		t.Errorf("%v %v", c, err)
	}
	for _, bad := range []string{"", "{", "[1, 2]", "null", "\"x\""} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// TestCoverage reports which share of the hand-made top-100 listing falls
// in a supported task, and what preflight makes of the rest.
func TestCoverage(t *testing.T) {
	listing := topListing(t)
	if len(listing) != 100 {
		t.Fatalf("%d models in the listing, want 100", len(listing))
	}
	var cov harness.TaskCoverage
	for _, m := range listing {
		mt, _ := m.Config["model_type"].(string)
		cov.Add(m.Library, mt != "", m.PipelineTag, architectures(m.Config), 1, m.Downloads)
	}
	t.Logf("supported task: %d of %d transformers-backed models (%.1f%%), %.1f%% of their downloads",
		cov.Covered, cov.Models, 100**cov.Share(), 100**cov.DownloadShare())
	// The floor of the issue: the harness exercises the task of at least 97% of the
	// transformers-backed models of the top 100, and of their downloads.
	if *cov.Share() < 0.97 || *cov.DownloadShare() < 0.97 {
		t.Errorf("coverage %.3f of models, %.3f of downloads: want >= 0.97", *cov.Share(), *cov.DownloadShare())
	}
	// transformers-backed: the listing's 100 less those of other libraries
	// (diffusers, timm, pyannote, ...) or without a library and a model_type.
	if cov.Models < 80 || cov.Models > 90 {
		t.Errorf("%d transformers-backed models in the fixture, want 80-90 (the fixture changed?)", cov.Models)
	}

	outcome := map[string][]string{}
	for _, m := range listing {
		key := "probe"
		c := Listed(m, false)
		c.Mode = compat.ModeAuto
		if res := Preflight(c); res != nil {
			key = string(res.Status) + " " + deref(res.Reason)
		}
		outcome[key] = append(outcome[key], m.ID)
	}
	keys := make([]string, 0, len(outcome))
	for k := range outcome {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-34s %3d  e.g. %s", k, len(outcome[k]), strings.Join(outcome[k][:min(3, len(outcome[k]))], ", "))
	}
	if len(outcome["probe"]) < 40 {
		t.Errorf("only %d of the top 100 would be probed", len(outcome["probe"]))
	}
}

// topListing serves the hand-made top-100 listing
// (testdata/top100_listing.json) from the fake Hub and lists it with the
// Hub client, as a scan does: the models as the scanner reads them.
func topListing(t *testing.T) []hub.ModelInfo {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "top100_listing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		ID          string         `json:"id"`
		PipelineTag string         `json:"pipeline_tag"`
		Library     string         `json:"library_name"`
		Tags        []string       `json:"tags"`
		Downloads   int64          `json:"downloads"`
		Gated       any            `json:"gated"` // false, or "auto" / "manual"
		Config      map[string]any `json:"config"`
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		t.Fatal(err)
	}
	repos := make([]hubtest.Repo, 0, len(entries))
	for _, e := range entries {
		gated, _ := e.Gated.(string)
		repos = append(repos, hubtest.Repo{ID: e.ID, PipelineTag: e.PipelineTag, Library: e.Library, Tags: e.Tags,
			Downloads: e.Downloads, Gated: gated, Config: e.Config})
	}
	h := hubtest.New(t, repos...)
	client, err := hub.New(hub.Options{Endpoint: h.URL(), CacheDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	listing, err := client.ListModels(context.Background(), hub.ListOptions{Limit: len(entries)})
	if err != nil {
		t.Fatal(err)
	}
	return listing
}

var quiet = slog.New(slog.DiscardHandler)

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// TestPreflightConfigRequirement: with the whole config.json read, a model
// whose task's family requires what its config lacks (an audio-to-audio
// model that is no codec) is skipped unsupported_task, as the harness
// would skip it; the listing's excerpt of config.json, which lacks such
// keys, refuses nothing.
func TestPreflightConfigRequirement(t *testing.T) {
	c := Candidate{ID: "org/sep", Revision: "abc", Task: "audio-to-audio", Library: "transformers",
		Config: map[string]any{"model_type": "sepformer", "architectures": []any{"SepformerModel"}}}
	if res := Preflight(c); res != nil {
		t.Errorf("from the listing's excerpt: %+v, want no verdict", res)
	}
	c.ConfigRead = true
	res := Preflight(c)
	if res == nil || res.Status != compat.StatusSkipped || res.Reason == nil || *res.Reason != compat.ReasonUnsupportedTask ||
		!strings.Contains(*res.Message, "not an audio codec") {
		t.Fatalf("with config.json read: %+v", res)
	}
	c.Config["codebook_size"] = 1024.0
	if res := Preflight(c); res != nil {
		t.Errorf("a codec: %+v, want no verdict", res)
	}
}

// TestPreflightDecoderOnlyConditionalGeneration: a model without a pipeline
// tag whose architectures[0] is a decoder-only ...ForConditionalGeneration
// without towers that transformers' mappings do not list goes ahead from the
// listing (the whole config.json will tell), and is skipped unsupported_task
// once config.json is read, as the harness would skip it; an encoder-decoder
// one, or one transformers maps (Llava), goes ahead.
func TestPreflightDecoderOnlyConditionalGeneration(t *testing.T) {
	c := Candidate{ID: "org/odd", Revision: "abc", Library: "transformers",
		Config: map[string]any{"model_type": "odd_lm", "architectures": []any{"OddLMForConditionalGeneration"}}}
	if res := Preflight(c); res != nil {
		t.Errorf("from the listing's excerpt: %+v, want no verdict", res)
	}
	c.ConfigRead = true
	res := Preflight(c)
	if res == nil || res.Status != compat.StatusSkipped || res.Reason == nil || *res.Reason != compat.ReasonUnsupportedTask ||
		!strings.Contains(*res.Message, "OddLMForConditionalGeneration") {
		t.Fatalf("with config.json read: %+v", res)
	}
	c.Config["is_encoder_decoder"] = true
	if res := Preflight(c); res != nil {
		t.Errorf("an encoder-decoder: %+v, want no verdict", res)
	}
	c.Config = map[string]any{"model_type": "llava", "architectures": []any{"LlavaForConditionalGeneration"}}
	if res := Preflight(c); res != nil {
		t.Errorf("one transformers maps: %+v, want no verdict", res)
	}
}
