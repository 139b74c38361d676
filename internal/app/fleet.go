package app

import (
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// fleetMetrics are the series of --dispatch workers on /metrics. The queue
// depth (queued + leased) and scanner_work_desired_workers are what an
// autoscaler of the worker pool reads (docs/fleet.md).
type fleetMetrics struct {
	depth    *metrics.GaugeVec   // open jobs by target, runtime and state (queued, leased)
	lost     *metrics.CounterVec // leases that expired unrenewed
	results  *metrics.CounterVec // results recorded, by worker host and status
	lastSeen *metrics.GaugeVec   // unix time a worker was last heard from, by host
	workers  *metrics.GaugeVec   // live and busy workers
	desired  *metrics.GaugeVec   // the scaling hint
	stalled  *metrics.GaugeVec   // queued jobs no live worker can take

	mu       sync.Mutex
	lostSeen int64                // the store's lost-lease count at the last sweep; -1 before the first
	depthSet map[[3]string]bool   // depth series ever set, zeroed when they drain
	seenSet  map[string]time.Time // hosts with a last-seen series, as it stands
	heard    map[string]time.Time // hosts with any series, last heard from (forgotten after workerForget)
}

func newFleetMetrics(r *metrics.Registry) *fleetMetrics {
	m := &fleetMetrics{
		depth:    r.Gauge("scanner_work_queue_depth", "Open jobs of the work queue, by target, runtime and state (queued: waiting for a worker; leased: held by one).", "target", "runtime", "state"),
		lost:     r.Counter("scanner_work_leases_expired_total", "Leases that expired without a heartbeat (their job went back to the queue, or failed at the third)."),
		results:  r.Counter("scanner_work_results_total", "Results recorded from the work queue, by worker host and status.", "worker", "status"),
		lastSeen: r.Gauge("scanner_work_worker_last_seen_seconds", "Unix time a worker was last heard from, by host.", "worker"),
		workers:  r.Gauge("scanner_work_workers", "Workers heard from within their liveness window (live), and of those the ones holding a lease (busy).", "state"),
		desired:  r.Gauge("scanner_work_desired_workers", "Scaling hint: workers of the planned size that would hold every open job at once (0 when the queue is empty)."),
		stalled:  r.Gauge("scanner_work_stalled_jobs", "Queued jobs that no live worker can take (no worker of their target and runtime: a rollout to another runtime, a fleet gone)."),
		lostSeen: -1, // the first sweep sets the baseline: earlier processes' losses are not this one's
		depthSet: map[[3]string]bool{},
		seenSet:  map[string]time.Time{},
		heard:    map[string]time.Time{},
	}
	m.lost.With().Add(0) // the series exists from the start, at 0
	return m
}

// result counts one recorded result.
func (m *fleetMetrics) result(o store.JobOutcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results.With(o.Result.Worker, string(o.Result.Status)).Inc()
	m.hear(o.Result.Worker, o.Result.TestedAt)
}

// hear notes that host was heard from at t. m.mu is held.
func (m *fleetMetrics) hear(host string, t time.Time) {
	if h, ok := m.heard[host]; !ok || t.After(h) {
		m.heard[host] = t
	}
}

// stats takes a sweep's figures.
func (m *fleetMetrics) stats(st dispatch.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := st.Queue.LostLeases - m.lostSeen; d > 0 && m.lostSeen >= 0 {
		m.lost.With().Add(float64(d))
	}
	m.lostSeen = st.Queue.LostLeases
	now := map[[3]string]float64{}
	for _, q := range st.Queue.Open {
		now[[3]string{string(q.Target), q.RuntimeKey, "queued"}] = float64(q.Queued)
		now[[3]string{string(q.Target), q.RuntimeKey, "leased"}] = float64(q.Leased)
	}
	for k := range m.depthSet {
		if _, ok := now[k]; !ok {
			now[k] = 0 // drained: the series stays, at zero
		}
	}
	for k, v := range now {
		m.depth.With(k[0], k[1], k[2]).Set(v)
		m.depthSet[k] = true
	}
	for _, w := range st.Workers {
		m.hear(w.Host, w.LastSeen)
		if t, ok := m.seenSet[w.Host]; (!ok || w.LastSeen.After(t)) && st.At.Sub(w.LastSeen) <= workerForget {
			m.seenSet[w.Host] = w.LastSeen
			m.lastSeen.With(w.Host).Set(float64(w.LastSeen.UnixNano()) / 1e9)
		}
	}
	// Hosts gone for longer than workerForget (a rollout replaced them)
	// leave the export, or it would grow with every host ever seen.
	for host, t := range m.heard {
		if st.At.Sub(t) > workerForget {
			m.lastSeen.Forget("worker", host)
			m.results.Forget("worker", host)
			delete(m.seenSet, host)
			delete(m.heard, host)
		}
	}
	m.workers.With("live").Set(float64(st.Live))
	m.workers.With("busy").Set(float64(st.Busy))
	m.desired.With().Set(float64(st.Desired))
	m.stalled.With().Set(float64(st.Stalled))
}

// workerForget is how long a worker host's series stay on /metrics after
// it was last heard from.
const workerForget = time.Hour

// newDispatcher builds the work queue's dispatcher with its metrics.
func (a *App) newDispatcher() *dispatch.Dispatcher {
	fm := newFleetMetrics(a.Metrics)
	return dispatch.New(a.Store, dispatch.Config{
		LeaseTTL: a.cfg.LeaseTTL, Logger: a.log,
		Hooks: dispatch.Hooks{
			Result: func(o store.JobOutcome) {
				fm.result(o)
				a.m.probes.With(string(o.Result.Status)).Inc()
				a.m.probeSeconds.With(string(o.Result.Status)).Observe(o.Result.DurationS)
			},
			Stats: fm.stats,
		},
	})
}
