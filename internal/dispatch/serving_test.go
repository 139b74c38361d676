package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// Whether a worker runs serving probes (it was started with --vllm-python)
// and with which vLLM-TorchTPU comes with what it says about itself, on
// register and with every lease request, and the fleet's listing
// (/api/v1/workers) says it: null for a worker that runs none. A version
// that is not printable is refused.
func TestWorkersSayWhetherTheyServe(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, time.Minute)
	plain, vllm := worker("plain", 1), worker("vllm", 1)
	vllm.Serving = &fleet.WorkerServing{VLLMTorchTPU: "0.29.0"}
	for _, w := range []fleet.Worker{plain, vllm} {
		if _, err := f.d.Register(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	views := func() map[string]*fleet.WorkerServing {
		t.Helper()
		ws, err := f.d.Workers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*fleet.WorkerServing{}
		for _, w := range ws {
			out[w.ID] = w.Serving
		}
		return out
	}
	got := views()
	if s, ok := got["plain"]; !ok || s != nil {
		t.Errorf("plain worker: %+v, want no serving", s)
	}
	if s := got["vllm"]; s == nil || s.VLLMTorchTPU != "0.29.0" {
		t.Errorf("--vllm-python worker: %+v, want vllm-torchtpu 0.29.0", s)
	}
	// a lease request carries it too: a worker restarted on a new interpreter, or without one
	vllm.Serving = &fleet.WorkerServing{VLLMTorchTPU: "0.30.0"}
	plain.Serving = &fleet.WorkerServing{}
	for _, w := range []fleet.Worker{plain, vllm} {
		if _, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: w, Max: 1}); err != nil {
			t.Fatal(err)
		}
	}
	got = views()
	if s := got["vllm"]; s == nil || s.VLLMTorchTPU != "0.30.0" {
		t.Errorf("after a lease request: %+v, want 0.30.0", s)
	}
	if s := got["plain"]; s == nil || s.VLLMTorchTPU != "" {
		t.Errorf("a worker whose interpreter said no version: %+v", s)
	}
	vllm.Serving = nil
	if _, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: vllm, Max: 1}); err != nil {
		t.Fatal(err)
	}
	if s := views()["vllm"]; s != nil {
		t.Errorf("restarted without --vllm-python: %+v", s)
	}
	bad := worker("bad", 1)
	bad.Serving = &fleet.WorkerServing{VLLMTorchTPU: "0.29\x1b[31m"}
	if _, err := f.d.Register(ctx, bad); !errors.Is(err, ErrBadRequest) {
		t.Errorf("an unprintable version: %v", err)
	}
}
