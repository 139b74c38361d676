package app

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

func TestFleetMetrics(t *testing.T) {
	reg := metrics.NewRegistry()
	m := newFleetMetrics(reg)
	seen := time.Unix(1_800_000_000, 0).UTC()
	sweep := func(lost int64, open ...store.QueueDepth) string {
		m.stats(dispatch.Stats{Queue: store.QueueStats{Open: open, LostLeases: lost}, Live: 3, Busy: 2, Desired: 5,
			Workers: []fleet.WorkerView{{Host: "tpu-0", LastSeen: seen}}})
		var b bytes.Buffer
		if err := reg.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	out := sweep(7, store.QueueDepth{Target: "tpu", RuntimeKey: "k", Queued: 4, Leased: 2})
	for _, want := range []string{
		`scanner_work_queue_depth{target="tpu",runtime="k",state="queued"} 4`,
		`scanner_work_queue_depth{target="tpu",runtime="k",state="leased"} 2`,
		`scanner_work_leases_expired_total 0`, // an earlier process's losses are the baseline
		`scanner_work_workers{state="live"} 3`,
		`scanner_work_workers{state="busy"} 2`,
		`scanner_work_desired_workers 5`,
		`scanner_work_worker_last_seen_seconds{worker="tpu-0"} 1.8e+09`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
	out = sweep(9) // drained, two more leases lost
	for _, want := range []string{
		`scanner_work_queue_depth{target="tpu",runtime="k",state="queued"} 0`,
		`scanner_work_leases_expired_total 2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("after draining: missing %s in\n%s", want, out)
		}
	}
	m.result(store.JobOutcome{Result: compat.Result{Worker: "tpu-0", Status: compat.StatusPass}})
	if out = sweep(9); !strings.Contains(out, `scanner_work_results_total{worker="tpu-0",status="pass"} 1`) {
		t.Errorf("results per worker missing:\n%s", out)
	}
}

// TestFleetMetricsForgetGoneWorkers: /metrics does not grow with every
// worker host ever seen (rollouts replace them all): the series of a host
// not heard from for workerForget go, while a live one's stay.
func TestFleetMetricsForgetGoneWorkers(t *testing.T) {
	reg := metrics.NewRegistry()
	m := newFleetMetrics(reg)
	now := time.Unix(1_800_000_000, 0).UTC()
	var workers []fleet.WorkerView
	for i := range 50 {
		workers = append(workers, fleet.WorkerView{Host: fmt.Sprintf("old-%d", i), LastSeen: now.Add(-workerForget - time.Minute)})
		m.result(store.JobOutcome{Result: compat.Result{Worker: fmt.Sprintf("old-%d", i), Status: compat.StatusPass,
			TestedAt: now.Add(-workerForget - time.Hour)}})
	}
	workers = append(workers, fleet.WorkerView{Host: "new-0", LastSeen: now.Add(-time.Minute)})
	m.result(store.JobOutcome{Result: compat.Result{Worker: "new-0", Status: compat.StatusFail, TestedAt: now}})
	// A host only a result named (a job that lost its last lease) is
	// forgotten too.
	m.result(store.JobOutcome{Result: compat.Result{Worker: "lost-0", Status: compat.StatusError, TestedAt: now.Add(-2 * workerForget)}})
	m.stats(dispatch.Stats{At: now, Workers: workers, Stalled: 3})
	var b bytes.Buffer
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, `worker="old-`) || strings.Contains(out, `worker="lost-0"`) {
		t.Errorf("series of hosts gone for over %v are still exported:\n%s", workerForget, out)
	}
	for _, want := range []string{`scanner_work_worker_last_seen_seconds{worker="new-0"}`,
		`scanner_work_results_total{worker="new-0",status="fail"} 1`, `scanner_work_stalled_jobs 3`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
	// A host that went quiet is forgotten at a later sweep, even once it
	// is no longer in the listing.
	m.stats(dispatch.Stats{At: now.Add(workerForget + 2*time.Minute)})
	b.Reset()
	_ = reg.WriteText(&b)
	if strings.Contains(b.String(), `worker="new-0"`) {
		t.Errorf("new-0, silent for over %v, is still exported", workerForget)
	}
}

// TestFleetMetricsLostLeases: after the first sweep's baseline, every rise
// of the store's lost-lease count is counted, from a baseline of 0 too.
func TestFleetMetricsLostLeases(t *testing.T) {
	reg := metrics.NewRegistry()
	m := newFleetMetrics(reg)
	for _, tt := range []struct{ lost, want int64 }{{0, 0}, {3, 3}, {3, 3}, {5, 5}} {
		m.stats(dispatch.Stats{Queue: store.QueueStats{LostLeases: tt.lost}})
		var b bytes.Buffer
		if err := reg.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("scanner_work_leases_expired_total %d\n", tt.want); !strings.Contains(b.String(), want) {
			t.Errorf("store at %d lost leases: want %s in\n%s", tt.lost, want, b.String())
		}
	}
}

// TestFleetMetricsForgetBoundary: a host last heard from exactly
// workerForget ago is still exported; a nanosecond more and it goes.
func TestFleetMetricsForgetBoundary(t *testing.T) {
	reg := metrics.NewRegistry()
	m := newFleetMetrics(reg)
	now := time.Unix(1_800_000_000, 0).UTC()
	edge := now.Add(-workerForget)
	m.stats(dispatch.Stats{At: now, Workers: []fleet.WorkerView{{Host: "edge-0", LastSeen: edge}}})
	var b bytes.Buffer
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := `scanner_work_worker_last_seen_seconds{worker="edge-0"} 1.7999964e+09`; !strings.Contains(b.String(), want) {
		t.Errorf("a host heard from exactly %v ago: want %s in\n%s", workerForget, want, b.String())
	}
	m.stats(dispatch.Stats{At: now.Add(time.Nanosecond)})
	b.Reset()
	_ = reg.WriteText(&b)
	if strings.Contains(b.String(), `worker="edge-0"`) {
		t.Errorf("a host heard from %v ago is still exported:\n%s", workerForget+time.Nanosecond, b.String())
	}
}
