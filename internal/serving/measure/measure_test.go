package measure

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving/measure/measuretest"
)

func TestTableAndAgree(t *testing.T) {
	if tb := TableOf(); tb.MaxTokens != 16 || tb.MaxModelLen != 256 || tb.PrefixTokens != 4 {
		t.Errorf("serving.json %+v: the issue asks 16 tokens at max_model_len 256", tb)
	}
	for _, bad := range []string{`{"max_tokens": 4, "max_model_len": 256, "prefix_tokens": 5}`, `{"max_tokens": 0, "max_model_len": 1, "prefix_tokens": 0}`, `[]`} {
		if _, err := parseTable([]byte(bad)); err == nil {
			t.Errorf("parseTable(%s) accepted", bad)
		}
	}
	// The bounds themselves are allowed: 1 token everywhere, a prefix as long as the answer.
	for _, good := range []string{`{"max_tokens": 1, "max_model_len": 1, "prefix_tokens": 1}`, `{"max_tokens": 4, "max_model_len": 1, "prefix_tokens": 4}`} {
		if _, err := parseTable([]byte(good)); err != nil {
			t.Errorf("parseTable(%s): %v", good, err)
		}
	}
	tb := Table{MaxTokens: 16, MaxModelLen: 256, PrefixTokens: 4}
	for _, tt := range []struct {
		ref, got []int
		agreed   int
		pass     bool
	}{
		{[]int{1, 2, 3, 4, 5, 6}, []int{1, 2, 3, 4, 5, 6}, 6, true},
		{[]int{1, 2, 3, 4, 5, 6}, []int{1, 2, 3, 4, 9, 9}, 4, true}, // parted after the prefix: reported, not held
		{[]int{1, 2, 3, 4, 5, 6}, []int{1, 2, 3, 9, 5, 6}, 3, false},
		{[]int{1, 2}, []int{1, 2, 7}, 2, true}, // the reference ended (end of text): held as far as it goes
		{[]int{1, 2, 3, 4}, []int{1, 2}, 2, false},
		{nil, []int{1}, 0, false},
		{[]int{1}, nil, 0, false},
	} {
		if agreed, pass := Agree(tb, tt.ref, tt.got); agreed != tt.agreed || pass != tt.pass {
			t.Errorf("Agree(%v, %v) = %d, %v; want %d, %v", tt.ref, tt.got, agreed, pass, tt.agreed, tt.pass)
		}
	}
}

func TestRuntimeKey(t *testing.T) {
	v := func(s string) *string { return &s }
	r := Runtime{VLLMTorchTPU: v("0.29.0"), Torch: v("2.13.0"), TorchTPU: v("0.2.0"), Libtpu: v("0.0.50~x")}
	if got := r.Key(); got != "0.29.0~2.13.0~0.2.0~0.0.50_x" {
		t.Errorf("key %q", got)
	}
	if got := (Runtime{}).Key(); got != "~~~" {
		t.Errorf("empty key %q", got)
	}
}

func TestRunAgainstStandIn(t *testing.T) {
	py := measuretest.VLLMPython(t)
	ref := &Reference{PromptTokenIDs: []int{791, 6864, 315, 9822, 374}, Tokens: []int{12366, 13, 578, 6864, 315, 9822, 374, 1101,
		3967, 439, 279, 330, 13020, 315, 8828, 1, 2}}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, tt := range []struct {
		behaviour string
		status    compat.Status
		stage     string
		class     compat.FailureClass
		sig       string
		timeout   time.Duration
	}{
		{"ok", compat.StatusPass, "generate", "", "", 0},
		{"other_tokens", compat.StatusFail, "numerics", compat.ClassNumericsMismatch, "numerics_mismatch:serve_greedy_tokens", 0},
		{"load_error", compat.StatusFail, "load", compat.ClassLoadError, "load_error:", 0},
		{"unsupported_arch", compat.StatusFail, "load", compat.ClassLoadError, "load_error:vllm_unsupported_architecture", 0},
		{"oom", compat.StatusOOM, "load", compat.ClassOOM, "oom:load", 0},
		{"unsupported_op", compat.StatusFail, "generate", compat.ClassUnsupportedOp, "unsupported_op:aten::_fft_r2c", 0},
		{"hang", compat.StatusTimeout, "load", compat.ClassTimeout, "timeout:load", 3 * time.Second},
		{"die", compat.StatusCrash, "load", compat.ClassCrash, "crash:load", 0},
	} {
		t.Run(tt.behaviour, func(t *testing.T) {
			limit := time.Minute
			if tt.timeout > 0 {
				limit = tt.timeout
			}
			if tt.behaviour == "ok" {
				limit = 0 // no timeout given: the default (20 minutes), not none at all
			}
			start := time.Now()
			r := Run(context.Background(), Request{VLLMPython: py, ModelDir: measuretest.ModelDir(t, tt.behaviour, ref.Tokens), TensorParallel: 2,
				Timeout: limit, Reference: ref})
			if tt.timeout > 0 && time.Since(start) > tt.timeout+10*time.Second {
				t.Errorf("a hung probe took %s to end", time.Since(start))
			}
			if compat.Status(r.Status) != tt.status || str(r.Stage) != tt.stage || r.Evidence != "measured" {
				t.Fatalf("status %s at %s, want %s at %s: %s\n%s", r.Status, str(r.Stage), tt.status, tt.stage, str(r.Message), r.LogTail)
			}
			if tt.class != "" && (r.FailureClass == nil || compat.FailureClass(*r.FailureClass) != tt.class || !strings.HasPrefix(str(r.Signature), tt.sig)) {
				t.Errorf("class %v signature %q, want %s %q", r.FailureClass, str(r.Signature), tt.class, tt.sig)
			}
			if r.TensorParallelSize != 2 || r.MaxModelLen != 256 {
				t.Errorf("tp %d, max_model_len %d", r.TensorParallelSize, r.MaxModelLen)
			}
			if tt.behaviour != "hang" && tt.behaviour != "die" && (r.Runtime.VLLMTorchTPU == nil || *r.Runtime.VLLMTorchTPU != "0.29.0") {
				t.Errorf("runtime %+v: the stand-in's vllm-torchtpu 0.29.0", r.Runtime)
			}
			switch tt.behaviour {
			case "ok":
				m := r.Metrics
				if m.LoadS == nil || m.TTFTS == nil || m.TokensPerS == nil || *m.TokensPerS <= 0 || m.AgreedTokens == nil || *m.AgreedTokens != 16 {
					t.Errorf("metrics %+v", m)
				}
				if len(r.Tokens) != 16 || r.Tokens[0] != 12366 {
					t.Errorf("tokens %v: 16 of the reference's", r.Tokens)
				}
			case "other_tokens":
				if r.Metrics.AgreedTokens == nil || *r.Metrics.AgreedTokens != 1 {
					t.Errorf("agreed %v, want 1", r.Metrics.AgreedTokens)
				}
			default:
				if r.Metrics.TokensPerS != nil {
					t.Errorf("a failed probe measured %v tok/s", *r.Metrics.TokensPerS)
				}
			}
		})
	}
}

// Without the transformers CPU reference's greedy tokens (the reference
// failed, or generated none) the serving probe is not judged: skipped with
// reason no_reference, never a pass or a fail, and vLLM is not started.
func TestReferenceFails(t *testing.T) {
	py := measuretest.VLLMPython(t)
	dir := measuretest.ModelDir(t, "ok", []int{1, 2, 3, 4})
	for name, req := range map[string]Request{
		"the reference fails":    {VLLMPython: py, Python: py, ModelDir: dir, Timeout: time.Minute}, // the stand-in has no transformers
		"the reference is empty": {VLLMPython: py, ModelDir: dir, Timeout: time.Minute, Reference: &Reference{PromptTokenIDs: []int{1, 2}}},
	} {
		t.Run(name, func(t *testing.T) {
			r := Run(context.Background(), req)
			if compat.Status(r.Status) != compat.StatusSkipped || r.Reason == nil || *r.Reason != compat.ServingReasonNoReference ||
				r.Message == nil || !strings.HasPrefix(*r.Message, "not judged: ") || r.Signature != nil || r.Judged() {
				t.Fatalf("status %s reason %v signature %v: %v", r.Status, r.Reason, r.Signature, r.Message)
			}
			if r.Runtime.VLLMTorchTPU != nil || r.Tokens != nil || r.Metrics.AgreedTokens != nil {
				t.Errorf("vLLM ran without a reference: %+v", r)
			}
		})
	}
}

// WithoutReference: an inference probe whose float32 CPU reference failed
// (an error it shares) leaves no reference; any verdict of the target, or
// an error of the environment, leaves the serving probe to try.
func TestWithoutReference(t *testing.T) {
	sig := func(s string) *string { return &s }
	for _, tt := range []struct {
		res  compat.Result
		none bool
	}{
		{compat.Result{Status: compat.StatusError, Signature: sig("reference:forward")}, true},
		{compat.Result{Status: compat.StatusError, Signature: sig("harness_load:checkpoint")}, true},
		{compat.Result{Status: compat.StatusError, Signature: sig("harness_inputs:processor")}, true},
		{compat.Result{Status: compat.StatusError, Signature: sig("environment:missing_package:timm")}, false},
		{compat.Result{Status: compat.StatusFail, Signature: sig("unsupported_op:aten::_fft_r2c")}, false},
		{compat.Result{Status: compat.StatusOOM}, false},
		{compat.Result{Status: compat.StatusPass}, false},
	} {
		why, none := WithoutReference(tt.res)
		if none != tt.none || (none && !strings.Contains(why, *tt.res.Signature)) {
			t.Errorf("WithoutReference(%s %v) = %q, %v; want %v", tt.res.Status, deref(tt.res.Signature), why, none, tt.none)
		}
	}
	r := NoReference(3, "why")
	if r.Status != "skipped" || r.TensorParallelSize != 3 || r.Evidence != EvidenceMeasured || r.MaxModelLen != TableOf().MaxModelLen ||
		*r.Message != "not judged: why" || r.MeasuredAt.IsZero() {
		t.Errorf("NoReference %+v", r)
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
