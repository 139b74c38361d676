package check

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestCheckModeServe(t *testing.T) {
	cell := func(served bool) *compat.ServingCell {
		c := &compat.ServingCell{Evidence: compat.ServingEvidenceDeclared, Package: "vllm-torchtpu", Version: "0.29.0",
			Architectures: []string{"LlamaForCausalLM"}}
		if served {
			c.Served, c.Kind, c.Architecture = true, compat.Ptr(compat.ServingGeneration), compat.Ptr("LlamaForCausalLM")
			c.Command = compat.Ptr("vllm serve gpt2 --tensor-parallel-size 1 --max-model-len 1024")
		}
		return c
	}
	measured := func(c *compat.ServingCell, status string, sig *string) *compat.ServingCell {
		agreed := 16
		c.Measured = &compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: status, Signature: sig,
			Runtime: compat.ServingRuntime{VLLMTorchTPU: compat.Ptr("0.29.0"), Torch: compat.Ptr("2.13.0"), TorchTPU: compat.Ptr("0.2.0"), Libtpu: compat.Ptr("0.0.50")},
			Metrics: compat.ServingMetrics{AgreedTokens: &agreed}, MeasuredAt: time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)}
		return c
	}
	laterNotJudged := func(c *compat.ServingCell) *compat.ServingCell {
		c.Measured.LatestAttempt = &compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "skipped",
			Reason: compat.Ptr(compat.ServingReasonNoReference), MeasuredAt: time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)}
		return c
	}
	tests := []struct {
		name     string
		detail   *modelDetail
		wantCode int
		wantLine string
	}{
		// the serving cell gates, whatever the inference status
		{"served, inference fails", &modelDetail{Model: compat.Model{ID: "gpt2", Result: failResult(), Serving: cell(true)}},
			ExitPass, "gpt2: served by vllm-torchtpu 0.29.0 as generation (declared, LlamaForCausalLM): vllm serve gpt2 --tensor-parallel-size 1 --max-model-len 1024"},
		{"not served, inference passes", &modelDetail{Model: compat.Model{ID: "gpt2", Result: passResult(), Serving: cell(false)}},
			ExitNotPassing, "gpt2: not served by vllm-torchtpu 0.29.0 (declared: its vLLM's registry lists none of LlamaForCausalLM)"},
		// a measured verdict outranks the declared one, both ways
		{"declared served, measured fail", &modelDetail{Model: compat.Model{ID: "gpt2", Result: passResult(),
			Serving: measured(cell(true), "fail", compat.Ptr("load_error:checkpoint"))}},
			ExitNotPassing, "gpt2: fail serving with vllm-torchtpu 0.29.0 (measured 2026-12-06, runtime 0.29.0~2.13.0~0.2.0~0.0.50, 16 tokens agree with the CPU reference): load_error:checkpoint"},
		{"declared served, measured pass", &modelDetail{Model: compat.Model{ID: "gpt2", Result: failResult(), Serving: measured(cell(true), "pass", nil)}},
			ExitPass, "gpt2: pass serving with vllm-torchtpu 0.29.0 (measured 2026-12-06, runtime 0.29.0~2.13.0~0.2.0~0.0.50, 16 tokens agree with the CPU reference): vllm serve gpt2"},
		// a later probe that judged nothing (the store's latest_attempt) leaves the judged verdict, and is named
		{"measured fail, a later probe not judged", &modelDetail{Model: compat.Model{ID: "gpt2", Result: passResult(),
			Serving: laterNotJudged(measured(cell(true), "fail", compat.Ptr("load_error:checkpoint")))}},
			ExitNotPassing, "gpt2: fail serving with vllm-torchtpu 0.29.0 (measured 2026-12-06, runtime 0.29.0~2.13.0~0.2.0~0.0.50, 16 tokens agree with the CPU reference; the latest probe, 2026-12-07, judged nothing: skipped no_reference): load_error:checkpoint"},
		// a measured probe that judged nothing (no CPU reference, the scanner's own error) leaves the declared verdict
		{"declared served, measured not judged", &modelDetail{Model: compat.Model{ID: "gpt2", Result: failResult(), Serving: measured(cell(true), "skipped", nil)}},
			ExitPass, "gpt2: served by vllm-torchtpu 0.29.0 as generation (declared, LlamaForCausalLM)"},
		{"not served, measured error", &modelDetail{Model: compat.Model{ID: "gpt2", Result: passResult(), Serving: measured(cell(false), "error", nil)}},
			ExitNotPassing, "gpt2: not served by vllm-torchtpu 0.29.0 (declared"},
		{"unknown", &modelDetail{Model: compat.Model{ID: "gpt2", Result: passResult()}},
			ExitUntested, "gpt2: serving with vLLM-TorchTPU unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			srv := server(t, 0, tt.detail, &seen)
			code, line := Check(context.Background(), srv.URL, "gpt2", compat.TargetTPU, "", compat.ModeServe, srv.Client())
			if code != tt.wantCode || !strings.HasPrefix(line, tt.wantLine) {
				t.Errorf("got %d %q\nwant %d %q", code, line, tt.wantCode, tt.wantLine)
			}
		})
	}
	// unknown model: as every mode
	srv := server(t, 404, nil, new(string))
	if code, _ := Check(context.Background(), srv.URL, "gpt2", compat.TargetTPU, "", compat.ModeServe, srv.Client()); code != ExitUntested {
		t.Errorf("unknown model: %d", code)
	}
}
