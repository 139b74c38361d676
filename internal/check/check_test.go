package check

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

var testedAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func passResult() *compat.Result {
	return &compat.Result{
		Target: compat.TargetTPU, Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate),
		Mode: compat.Ptr(compat.ModeFull), TestedAt: testedAt,
		Runtime: compat.Runtime{Torch: "2.9.0", TorchTPU: "0.2.0"},
	}
}

func failResult() *compat.Result {
	return &compat.Result{
		Target: compat.TargetTPU, Status: compat.StatusFail, Stage: compat.Ptr(compat.StageForward),
		FailureClass: compat.Ptr(compat.ClassUnsupportedOp), Op: compat.Ptr("aten::_fft_r2c"),
		Mode: compat.Ptr(compat.ModeArch), TestedAt: testedAt,
		Runtime: compat.Runtime{Torch: "2.9.0", TorchTPU: "0.2.0"},
	}
}

// server answers GET /api/v1/models/{id} with the given detail (nil → 404)
// and records the request path and query.
func server(t *testing.T, status int, d *modelDetail, seen *string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			*seen = r.URL.RequestURI()
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case status != 0:
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":"boom"}`))
		case d == nil:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"not found"}`))
		default:
			_ = json.NewEncoder(w).Encode(d)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCheck(t *testing.T) {
	regression := compat.Event{Target: compat.TargetTPU, Kind: compat.EventRegression, FromStatus: compat.StatusPass,
		ToStatus: compat.StatusFail, At: testedAt}
	fix := compat.Event{Target: compat.TargetTPU, Kind: compat.EventFix, FromStatus: compat.StatusFail,
		ToStatus: compat.StatusPass, At: testedAt}
	cpuRegression := regression
	cpuRegression.Target = compat.TargetCPU
	// an event of the scanner's own error, as written before such errors made none: no change of verdict
	toError := compat.Event{Target: compat.TargetTPU, Kind: compat.EventChange, FromStatus: compat.StatusPass,
		ToStatus: compat.StatusError, At: testedAt}

	tests := []struct {
		name     string
		status   int
		detail   *modelDetail
		target   compat.Target
		wantCode int
		wantLine string
	}{
		{"pass", 0, &modelDetail{Model: compat.Model{ID: "Qwen/Qwen3-0.6B", Result: passResult()}, Events: []compat.Event{fix}},
			compat.TargetTPU, ExitPass, "Qwen/Qwen3-0.6B: pass on tpu (full, 2026-11-30, torch_tpu 0.2.0)"},
		{"pass, other target regressed", 0, &modelDetail{Model: compat.Model{ID: "gpt2", Result: passResult()}, Events: []compat.Event{cpuRegression}},
			"", ExitPass, "gpt2: pass on tpu (full, 2026-11-30, torch_tpu 0.2.0)"},
		{"fail", 0, &modelDetail{Model: compat.Model{ID: "gpt2", Result: failResult()}},
			compat.TargetTPU, ExitNotPassing, "gpt2: fail on tpu at forward: unsupported_op aten::_fft_r2c (arch, 2026-11-30, torch_tpu 0.2.0)"},
		{"regression", 0, &modelDetail{Model: compat.Model{ID: "gpt2", Result: failResult()}, Events: []compat.Event{regression, fix}},
			compat.TargetTPU, ExitNotPassing, "gpt2: fail on tpu at forward: unsupported_op aten::_fft_r2c (arch, 2026-11-30, torch_tpu 0.2.0) — regression since 2026-11-30 (was pass)"},
		{"a regression behind the scanner's error", 0, &modelDetail{Model: compat.Model{ID: "gpt2", Result: failResult()}, Events: []compat.Event{toError, regression}},
			compat.TargetTPU, ExitNotPassing, "gpt2: fail on tpu at forward: unsupported_op aten::_fft_r2c (arch, 2026-11-30, torch_tpu 0.2.0) — regression since 2026-11-30 (was pass)"},
		{"pass but newest change a regression", 0, &modelDetail{Model: compat.Model{ID: "gpt2", Result: passResult()}, Events: []compat.Event{regression}},
			compat.TargetTPU, ExitNotPassing, "gpt2: pass on tpu (full, 2026-11-30, torch_tpu 0.2.0) — but the newest change is a regression"},
		{"untested", 0, &modelDetail{Model: compat.Model{ID: "gpt2"}},
			compat.TargetTPU, ExitUntested, "gpt2: untested on tpu"},
		{"skipped", 0, &modelDetail{Model: compat.Model{ID: "gpt2", Result: &compat.Result{Target: compat.TargetTPU, Status: compat.StatusSkipped,
			Reason: compat.Ptr(compat.ReasonRemoteCode), TestedAt: testedAt}}},
			compat.TargetTPU, ExitNotPassing, "gpt2: skipped on tpu: remote_code (2026-11-30)"},
		{"error is no verdict", 0, &modelDetail{Model: compat.Model{ID: "gpt2", Result: &compat.Result{Target: compat.TargetTPU, Status: compat.StatusError,
			Message: compat.Ptr("no device\nsecond line"), TestedAt: testedAt}}},
			compat.TargetTPU, ExitUntested, "gpt2: error on tpu: no device (2026-11-30) — no verdict: the scanner's own error, not the model's"},
		{"unknown", 0, nil, compat.TargetTPU, ExitUntested, "gpt2: unknown to the scanner at "},
		{"5xx", 503, nil, compat.TargetTPU, ExitUnreachable, "gpt2: server answered 503 Service Unavailable: boom"},
		{"429", 429, nil, compat.TargetTPU, ExitUnreachable, "gpt2: server answered 429 Too Many Requests: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			srv := server(t, tt.status, tt.detail, &seen)
			code, line := Check(context.Background(), srv.URL+"/", "gpt2", tt.target, "", "", srv.Client())
			if code != tt.wantCode {
				t.Errorf("code = %d, want %d (%s)", code, tt.wantCode, line)
			}
			if !strings.HasPrefix(line, tt.wantLine) {
				t.Errorf("line = %q\nwant   %q", line, tt.wantLine)
			}
			if strings.Contains(line, "\n") {
				t.Errorf("line has a newline: %q", line)
			}
			wantPath := "/api/v1/models/gpt2"
			if tt.target != "" {
				wantPath += "?target=" + string(tt.target)
			}
			if seen != wantPath {
				t.Errorf("requested %q, want %q", seen, wantPath)
			}
		})
	}
}

func TestCheckTwoPartIDAndAuto(t *testing.T) {
	var seen string
	srv := server(t, 0, &modelDetail{Model: compat.Model{ID: "Qwen/Qwen3-0.6B", Result: passResult()}}, &seen)
	code, _ := Check(context.Background(), srv.URL, "Qwen/Qwen3-0.6B", compat.TargetAuto, "", "", nil)
	if code != ExitPass || seen != "/api/v1/models/Qwen/Qwen3-0.6B" {
		t.Fatalf("code %d, path %q", code, seen)
	}
}

func TestCheckUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	code, line := Check(context.Background(), "http://"+addr, "gpt2", compat.TargetTPU, "", "", nil)
	if code != ExitUnreachable || !strings.Contains(line, "unreachable") {
		t.Fatalf("code %d, line %q", code, line)
	}
}

func TestCheckGarbageAndBadInput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>a proxy's login page</html>"))
	}))
	defer srv.Close()
	if code, line := Check(context.Background(), srv.URL, "gpt2", compat.TargetTPU, "", "", nil); code != ExitUnreachable {
		t.Errorf("garbage: code %d, %q", code, line)
	}
	if code, _ := Check(context.Background(), "ftp://x", "gpt2", compat.TargetTPU, "", "", nil); code != ExitUnreachable {
		t.Errorf("bad scheme: code %d", code)
	}
	if code, _ := Check(context.Background(), srv.URL, "../etc/passwd", compat.TargetTPU, "", "", nil); code != ExitUnreachable {
		t.Errorf("bad id: code %d", code)
	}
	if code, line := Check(context.Background(), srv.URL, "gpt2", "gpu", "", "", nil); code != ExitUnreachable || !strings.Contains(line, "unknown target") {
		t.Errorf("bad target: code %d, %q", code, line)
	}
}

func TestCheckContextCancelled(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if code, _ := Check(ctx, srv.URL, "gpt2", compat.TargetTPU, "", "", nil); code != ExitUnreachable {
		t.Fatalf("code %d", code)
	}
}
