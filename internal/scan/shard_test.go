package scan

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
)

// occupancy wraps a prober and records how many devices its probes hold at
// once, and which each got.
type occupancy struct {
	Prober
	mu     sync.Mutex
	now    int
	most   int
	chips  map[string][]int
	ranks  map[string]int
	notes  map[string]string
	hold   time.Duration
	bychip map[int]int // probes on each chip now
	shared bool        // a chip held by two probes at once
}

func (o *occupancy) Probe(ctx context.Context, req probe.Request) compat.Result {
	n := max(req.Devices, 1)
	chips := req.Chips
	if chips == nil {
		chips = []int{-1} // a one-device probe's device is its pinned prober's; the count is what matters
	}
	o.mu.Lock()
	o.now += n
	o.most = max(o.most, o.now)
	o.chips[req.ModelID], o.ranks[req.ModelID], o.notes[req.ModelID] = req.Chips, req.Devices, req.PlanNote
	for _, c := range chips {
		if c >= 0 && o.bychip[c] > 0 {
			o.shared = true
		}
		o.bychip[c]++
	}
	o.mu.Unlock()
	time.Sleep(o.hold)
	res := o.Prober.Probe(ctx, req)
	o.mu.Lock()
	o.now -= n
	for _, c := range chips {
		o.bychip[c]--
	}
	o.mu.Unlock()
	return res
}

// bigLlama needs two devices of 3 MiB: 1,705,216 parameters (layers 2 ×
// (q 65,536 + k, v 65,536 + o 65,536 + MLP 393,216 + norms 512) + final
// norm 256 + embeddings and head 2 × 262,144), 3,410,432 bf16 bytes, plus a
// KV cache of 2 layers × 2 × 2 heads × 64 × 2 bytes × 256 tokens =
// 262,144: 3,672,576 × 1.1 over 3,145,728 is 1.3, so 2 devices, and 2
// divides its 4 heads and 2 key/value heads.
const bigLlama = `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":256,"intermediate_size":512,
"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":1024,"max_position_embeddings":256}`

// TestScanShardsWhatNeedsSeveralDevices: on a host of two devices with
// --device-memory 3 MiB, the model that needs two is probed over both
// (Request.Devices 2 on chips 0 and 1, the plan saying why), the others on
// one each, side by side; never more than two devices are held at once.
func TestScanShardsWhatNeedsSeveralDevices(t *testing.T) {
	ids := []string{"org/small-0", "org/small-1", "org/big", "org/small-2", "org/small-3", "org/small-4"}
	models := make([]hub.ModelInfo, 0, len(ids))
	for _, id := range ids {
		models = append(models, model(id, "text-generation", "transformers"))
	}
	f := newFixture(t, models...)
	f.hub.configs["org/big"] = bigLlama
	occ := &occupancy{Prober: f.prober, chips: map[string][]int{}, ranks: map[string]int{}, notes: map[string]string{},
		bychip: map[int]int{}, hold: 50 * time.Millisecond}
	f.s.Prober = occ
	sc, err := f.s.Run(context.Background(), Options{Target: compat.TargetCPU, Mode: compat.ModeArch, Limit: 100,
		Devices: 2, DeviceMemory: 3 << 20}, Hooks{})
	if err != nil || sc.Probed != len(ids) {
		t.Fatalf("scan %+v: %v", sc, err)
	}
	if !slices.Equal(occ.chips["org/big"], []int{0, 1}) || occ.ranks["org/big"] != 2 ||
		!strings.Contains(occ.notes["org/big"], "needs 2 devices of 3 MiB (--device-memory): sharded over 2") {
		t.Errorf("org/big: chips %v ranks %d note %q, want both devices", occ.chips["org/big"], occ.ranks["org/big"], occ.notes["org/big"])
	}
	for _, id := range ids {
		if id != "org/big" && (occ.ranks[id] > 1 || occ.chips[id] != nil) {
			t.Errorf("%s: %d ranks on %v, want one device", id, occ.ranks[id], occ.chips[id])
		}
		if f.status(t, id) != compat.StatusPass {
			t.Errorf("%s: %s", id, f.status(t, id))
		}
	}
	if occ.most > 2 || occ.shared {
		t.Errorf("%d devices held at once (a device shared: %v) on a host of 2", occ.most, occ.shared)
	}
	if occ.most < 2 {
		t.Errorf("never two devices held at once: the one-device probes did not run side by side")
	}
}

// namedProber records the models it probed, then answers as its fakeProber.
type namedProber struct {
	*fakeProber
	mu     sync.Mutex
	probed []string
}

func (p *namedProber) Probe(ctx context.Context, req probe.Request) compat.Result {
	p.mu.Lock()
	p.probed = append(p.probed, req.ModelID)
	p.mu.Unlock()
	return p.fakeProber.Probe(ctx, req)
}

func (p *namedProber) models() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(slices.Values(p.probed))
}

// A one-device probe runs on its device's prober (DeviceProbers), a
// sharded probe on the host's, which pins its ranks; a device without a
// prober of its own (a nil entry, or past the list) uses the host's.
func TestProbesRunOnTheirDevicesProbers(t *testing.T) {
	small := []string{"d/small-0", "d/small-1", "d/small-2", "d/small-3"}
	for _, tt := range []struct {
		name   string
		device []bool // which devices have a prober of their own
	}{{"both devices", []bool{true, true}}, {"the second without", []bool{true}}, {"the first without", []bool{false, true}}} {
		t.Run(tt.name, func(t *testing.T) {
			var models []hub.ModelInfo
			for _, id := range append([]string{"d/big"}, small...) {
				models = append(models, model(id, "text-generation", "transformers"))
			}
			f := newFixture(t, models...)
			f.hub.configs["d/big"] = bigLlama
			f.prober.delay = 50 * time.Millisecond // one-device probes overlap: both devices get some
			host := &namedProber{fakeProber: f.prober}
			f.s.Prober = host
			var own []*namedProber
			for _, has := range tt.device {
				if !has {
					f.s.DeviceProbers = append(f.s.DeviceProbers, nil)
					continue
				}
				p := &namedProber{fakeProber: f.prober}
				own = append(own, p)
				f.s.DeviceProbers = append(f.s.DeviceProbers, p)
			}
			sc, err := f.s.Run(context.Background(), Options{Target: compat.TargetCPU, Mode: compat.ModeArch, Devices: 2, DeviceMemory: 3 << 20}, Hooks{})
			if err != nil || sc.Probed != 5 {
				t.Fatalf("scan %+v %v", sc, err)
			}
			var byOwn []string
			for _, p := range own {
				byOwn = append(byOwn, p.models()...)
			}
			hostRan := host.models()
			if !slices.Contains(hostRan, "d/big") || slices.Contains(byOwn, "d/big") {
				t.Errorf("the sharded probe ran on %v (host) / %v (devices'), want the host's", hostRan, byOwn)
			}
			if all := slices.Sorted(slices.Values(append(slices.Clone(byOwn), hostRan...))); !slices.Equal(all, append([]string{"d/big"}, small...)) {
				t.Errorf("probed %v, want each model once", all)
			}
			if len(tt.device) == 2 && tt.device[0] && len(hostRan) != 1 {
				t.Errorf("with a prober on every device the host probed %v, want the sharded probe only", hostRan)
			}
		})
	}
}
