package scan

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// refusingHub is a fakeHub whose ModelInfo refuses some ids with a Hub
// error, and whose listing reports its pages (OnPage) as the real client's.
type refusingHub struct {
	*fakeHub
	refuse map[string]error
}

func (h *refusingHub) ModelInfo(ctx context.Context, id, rev string) (hub.ModelInfo, error) {
	if err := h.refuse[id]; err != nil {
		return hub.ModelInfo{}, err
	}
	return h.fakeHub.ModelInfo(ctx, id, rev)
}

func (h *refusingHub) ListModels(ctx context.Context, o hub.ListOptions) ([]hub.ModelInfo, error) {
	list, err := h.fakeHub.ListModels(ctx, o)
	if err == nil && o.OnPage != nil {
		o.OnPage(len(list))
	}
	return list, err
}

// An exact --model the Hub refuses is still stored and skipped; one refused
// as gated is stored as gated, one that is missing is not.
func TestExactModelsTheHubRefuses(t *testing.T) {
	f := newFixture(t)
	f.s.Hub = &refusingHub{fakeHub: f.hub, refuse: map[string]error{
		"org/gated": &hub.Error{Status: 403, Code: hub.CodeGatedRepo, Message: "gated"},
	}}
	sc, err := f.s.Run(context.Background(), Options{Models: []string{"org/gated", "org/gone"}}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Error != "" || sc.Status != store.ScanDone {
		t.Errorf("scan %+v: want done without an error (both ids are valid and scanned)", sc)
	}
	for id, want := range map[string]struct {
		gated  bool
		reason compat.Reason
	}{"org/gated": {true, compat.ReasonGated}, "org/gone": {false, compat.ReasonNotFound}} {
		m, err := f.store.GetModel(context.Background(), id, compat.TargetCPU)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if m.Gated != want.gated {
			t.Errorf("%s: stored gated %v, want %v", id, m.Gated, want.gated)
		}
		if m.Result == nil || m.Result.Status != compat.StatusSkipped || deref(m.Result.Reason) != string(want.reason) {
			t.Errorf("%s: result %+v, want skipped (%s)", id, m.Result, want.reason)
		}
	}
}

// A scan observed with a Progress hook (the CLI's progress) logs the
// listing's pages as they come; one without logs none.
func TestListingPagesAreLoggedForProgress(t *testing.T) {
	for _, progress := range []bool{true, false} {
		f := newFixture(t, model("a/m", "text-generation", "transformers"))
		f.s.Hub = &refusingHub{fakeHub: f.hub}
		var buf bytes.Buffer
		f.s.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		var hooks Hooks
		if progress {
			hooks.Progress = func(Progress) {}
		}
		if _, err := f.s.Run(context.Background(), Options{Limit: 5}, hooks); err != nil {
			t.Fatal(err)
		}
		logged := strings.Contains(buf.String(), `msg="listing models" got=1 limit=5`)
		if logged != progress {
			t.Errorf("with a Progress hook %v: listing page logged %v; log:\n%s", progress, logged, buf.String())
		}
	}
}

// envProber is a fakeProber whose environment is target and runtime.
type envProber struct {
	*fakeProber
	target compat.Target
	rt     compat.Runtime
}

func (p *envProber) Env(ctx context.Context, t compat.Target) (compat.Target, compat.Runtime, error) {
	return p.target, p.rt, nil
}

// The scan's plan is logged with its budget and one device's memory in
// GiB: here both are the 16 GiB the harness reported for a TPU the tables
// do not know.
func TestScanPlannedLogsItsBudget(t *testing.T) {
	f := newFixture(t)
	gb := 16.0
	f.s.Prober = &envProber{fakeProber: f.prober, target: compat.TargetTPU,
		rt: compat.Runtime{Torch: "2.15.0", Device: "unknown accelerator", DeviceCount: 1, DeviceMemGB: &gb}}
	var buf bytes.Buffer
	f.s.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	if _, err := f.s.Run(context.Background(), Options{Target: compat.TargetTPU, Mode: compat.ModeArch}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="scan planned" scan_id=1 models=0 target=tpu mode=arch devices=1 budget_gib=16 budget_of="tpu: device memory"`,
		`device_memory_gib=16 device_memory_of="tpu: device memory"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log has no %s:\n%s", want, buf.String())
		}
	}
}

// --target auto that finds no TPU says where it runs instead; one that
// finds a TPU says nothing of the kind.
func TestAutoTargetWithoutATPUIsLogged(t *testing.T) {
	for _, tpu := range []bool{false, true} {
		f := newFixture(t)
		if tpu {
			f.s.Prober = &envProber{fakeProber: f.prober, target: compat.TargetTPU, rt: compat.Runtime{Torch: "2.15.0", Device: "TPU v5 lite", DeviceCount: 1}}
		}
		var buf bytes.Buffer
		f.s.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		if _, err := f.s.Run(context.Background(), Options{Target: compat.TargetAuto, Mode: compat.ModeArch}, Hooks{}); err != nil {
			t.Fatal(err)
		}
		logged := strings.Contains(buf.String(), `msg="no TPU found: --target auto runs on cpu" scan_id=1 target=cpu device=cpu`)
		if logged == tpu {
			t.Errorf("TPU found %v: the fallback to cpu logged %v; log:\n%s", tpu, logged, buf.String())
		}
		if tpu && strings.Contains(buf.String(), "no TPU found") {
			t.Errorf("a TPU was found, yet the log says none was:\n%s", buf.String())
		}
	}
}
