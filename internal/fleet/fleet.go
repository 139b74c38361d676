package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Seen is a worker as the server last heard from it.
type Seen struct {
	Worker
	LastSeen time.Time
	// Left is when it said it was leaving (SIGTERM: a rollout, a
	// preemption); zero while it works.
	Left time.Time
}

// Live reports whether a worker last seen at lastSeen still counts at now:
// an idle worker long-polls at least every MaxWait, a busy one heartbeats
// every HeartbeatInterval(ttl), so silence beyond the larger of a lease TTL
// and two long polls means it is gone.
func Live(lastSeen, now time.Time, ttl time.Duration) bool {
	return now.Sub(lastSeen) <= max(ttl, 2*MaxWait)
}

// ForgetAfter is how long the fleet keeps the record of a worker it no
// longer hears from (a pod replaced, a host retired): every worker process
// registers under a fresh id, so without it every restart would stay
// listed for ever. A week, so that an operator still sees last week's
// fleet; one that comes back registers again.
const ForgetAfter = 7 * 24 * time.Hour

// LiveAt reports whether the worker counts at now: it did not say it was
// leaving, and it was heard from lately (Live).
func (s Seen) LiveAt(now time.Time, ttl time.Duration) bool {
	return s.Left.IsZero() && Live(s.LastSeen, now, ttl)
}

// Unserved returns the keys of queued jobs (each once, in order) that no
// live worker of fleet can take at now (CanTake): what a rollout to
// another runtime, or a fleet gone, leaves waiting.
func Unserved(keys []QueueKey, fleet []Seen, now time.Time, ttl time.Duration) []QueueKey {
	var out []QueueKey
	for _, k := range keys {
		if slices.Contains(out, k) || slices.ContainsFunc(fleet, func(s Seen) bool {
			return s.LiveAt(now, ttl) && CanTake(k, s.Worker, max(s.Devices, 1))
		}) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// HeartbeatInterval is how often a worker renews its leases: four chances
// per TTL, so that one or two lost requests do not lose a lease.
func HeartbeatInterval(ttl time.Duration) time.Duration { return ttl / 4 }

// Group is the part of a fleet that shares a target and a runtime: what
// one scan plans for.
type Group struct {
	Target     compat.Target
	Runtime    compat.Runtime // of the group's most recently seen worker
	RuntimeKey string
	Workers    []string // ids
	Devices    int
	// MemoryBytes is the smallest host memory among the group's workers
	// (0 when one of them does not know its own): what a cpu budget may
	// count on wherever the job lands.
	MemoryBytes uint64
	// PerWorker is the most devices one worker of the group has: how many
	// probes share a host's memory.
	PerWorker int
}

// ErrNoWorkers: no live worker can run a scan of the requested target.
var ErrNoWorkers = errors.New("no live worker for this target")

// ErrStalled: a scan's queued jobs matched no live worker (Unserved) for
// longer than the scan waits for one.
var ErrStalled = errors.New("no live worker could take the scan's queued jobs")

// PlanGroup chooses the runtime a scan plans against: among the live
// workers of the requested target (auto: tpu workers when any is live,
// else cpu), the group of one target and runtime key with the most
// devices, ties going to the most recently seen. The other groups are
// returned too: a mixed fleet is shown, never silently merged, and their
// workers get no job of this scan.
func PlanGroup(fleet []Seen, target compat.Target, now time.Time, ttl time.Duration) (Group, []Group, error) {
	groups := map[string]*Group{}
	var order []string
	newest := map[string]time.Time{}
	for _, w := range fleet {
		if _, err := compat.ParseResultTarget(string(w.Target)); err != nil || !w.LiveAt(now, ttl) {
			continue
		}
		key := string(w.Target) + "|" + w.Runtime.RetestKey()
		g, ok := groups[key]
		if !ok {
			g = &Group{Target: w.Target, RuntimeKey: w.Runtime.RetestKey(), MemoryBytes: w.MemoryBytes}
			groups[key] = g
			order = append(order, key)
		}
		g.Workers = append(g.Workers, w.ID)
		g.Devices += max(w.Devices, 1)
		g.PerWorker = max(g.PerWorker, w.Devices, 1)
		g.MemoryBytes = min(g.MemoryBytes, w.MemoryBytes)
		if w.LastSeen.After(newest[key]) || !ok {
			newest[key], g.Runtime = w.LastSeen, w.Runtime
		}
	}
	all := make([]Group, 0, len(order))
	for _, k := range order {
		all = append(all, *groups[k])
	}
	want := target
	if target == compat.TargetAuto || target == "" {
		want = compat.TargetCPU
		if slices.ContainsFunc(all, func(g Group) bool { return g.Target == compat.TargetTPU }) {
			want = compat.TargetTPU
		}
	}
	slices.SortStableFunc(all, func(a, b Group) int {
		if c := cmp.Compare(b.Devices, a.Devices); c != 0 {
			return c
		}
		return newest[string(b.Target)+"|"+b.RuntimeKey].Compare(newest[string(a.Target)+"|"+a.RuntimeKey])
	})
	for i, g := range all {
		if g.Target == want {
			return g, append(all[:i:i], all[i+1:]...), nil
		}
	}
	return Group{}, all, fmt.Errorf("fleet: %w %q", ErrNoWorkers, want)
}

// Matches reports whether job may be leased to w: same target, same
// runtime key. The store's lease query filters by the same two columns.
func Matches(jobTarget compat.Target, jobRuntimeKey string, w Worker) bool {
	return jobTarget == w.Target && jobRuntimeKey == w.Runtime.RetestKey()
}

// QueueKey is what a queued job asks of the worker that takes it: its
// target, its runtime, and the devices it is sharded over (Job.Chips; 0
// reads as one). Holds is the one place that judges it.
type QueueKey struct {
	Target     compat.Target
	RuntimeKey string
	Chips      int
}

// Key is the queue key of job, queued under runtimeKey.
func (j Job) Key(runtimeKey string) QueueKey {
	return QueueKey{Target: j.Target, RuntimeKey: runtimeKey, Chips: j.Chips()}
}

// Holds is the one rule of whether worker w can hold a job of k: it
// Matches (target and runtime), and w has at least the devices the job is
// sharded over. The store's lease query filters by the same columns
// (target, runtime_key, devices), and asserts Holds on what it grants;
// CanTake (which long polls a change of the queue wakes) and Unserved (what
// no live worker can take) ask it too.
func Holds(k QueueKey, w Worker) bool {
	return Matches(k.Target, k.RuntimeKey, w) && max(k.Chips, 1) <= max(w.Devices, 1)
}

// CanTake reports whether a worker polling with free of its devices free
// could take a queued job of k: it Holds it, and has a device free (a
// sharded job waits on a worker for the rest of its devices: Pick).
func CanTake(k QueueKey, w Worker, free int) bool {
	return free > 0 && Holds(k, w)
}

// Pick chooses which of a worker's candidate jobs (in queue order, each
// needing chips[i] devices, every one of them held by the worker) to lease
// to it now that free of its devices are free: in order, each that fits
// what is left; the first that does not fit ends the picking, and is
// picked itself only when nothing was picked before it (the worker then
// holds its lease until its devices free up, and takes nothing else
// meanwhile), so that a sharded job is never passed over for the
// one-device jobs behind it.
func Pick(chips []int, free int) []int {
	var out []int
	for i, n := range chips {
		if n <= free {
			out = append(out, i)
			free -= n
			continue
		}
		if len(out) == 0 {
			out = append(out, i)
		}
		break
	}
	return out
}

// ErrBadResult is wrapped by CheckResult's refusals (400: the lease stays).
var ErrBadResult = errors.New("invalid result")

// CheckResult decides whether a posted result may be recorded for job
// (leased under runtimeKey) at now, the server's time: a valid result
// (compat.Result.Validate: the vocabulary, every label and figure), the
// job's model, revision, target and runtime (whatever its status: an
// error's runtime too), a tested_at from the worker's clock within
// ClockWindow, and "flaky" only where there is a status to keep. It does
// not judge the lease (Complete does).
func CheckResult(job Job, runtimeKey string, req ResultRequest, now time.Time) error {
	res := req.Result
	bad := func(format string, a ...any) error {
		return fmt.Errorf("fleet: %w: %s", ErrBadResult, fmt.Sprintf(format, a...))
	}
	if req.ModelID != job.ModelID || compat.ValidateModelID(req.ModelID) != nil {
		return bad("names model %q, the lease is for %q", clip(req.ModelID), job.ModelID)
	}
	if err := res.Validate(); err != nil {
		return bad("%v", err)
	}
	from, to := ClockWindow(job, now)
	switch {
	case job.Target.Admits(res.Target) != nil:
		return bad("target %q, the job runs on %q", res.Target, job.Target)
	case res.Revision != job.Revision:
		return bad("revision %q, the job is %q", res.Revision, job.Revision)
	case res.Runtime.RetestKey() != runtimeKey:
		return bad("runtime %q, the job was planned for %q", res.Runtime.RetestKey(), runtimeKey)
	case res.TestedAt.Before(from) || res.TestedAt.After(to):
		return bad("tested_at %s is outside %s to %s by the server's clock (a worker's clock may be off by %v at most)",
			res.TestedAt.Format(time.RFC3339), from.Format(time.RFC3339), to.Format(time.RFC3339), MaxClockSkew)
	case req.Flaky && job.Previous == "":
		return bad("flaky, but the model has no status to keep (its first result)")
	case req.Flaky && req.Result.Status == job.Previous:
		return bad("flaky, but the status is unchanged")
	case res.Status.HeldAgainstModel() || res.Status == compat.StatusPass:
		// a verdict comes from a probe on the job's devices
		if max(res.DevicesUsed, 1) != job.Chips() || (res.Sharding != nil && !res.Sharding.Valid()) {
			return bad("%d devices (sharding %v), the job runs on %d", res.DevicesUsed, res.Sharding, job.Chips())
		}
	}
	if s := req.Serving; s != nil {
		switch err := s.Validate(); {
		case !job.Serve:
			return bad("a serving verdict, but the job asked for none")
		case err != nil:
			return bad("%v", err)
		case s.MeasuredAt.Before(from) || s.MeasuredAt.After(to):
			return bad("serving measured_at %s is outside %s to %s by the server's clock", s.MeasuredAt.Format(time.RFC3339),
				from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
	}
	return nil
}

// MaxClockSkew is how far a worker's clock may be ahead of or behind the
// server's. The server records when it received a result (tested_at) and
// keeps the worker's time beside it (worker_tested_at), so a worker's clock
// never orders results; a result whose worker's time is further off is
// refused.
const MaxClockSkew = 5 * time.Minute

// resultSlack is what a result may wait between its probe's end and its
// delivery (retries while the server restarts) beyond a lease's life.
const resultSlack = 30 * time.Minute

// untimedJob is the longest a probe of a job without a timeout may take.
const untimedJob = 24 * time.Hour

// ClockWindow is when, by the server's clock at now, a result of job may
// say it was tested (its probe's start): no later than MaxClockSkew ahead,
// no earlier than a probe and its confirming rerun (and the serving probe,
// when the job asks for it), each up to the job's timeout, plus
// MaxClockSkew and resultSlack, ago.
func ClockWindow(job Job, now time.Time) (from, to time.Time) {
	probe := time.Duration(job.TimeoutS * float64(time.Second))
	if probe <= 0 || probe > untimedJob {
		probe = untimedJob
	}
	runs := time.Duration(2)
	if job.Serve { // the serving probe after them, up to the same timeout
		runs = 3
	}
	return now.Add(-(runs*probe + MaxClockSkew + resultSlack)), now.Add(MaxClockSkew)
}

// clip keeps an error's quote of a worker's string short.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// ReleaseTimeout bounds the give-back of leases when a worker stops.
const ReleaseTimeout = 5 * time.Second

// ShutdownBudget is the longest a worker takes to stop after SIGTERM: its
// probes get probeGrace to finish, a probe still running is then stopped
// (SIGTERM, and SIGKILL of its process group after another probeGrace),
// and its lease is given back. A pod's terminationGracePeriodSeconds must
// exceed it.
func ShutdownBudget(probeGrace time.Duration) time.Duration {
	return 2*probeGrace + ReleaseTimeout
}

// Backoff is the wait before retry n (0-based) after a failed request to
// the server: 1s doubling to 30s. jitter in [0,1) spreads a fleet's
// retries over the upper half of the wait.
func Backoff(n int, jitter float64) time.Duration {
	d := 30 * time.Second
	if n < 5 {
		d = time.Second << n
	}
	return d/2 + time.Duration(float64(d/2)*min(max(jitter, 0), 1))
}

// DesiredWorkers is the scaling hint for an autoscaler: enough workers of
// devicesPerWorker devices to hold every open job of the queue (queued and
// leased) at once, capped at maxWorkers (0: no cap). It is exported as
// scanner_work_desired_workers.
func DesiredWorkers(open, devicesPerWorker, maxWorkers int) int {
	if open <= 0 {
		return 0
	}
	n := (open + max(devicesPerWorker, 1) - 1) / max(devicesPerWorker, 1)
	if maxWorkers > 0 {
		n = min(n, maxWorkers)
	}
	return n
}
