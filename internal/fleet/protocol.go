// Package fleet is the protocol between a scanner server that dispatches
// probes (`scanner serve --dispatch workers`) and the `scanner worker`s that
// lease them: the JSON messages of the /api/v1/work/… routes, and the pure
// decisions both sides share (the lease state machine, which workers a scan
// plans for, which results are acceptable, how long a worker needs to stop).
//
// The protocol in one paragraph: a worker registers (its id, host, target,
// runtime and device count) and long-polls for leases, asking for at most as
// many jobs as it has free devices. A lease names one job (a model at a
// revision, the mode and files to fetch) and expires LeaseTTL after it was
// granted unless a heartbeat renews it. The worker downloads the files from
// the Hub itself, runs the harness, and posts the Result with the lease id;
// the server accepts a result once, for the lease that currently holds the
// job, and refuses any other with 409. A lease that expires goes back to the
// queue; a job that lost MaxLostLeases leases is recorded as an `error`
// (the fleet's fault, never the model's). On SIGTERM a worker takes no new
// lease, lets its probes finish within its grace, gives back the leases of
// those that did not, says it is leaving, and exits.
package fleet

import (
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// The worker routes, all POST with a JSON body and
// `Authorization: Bearer $SCANNER_WORKER_TOKEN`.
const (
	PathRegister  = "/api/v1/work/register"
	PathLease     = "/api/v1/work/lease"
	PathHeartbeat = "/api/v1/work/heartbeat"
	PathResult    = "/api/v1/work/result"
	PathRelease   = "/api/v1/work/release"
	PathLeave     = "/api/v1/work/leave"
)

// PathWorkers is the public fleet listing (GET, no token, no addresses).
const PathWorkers = "/api/v1/workers"

// Limits of the protocol.
const (
	// MaxBodyBytes is the largest request body a work route reads; a
	// larger Result is refused with 400 and its lease stays until it
	// expires.
	MaxBodyBytes = 1 << 20
	// MaxLostLeases is how many of a job's leases may expire before the
	// job is recorded as an error instead of being queued again.
	MaxLostLeases = 3
	// MaxWait is the longest a lease request is held open when there is no
	// work (the long poll); a request asking for more is refused (400).
	MaxWait = 30 * time.Second
	// DefaultLeaseTTL is --lease-ttl's default.
	DefaultLeaseTTL = 2 * time.Minute
	// MinLeaseTTL is the shortest --lease-ttl accepted: heartbeats go out
	// every quarter of it, and a probe's bookkeeping needs a few seconds.
	MinLeaseTTL = 2 * time.Second
)

// Worker is what a worker says about itself: on register, and with every
// lease request (so that a server restarted with an empty memory learns
// its fleet again from the next poll).
type Worker struct {
	// ID names this worker process: its host and a random suffix, fresh
	// at every start, so that a restarted worker never inherits the
	// leases of the process it replaced.
	ID string `json:"id"`
	// Host is the machine (on Kubernetes the pod name): recorded with
	// every result it produces and shown on the model page.
	Host    string `json:"host"`
	Version string `json:"version"` // the scanner build
	// Target is the concrete target its probes run on (never auto), and
	// Runtime what its harness reported for it: a job is leased only to a
	// worker whose target and Runtime.RetestKey() are the job's.
	Target  compat.Target  `json:"target"`
	Runtime compat.Runtime `json:"runtime"`
	Devices int            `json:"devices"` // probes it runs at once
	// MemoryBytes is the host's physical memory (0 when unknown): on cpu
	// a probe's memory budget is planned from it.
	MemoryBytes uint64 `json:"memory_bytes"`
	// Serving says the worker runs measured serving probes (it was
	// started with --vllm-python) and with which vLLM-TorchTPU; nil: it
	// runs none (a job's Serve is ignored there).
	Serving *WorkerServing `json:"serving,omitempty"`
}

// WorkerServing is a worker's serving probe: the vllm-torchtpu version its
// --vllm-python interpreter reports ("" when it did not say).
type WorkerServing struct {
	VLLMTorchTPU string `json:"vllm_torchtpu"`
}

// RegisterResponse tells a worker the server's timing.
type RegisterResponse struct {
	LeaseTTLS  float64 `json:"lease_ttl_s"`
	HeartbeatS float64 `json:"heartbeat_s"` // how often to renew held leases
	MaxWaitS   float64 `json:"max_wait_s"`  // the longest long poll
}

// LeaseRequest asks for jobs for Max free devices (jobs that need more than
// one take several; Pick), waiting up to WaitS seconds for one.
type LeaseRequest struct {
	Worker Worker  `json:"worker"`
	Max    int     `json:"max"`
	WaitS  float64 `json:"wait_s"`
}

// Job is one probe to run: everything a worker needs besides the Hub.
type Job struct {
	ModelID  string        `json:"model_id"`
	Revision string        `json:"revision"` // commit sha the files are pinned to
	Task     string        `json:"task"`     // Hub pipeline tag; "" lets the harness decide
	Target   compat.Target `json:"target"`
	Mode     compat.Mode   `json:"mode"` // full or arch: planned by the server
	// Files are the repository files to download at Revision (config.json,
	// and in full mode the safetensors weights): the server never relays
	// them.
	Files []string `json:"files"`
	// InputFiles are the tokenizer and processor files (full mode), each
	// fetched on its own: one that does not come is noted, never fatal.
	InputFiles []string `json:"input_files,omitempty"`
	// PlanNote says why the model is retested and in this mode, for the
	// probe's note (scan.planNote).
	PlanNote          string `json:"plan_note,omitempty"`
	MemoryBudgetBytes int64  `json:"memory_budget_bytes,omitempty"`
	// NoTrain, when set, is the plan's reason to skip the train step.
	NoTrain  string  `json:"no_train,omitempty"`
	TimeoutS float64 `json:"timeout_s"`
	// Previous is the model's current status on Target ("" for none): a
	// result that would change it is confirmed by a rerun on the worker.
	Previous compat.Status `json:"previous_status,omitempty"`
	// Devices is how many of a worker's devices the probe is sharded over
	// (the plan's); 0 or 1 is one. Only a worker that has as many is
	// leased the job (Holds).
	Devices int `json:"devices,omitempty"`
	// Serve asks for the measured serving probe after the probe (issue
	// 40): the job is in full mode and the pinned vLLM-TorchTPU declares
	// the model served. A worker with --vllm-python runs it on the devices
	// it still holds, as a local scan does, and posts its verdict with the
	// result (ResultRequest.Serving); one without runs none.
	Serve bool `json:"serve,omitempty"`
}

// Chips is how many devices the job holds: at least 1.
func (j Job) Chips() int { return max(j.Devices, 1) }

// Lease is one grant of one job to one worker.
type Lease struct {
	// ID is an unguessable token: whoever holds it may renew the lease
	// and post the job's result, nobody else.
	ID        string    `json:"lease_id"`
	JobID     int64     `json:"job_id"`
	Attempt   int       `json:"attempt"` // 1 for the first lease of the job
	ExpiresAt time.Time `json:"expires_at"`
	Job       Job       `json:"job"`
}

// LeaseResponse carries the granted leases; none when the wait ran out.
type LeaseResponse struct {
	Leases []Lease `json:"leases"`
}

// HeartbeatRequest renews the leases a worker holds.
type HeartbeatRequest struct {
	WorkerID string   `json:"worker_id"`
	Leases   []string `json:"leases"`
}

// HeartbeatResponse says which leases were renewed (until ExpiresAt) and
// which are lost: a lost lease's probe should be stopped, since its result
// would be refused.
type HeartbeatResponse struct {
	Renewed   []string  `json:"renewed"`
	Lost      []string  `json:"lost"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ResultRequest posts the outcome of a lease's job.
type ResultRequest struct {
	LeaseID  string        `json:"lease_id"`
	WorkerID string        `json:"worker_id"`
	ModelID  string        `json:"model_id"`
	Result   compat.Result `json:"result"`
	// Flaky says Result changed the model's status but a rerun did not
	// confirm it: the server records a flaky event and the old status
	// stays, as a local scan does.
	Flaky bool `json:"flaky,omitempty"`
	// Serving is the serving probe's verdict when the job asked for one
	// (Job.Serve) and the worker ran it; the server stores it beside the
	// result, as a local scan does (store.PutServingResult). Nil: none.
	Serving *compat.ServingMeasured `json:"serving,omitempty"`
}

// ReleaseRequest gives a lease back unfinished (the worker is stopping):
// the job is queued again at once, and the give-back is not a lost lease.
type ReleaseRequest struct {
	WorkerID string `json:"worker_id"`
	LeaseID  string `json:"lease_id"`
	Reason   string `json:"reason,omitempty"`
}

// LeaveRequest says a worker is leaving (SIGTERM: a rollout, a
// preemption), after its probes ended and its leases were given back: it
// is no longer live, so that a scan waiting for workers, or one whose jobs
// need another runtime, learns at once rather than after the worker's
// silence.
type LeaveRequest struct {
	WorkerID string `json:"worker_id"`
}

// WorkerView is one worker as GET /api/v1/workers shows it: no tokens, no
// addresses.
type WorkerView struct {
	ID       string         `json:"id"`
	Host     string         `json:"host"`
	Target   compat.Target  `json:"target"`
	Device   string         `json:"device"`
	Devices  int            `json:"devices"`
	Runtime  compat.Runtime `json:"runtime"`
	LastSeen time.Time      `json:"last_seen"`
	Live     bool           `json:"live"`
	Busy     int            `json:"busy"` // leases held now
	JobsDone int            `json:"jobs_done"`
	// Planned says whether the scan in progress plans for this worker's
	// runtime; a worker of another runtime waits, shown, never merged.
	Planned bool `json:"planned"`
	// Serving is whether it runs serving probes (Worker.Serving); null
	// when it runs none.
	Serving *WorkerServing `json:"serving"`
}
