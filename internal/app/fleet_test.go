package app

import (
	"bytes"
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
	m.lostSeen = -1
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
