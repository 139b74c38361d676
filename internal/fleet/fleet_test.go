package fleet

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

var (
	rtA = compat.Runtime{Torch: "2.15.0", TorchTPU: "0.3.0", Transformers: "5.23.0", Harness: "h1", Device: "TPU v6e", DeviceCount: 8}
	rtB = compat.Runtime{Torch: "2.15.0", TorchTPU: "0.4.0", Transformers: "5.23.0", Harness: "h1", Device: "TPU v6e", DeviceCount: 8}
	rtC = compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "h1", Device: "cpu", DeviceCount: 1}
)

func seen(id string, target compat.Target, rt compat.Runtime, devices int, ago time.Duration) Seen {
	return Seen{Worker: Worker{ID: id, Host: id, Target: target, Runtime: rt, Devices: devices, MemoryBytes: 64 << 30}, LastSeen: t0.Add(-ago)}
}

func TestPlanGroupHostFigures(t *testing.T) {
	small := seen("s", "cpu", rtC, 2, 0)
	small.MemoryBytes = 16 << 30
	big := seen("b", "cpu", rtC, 4, 0)
	g, _, err := PlanGroup([]Seen{big, small}, "cpu", t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if g.MemoryBytes != 16<<30 || g.PerWorker != 4 || g.Devices != 6 {
		t.Errorf("group memory %d, per worker %d, devices %d; want the smallest host (16 GiB), 4, 6", g.MemoryBytes, g.PerWorker, g.Devices)
	}
	unknown := seen("u", "cpu", rtC, 1, 0)
	unknown.MemoryBytes = 0
	if g, _, _ := PlanGroup([]Seen{big, unknown}, "cpu", t0, time.Minute); g.MemoryBytes != 0 {
		t.Errorf("a worker that does not know its memory: group memory %d, want 0 (unknown)", g.MemoryBytes)
	}
}

func TestLive(t *testing.T) {
	for _, tc := range []struct {
		ago  time.Duration
		ttl  time.Duration
		live bool
	}{
		{0, 2 * time.Minute, true},
		{2 * time.Minute, 2 * time.Minute, true},
		{2*time.Minute + time.Second, 2 * time.Minute, false},
		// A short TTL still allows two long polls of silence.
		{59 * time.Second, 5 * time.Second, true},
		{61 * time.Second, 5 * time.Second, false},
	} {
		if got := Live(t0.Add(-tc.ago), t0, tc.ttl); got != tc.live {
			t.Errorf("Live(%v ago, ttl %v) = %v, want %v", tc.ago, tc.ttl, got, tc.live)
		}
	}
}

func TestPlanGroup(t *testing.T) {
	ttl := 2 * time.Minute
	for _, tc := range []struct {
		name        string
		fleet       []Seen
		target      compat.Target
		wantKey     string
		wantWorkers []string
		wantOthers  int
		err         error
	}{
		{"one group", []Seen{seen("a", "tpu", rtA, 8, 0), seen("b", "tpu", rtA, 8, time.Second)}, "tpu",
			rtA.RetestKey(), []string{"a", "b"}, 0, nil},
		{"most devices win", []Seen{seen("a", "tpu", rtA, 4, 0), seen("b", "tpu", rtB, 8, 0)}, "tpu",
			rtB.RetestKey(), []string{"b"}, 1, nil},
		{"devices summed over workers", []Seen{seen("a", "tpu", rtA, 4, 0), seen("c", "tpu", rtA, 4, 0), seen("b", "tpu", rtB, 6, 0)}, "tpu",
			rtA.RetestKey(), []string{"a", "c"}, 1, nil},
		{"tie goes to the newest", []Seen{seen("a", "tpu", rtA, 8, 10*time.Second), seen("b", "tpu", rtB, 8, time.Second)}, "tpu",
			rtB.RetestKey(), []string{"b"}, 1, nil},
		{"gone workers do not count", []Seen{seen("a", "tpu", rtA, 8, 0), seen("b", "tpu", rtB, 64, time.Hour)}, "tpu",
			rtA.RetestKey(), []string{"a"}, 0, nil},
		{"auto prefers tpu", []Seen{seen("c", "cpu", rtC, 16, 0), seen("a", "tpu", rtA, 1, 0)}, "auto",
			rtA.RetestKey(), []string{"a"}, 1, nil},
		{"auto falls back to cpu", []Seen{seen("c", "cpu", rtC, 1, 0)}, "auto",
			rtC.RetestKey(), []string{"c"}, 0, nil},
		{"explicit cpu ignores tpu", []Seen{seen("c", "cpu", rtC, 1, 0), seen("a", "tpu", rtA, 8, 0)}, "cpu",
			rtC.RetestKey(), []string{"c"}, 1, nil},
		{"no worker of the target", []Seen{seen("c", "cpu", rtC, 1, 0)}, "tpu", "", nil, 1, ErrNoWorkers},
		{"empty fleet", nil, "auto", "", nil, 0, ErrNoWorkers},
		{"auto is never a worker's target", []Seen{seen("x", "auto", rtC, 1, 0)}, "auto", "", nil, 0, ErrNoWorkers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, others, err := PlanGroup(tc.fleet, tc.target, t0, ttl)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if g.RuntimeKey != tc.wantKey || !slices.Equal(g.Workers, tc.wantWorkers) || len(others) != tc.wantOthers {
				t.Errorf("group %q %v, %d others; want %q %v, %d", g.RuntimeKey, g.Workers, len(others), tc.wantKey, tc.wantWorkers, tc.wantOthers)
			}
			if err == nil && g.Runtime.RetestKey() != g.RuntimeKey {
				t.Errorf("group runtime %q does not have the group's key %q", g.Runtime.RetestKey(), g.RuntimeKey)
			}
			for _, o := range others {
				if o.RuntimeKey == g.RuntimeKey && o.Target == g.Target {
					t.Errorf("the chosen group is among the others: %+v", o)
				}
			}
		})
	}
}

func TestMatches(t *testing.T) {
	w := Worker{Target: "tpu", Runtime: rtA}
	for _, tc := range []struct {
		target compat.Target
		key    string
		want   bool
	}{
		{"tpu", rtA.RetestKey(), true},
		{"tpu", rtB.RetestKey(), false},
		{"cpu", rtA.RetestKey(), false},
		{"tpu", "", false},
	} {
		if got := Matches(tc.target, tc.key, w); got != tc.want {
			t.Errorf("Matches(%s, %q) = %v, want %v", tc.target, tc.key, got, tc.want)
		}
	}
}

func TestCanTake(t *testing.T) {
	w := Worker{Target: "tpu", Runtime: rtA, Devices: 4}
	for _, tc := range []struct {
		key  QueueKey
		free int
		want bool
	}{
		{QueueKey{"tpu", rtA.RetestKey(), 1}, 1, true},
		{QueueKey{"tpu", rtA.RetestKey(), 1}, 4, true},
		{QueueKey{"tpu", rtA.RetestKey(), 1}, 0, false}, // no room
		{QueueKey{"tpu", rtB.RetestKey(), 1}, 4, false}, // another runtime
		{QueueKey{"cpu", rtA.RetestKey(), 1}, 4, false}, // another target
		{QueueKey{"tpu", rtA.RetestKey(), 4}, 1, true},  // it waits on w for the rest of its devices (Pick)
		{QueueKey{"tpu", rtA.RetestKey(), 8}, 4, false}, // more devices than w has
		{QueueKey{"tpu", rtA.RetestKey(), 0}, 1, true},  // 0 reads as one device
	} {
		if got := CanTake(tc.key, w, tc.free); got != tc.want {
			t.Errorf("CanTake(%v, free %d) = %v, want %v", tc.key, tc.free, got, tc.want)
		}
	}
}

func TestCheckResult(t *testing.T) {
	job := Job{ModelID: "org/m", Revision: "abc", Target: "tpu", Mode: "full", Previous: compat.StatusPass, TimeoutS: 1200}
	first := job
	first.Previous = ""
	good := func() ResultRequest {
		return ResultRequest{LeaseID: "L", ModelID: "org/m", Result: compat.Result{
			Target: "tpu", Status: "pass", Stage: compat.Ptr(compat.StageGenerate), Mode: compat.Ptr(compat.ModeFull),
			Revision: "abc", TestedAt: t0, Runtime: rtA,
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(*ResultRequest)
		bad    string // "" = accepted
	}{
		{"valid", func(*ResultRequest) {}, ""},
		{"scanner error on the job's runtime", func(r *ResultRequest) {
			r.Result.Status, r.Result.FailureClass = compat.StatusError, compat.Ptr(compat.ClassDeviceUnavail)
		}, ""},
		// An error's runtime is checked as any result's (it would else
		// become a public runtime).
		{"scanner error without runtime", func(r *ResultRequest) {
			r.Result.Status, r.Result.Runtime = compat.StatusError, compat.Runtime{}
		}, "runtime"},
		{"scanner error on another runtime", func(r *ResultRequest) {
			r.Result.Status, r.Result.Runtime = compat.StatusError, compat.Runtime{Torch: "99.0.0", Device: "cpu"}
		}, "runtime"},
		{"flaky change", func(r *ResultRequest) { r.Result.Status, r.Flaky = compat.StatusFail, true }, ""},
		{"another model", func(r *ResultRequest) { r.ModelID = "org/other" }, "names model"},
		{"no model", func(r *ResultRequest) { r.ModelID = "" }, "names model"},
		{"unknown status", func(r *ResultRequest) { r.Result.Status = "great" }, "status"},
		{"untested", func(r *ResultRequest) { r.Result.Status = compat.StatusUntested }, "status"},
		{"cpu run for a tpu job", func(r *ResultRequest) { r.Result.Target = compat.TargetCPU }, "target"},
		{"other revision", func(r *ResultRequest) { r.Result.Revision = "def" }, "revision"},
		{"no tested_at", func(r *ResultRequest) { r.Result.TestedAt = time.Time{} }, "tested_at"},
		{"unknown stage", func(r *ResultRequest) { r.Result.Stage = compat.Ptr(compat.Stage("warmup")) }, "stage"},
		{"unknown class", func(r *ResultRequest) { r.Result.FailureClass = compat.Ptr(compat.FailureClass("bad")) }, "failure_class"},
		{"unknown reason", func(r *ResultRequest) { r.Result.Reason = compat.Ptr(compat.Reason("bored")) }, "reason"},
		{"auto mode", func(r *ResultRequest) { r.Result.Mode = compat.Ptr(compat.ModeAuto) }, "mode"},
		// compat.Result.Validate's rules the runner held alone before.
		{"skip without a reason", func(r *ResultRequest) { r.Result.Status, r.Result.Stage = compat.StatusSkipped, nil }, "skipped without a reason"},
		{"unknown stage in stages", func(r *ResultRequest) { r.Result.Stages = []compat.StageRun{{Stage: "warmup"}} }, "stages"},
		{"other runtime", func(r *ResultRequest) { r.Result.Runtime = rtB }, "runtime"},
		{"flaky without a change", func(r *ResultRequest) { r.Flaky = true }, "flaky"},
		{"one device said", func(r *ResultRequest) { r.Result.DevicesUsed = 1 }, ""},
		{"a verdict on more devices than the job's", func(r *ResultRequest) {
			r.Result.DevicesUsed, r.Result.Sharding = 2, compat.Ptr(compat.ShardingTP)
		}, "devices"},
		{"a skip of a job says one device", func(r *ResultRequest) {
			r.Result.Status, r.Result.Reason, r.Result.DevicesUsed = compat.StatusSkipped, compat.Ptr(compat.ReasonGated), 1
		}, ""},
		// Figures and strings by the one rule, compat.Result.Validate.
		{"mfu 1e300", func(r *ResultRequest) { r.Result.Metrics.MFU = compat.Ptr(1e300) }, "metrics.mfu"},
		{"negative duration", func(r *ResultRequest) { r.Result.DurationS = -1 }, "duration_s"},
		{"a 1 MB device", func(r *ResultRequest) { r.Result.Runtime.Device = strings.Repeat("d", 1<<20) }, "runtime.device"},
		// The worker's clock: within MaxClockSkew ahead of the server's,
		// and no older than the job could take.
		{"an hour ahead", func(r *ResultRequest) { r.Result.TestedAt = t0.Add(time.Hour) }, "tested_at"},
		{"a minute ahead", func(r *ResultRequest) { r.Result.TestedAt = t0.Add(time.Minute) }, ""},
		{"a probe and its rerun ago", func(r *ResultRequest) { r.Result.TestedAt = t0.Add(-40 * time.Minute) }, ""},
		{"a day ago", func(r *ResultRequest) { r.Result.TestedAt = t0.Add(-24 * time.Hour) }, "tested_at"},
		{"in 2300", func(r *ResultRequest) { r.Result.TestedAt = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }, "tested_at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := good()
			tc.change(&req)
			err := CheckResult(job, rtA.RetestKey(), req, t0)
			sharded := job
			sharded.Devices = 2
			if tc.name == "one device said" {
				// the same result for a job sharded over two: not its probe
				if e := CheckResult(sharded, rtA.RetestKey(), req, t0); !errors.Is(e, ErrBadResult) {
					t.Errorf("a one-device verdict for a two-device job: %v", e)
				}
			}
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadResult) || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("err = %v, want ErrBadResult about %q", err, tc.bad)
			}
		})
	}
}

// TestAFlakyFirstResultIsRefused: a model without a status has nothing a
// rerun could keep, so "flaky" on its first result is refused (400, the
// lease stays) and the real result that follows is taken.
func TestAFlakyFirstResultIsRefused(t *testing.T) {
	job := Job{ModelID: "org/m", Revision: "abc", Target: "tpu", Mode: "full", TimeoutS: 60}
	req := ResultRequest{LeaseID: "L", ModelID: "org/m", Flaky: true, Result: compat.Result{
		Target: "tpu", Status: "fail", Mode: compat.Ptr(compat.ModeFull), Revision: "abc", TestedAt: t0, Runtime: rtA,
	}}
	if err := CheckResult(job, rtA.RetestKey(), req, t0); !errors.Is(err, ErrBadResult) || !strings.Contains(err.Error(), "flaky") {
		t.Errorf("flaky first result: %v, want ErrBadResult about flaky", err)
	}
	req.Flaky = false
	if err := CheckResult(job, rtA.RetestKey(), req, t0); err != nil {
		t.Errorf("the real first result: %v", err)
	}
}

func TestClockWindow(t *testing.T) {
	for _, tc := range []struct {
		timeoutS      float64
		before, after time.Duration
	}{
		{1200, 2*20*time.Minute + MaxClockSkew + resultSlack, MaxClockSkew},
		{60, 2*time.Minute + MaxClockSkew + resultSlack, MaxClockSkew},
		{0, 2*untimedJob + MaxClockSkew + resultSlack, MaxClockSkew}, // a job without its own timeout
	} {
		from, to := ClockWindow(Job{TimeoutS: tc.timeoutS}, t0)
		if !from.Equal(t0.Add(-tc.before)) || !to.Equal(t0.Add(tc.after)) {
			t.Errorf("timeout %vs: window %v to %v, want %v to %v", tc.timeoutS, from, to, t0.Add(-tc.before), t0.Add(tc.after))
		}
	}
}

func TestShutdownBudget(t *testing.T) {
	if got, want := ShutdownBudget(10*time.Second), 25*time.Second; got != want {
		t.Errorf("ShutdownBudget(10s) = %v, want %v", got, want)
	}
	if got := ShutdownBudget(0); got != ReleaseTimeout {
		t.Errorf("ShutdownBudget(0) = %v", got)
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n        int
		jitter   float64
		min, max time.Duration
	}{
		{0, 0, 500 * time.Millisecond, 500 * time.Millisecond},
		{0, 0.999, 999 * time.Millisecond, time.Second},
		{1, 0.5, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{4, 0, 8 * time.Second, 8 * time.Second},
		{5, 0, 15 * time.Second, 15 * time.Second},
		{50, 1, 30 * time.Second, 30 * time.Second},
		{50, 7, 30 * time.Second, 30 * time.Second}, // out-of-range jitter clamped
		{3, -1, 4 * time.Second, 4 * time.Second},
	} {
		if got := Backoff(tc.n, tc.jitter); got < tc.min || got > tc.max {
			t.Errorf("Backoff(%d, %v) = %v, want in [%v, %v]", tc.n, tc.jitter, got, tc.min, tc.max)
		}
	}
}

func TestDesiredWorkers(t *testing.T) {
	for _, tc := range []struct{ open, per, max, want int }{
		{0, 8, 0, 0},
		{1, 8, 0, 1},
		{8, 8, 0, 1},
		{9, 8, 0, 2},
		{100, 8, 4, 4},
		{3, 0, 0, 3}, // a worker has at least one device
	} {
		if got := DesiredWorkers(tc.open, tc.per, tc.max); got != tc.want {
			t.Errorf("DesiredWorkers(%d, %d, %d) = %d, want %d", tc.open, tc.per, tc.max, got, tc.want)
		}
	}
}

func TestHeartbeatInterval(t *testing.T) {
	if got := HeartbeatInterval(2 * time.Minute); got != 30*time.Second {
		t.Errorf("HeartbeatInterval(2m) = %v", got)
	}
}

// The wire format, written out by hand: a change to a JSON name breaks
// every deployed worker, so it must break this test first.
func TestWireFormat(t *testing.T) {
	const lease = `{"leases":[{"lease_id":"9f2c","job_id":42,"attempt":2,"expires_at":"2026-11-30T12:02:00Z",
	  "job":{"model_id":"Qwen/Qwen3-0.6B","revision":"abc","task":"text-generation","target":"tpu","mode":"full",
	         "files":["config.json","model.safetensors"],"memory_budget_bytes":1024,"timeout_s":1200,"previous_status":"pass"}}]}`
	var lr LeaseResponse
	dec := json.NewDecoder(strings.NewReader(lease))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lr); err != nil {
		t.Fatal(err)
	}
	want := LeaseResponse{Leases: []Lease{{ID: "9f2c", JobID: 42, Attempt: 2, ExpiresAt: t0.Add(2 * time.Minute), Job: Job{
		ModelID: "Qwen/Qwen3-0.6B", Revision: "abc", Task: "text-generation", Target: "tpu", Mode: "full",
		Files: []string{"config.json", "model.safetensors"}, MemoryBudgetBytes: 1024, TimeoutS: 1200, Previous: "pass",
	}}}}
	if !reflect.DeepEqual(lr, want) {
		t.Errorf("decoded %+v\nwant %+v", lr, want)
	}
	for _, tc := range []struct {
		v    any
		keys []string
	}{
		{LeaseRequest{}, []string{"worker", "max", "wait_s"}},
		{Worker{}, []string{"id", "host", "version", "target", "runtime", "devices", "memory_bytes"}},
		{HeartbeatRequest{}, []string{"worker_id", "leases"}},
		{HeartbeatResponse{}, []string{"renewed", "lost", "expires_at"}},
		{ResultRequest{}, []string{"lease_id", "worker_id", "model_id", "result"}},
		{ReleaseRequest{}, []string{"worker_id", "lease_id"}},
		{RegisterResponse{}, []string{"lease_ttl_s", "heartbeat_s", "max_wait_s"}},
		{WorkerView{}, []string{"id", "host", "target", "device", "devices", "runtime", "last_seen", "live", "busy", "jobs_done", "planned", "serving"}},
		{Worker{Serving: &WorkerServing{}}, []string{"id", "host", "version", "target", "runtime", "devices", "memory_bytes", "serving"}},
		{WorkerServing{}, []string{"vllm_torchtpu"}},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got := make([]string, 0, len(m))
		for k := range m {
			got = append(got, k)
		}
		slices.Sort(got)
		want := slices.Clone(tc.keys)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%T keys = %v, want %v", tc.v, got, want)
		}
	}
}

// The public listing must never carry what could reach a worker: no
// address, no token.
func TestWorkerViewHasNoSecrets(t *testing.T) {
	typ := reflect.TypeOf(WorkerView{})
	for i := range typ.NumField() {
		name := strings.ToLower(typ.Field(i).Name + " " + typ.Field(i).Tag.Get("json"))
		for _, bad := range []string{"token", "addr", "ip", "secret", "url"} {
			if strings.Contains(name, bad) {
				t.Errorf("WorkerView field %q looks like %s", typ.Field(i).Name, bad)
			}
		}
	}
}

// TestHolds: a worker holds a job of its target and runtime that needs no
// more devices than it has.
func TestHolds(t *testing.T) {
	w := Worker{Target: "tpu", Runtime: rtA, Devices: 4}
	for _, tc := range []struct {
		job  Job
		key  string
		want bool
	}{
		{Job{Target: "tpu"}, rtA.RetestKey(), true},
		{Job{Target: "tpu", Devices: 4}, rtA.RetestKey(), true},
		{Job{Target: "tpu", Devices: 8}, rtA.RetestKey(), false},
		{Job{Target: "tpu", Devices: 2}, rtB.RetestKey(), false},
		{Job{Target: "cpu", Devices: 2}, rtA.RetestKey(), false},
	} {
		if got := Holds(tc.job.Key(tc.key), w); got != tc.want {
			t.Errorf("Holds(%s on %d devices, %q) on 4 devices = %v, want %v", tc.job.Target, tc.job.Devices, tc.key, got, tc.want)
		}
	}
	if one := (Worker{Target: "tpu", Runtime: rtA, Devices: 1}); Holds(Job{Target: "tpu", Devices: 2}.Key(rtA.RetestKey()), one) {
		t.Error("a worker of one device holds a job of two")
	}
}

// TestPick: jobs in queue order while they fit the free devices; the first
// that does not fit ends the picking, and is picked when it comes first.
func TestPick(t *testing.T) {
	for _, tc := range []struct {
		chips []int
		free  int
		want  []int
	}{
		{[]int{1, 1, 1}, 2, []int{0, 1}},
		{[]int{2, 1, 1}, 2, []int{0}},
		{[]int{1, 2, 1}, 2, []int{0}}, // the 2-device job is not passed over for the one behind it
		{[]int{2, 1}, 1, []int{0}},    // it comes first: leased, the worker waits for its devices
		{[]int{1, 1, 2, 1}, 4, []int{0, 1, 2}},
		{nil, 2, nil},
	} {
		if got := Pick(tc.chips, tc.free); !slices.Equal(got, tc.want) {
			t.Errorf("Pick(%v, %d) = %v, want %v", tc.chips, tc.free, got, tc.want)
		}
	}
}

// TestAWrongModelIsQuotedShort: a result naming another model is refused
// quoting at most 200 bytes of the name it gave, with "…" only where the
// name was cut.
func TestAWrongModelIsQuotedShort(t *testing.T) {
	job := Job{ModelID: "org/m", Revision: "abc", Target: "tpu", Mode: "full", TimeoutS: 60}
	for n, want := range map[int]string{
		200: `"` + strings.Repeat("a", 200) + `"`,
		201: `"` + strings.Repeat("a", 200) + `…"`,
		5:   `"aaaaa"`,
	} {
		err := CheckResult(job, rtA.RetestKey(), ResultRequest{ModelID: strings.Repeat("a", n)}, t0)
		if !errors.Is(err, ErrBadResult) || !strings.Contains(err.Error(), "names model "+want+",") {
			t.Errorf("a model id of %d bytes: %v; want it quoted as %s", n, err, want)
		}
	}
}

// TestCheckResultServing: a serving verdict rides with a result only when
// the job asked for one (Job.Serve), is a serving probe's
// (compat.ServingMeasured.Validate) and was measured within the job's
// window, which a serving probe lengthens by one probe's timeout.
func TestCheckResultServing(t *testing.T) {
	job := Job{ModelID: "org/m", Revision: "abc", Target: "tpu", Mode: "full", TimeoutS: 1200, Serve: true}
	req := func(m compat.ServingMeasured) ResultRequest {
		return ResultRequest{LeaseID: "L", ModelID: "org/m", Result: compat.Result{
			Target: "tpu", Status: "pass", Stage: compat.Ptr(compat.StageGenerate), Mode: compat.Ptr(compat.ModeFull),
			Revision: "abc", TestedAt: t0.Add(-80 * time.Minute), Runtime: rtA,
		}, Serving: &m}
	}
	pass := compat.ServingMeasured{Evidence: "measured", Status: "pass", TensorParallelSize: 1, MaxModelLen: 256, MeasuredAt: t0}
	if err := CheckResult(job, rtA.RetestKey(), req(pass), t0); err != nil {
		t.Fatalf("a serving pass after a probe, its rerun and the serving probe: %v", err)
	}
	noServe := job
	noServe.Serve = false
	recent := req(pass)
	recent.Result.TestedAt = t0.Add(-time.Minute)
	if err := CheckResult(noServe, rtA.RetestKey(), recent, t0); !errors.Is(err, ErrBadResult) || !strings.Contains(err.Error(), "asked for none") {
		t.Errorf("a serving verdict the job did not ask for: %v", err)
	}
	if from, _ := ClockWindow(noServe, t0); !t0.Add(-80 * time.Minute).Before(from) {
		t.Errorf("without a serving probe the window reaches back to %s: a probe, its rerun and slack only", from)
	}
	bad := pass
	bad.Status = "served"
	if err := CheckResult(job, rtA.RetestKey(), req(bad), t0); !errors.Is(err, ErrBadResult) || !strings.Contains(err.Error(), "serving.status") {
		t.Errorf("an unknown serving status: %v", err)
	}
	late := pass
	late.MeasuredAt = t0.Add(time.Hour)
	if err := CheckResult(job, rtA.RetestKey(), req(late), t0); !errors.Is(err, ErrBadResult) || !strings.Contains(err.Error(), "serving measured_at") {
		t.Errorf("a serving verdict from the worker's future: %v", err)
	}
}
