package fleet

import (
	"errors"
	"fmt"
	"time"
)

// State is where a job of the queue stands.
type State string

// Job states. Queued and Leased are open; Done and Failed are final.
const (
	Queued State = "queued" // waiting for a worker
	Leased State = "leased" // a worker holds it; LeaseID names the lease
	Done   State = "done"   // its result was accepted
	Failed State = "failed" // lost MaxLostLeases leases: recorded as error
	// Cancelled: its scan ended without it (the scan was stopped, or
	// replaced by a newer one); no result is recorded.
	Cancelled State = "cancelled"
)

// Final reports whether no transition leaves s.
func (s State) Final() bool { return s == Done || s == Failed || s == Cancelled }

// Valid reports whether s is a job state.
func (s State) Valid() bool {
	switch s {
	case Queued, Leased, Done, Failed, Cancelled:
		return true
	}
	return false
}

// Errors of the transitions. A work route maps ErrLeaseNotCurrent to 409.
var (
	// ErrLeaseNotCurrent: the lease named is not the one holding the job
	// now (it expired, was given back, the job was re-leased or is done).
	ErrLeaseNotCurrent = errors.New("lease is not current")
	// ErrNotQueued: only a queued job can be leased.
	ErrNotQueued = errors.New("job is not queued")
)

// JobState is the queue's bookkeeping of one job; the store keeps it, the
// functions below decide every change of it.
type JobState struct {
	State     State
	LeaseID   string    // the current lease; "" unless Leased
	WorkerID  string    // who holds it; "" unless Leased
	ExpiresAt time.Time // the current lease's expiry; zero unless Leased
	Attempts  int       // leases granted so far
	Lost      int       // leases that expired unrenewed
}

// Grant leases a queued job to workerID until now+ttl.
func Grant(js JobState, leaseID, workerID string, now time.Time, ttl time.Duration) (JobState, error) {
	if js.State != Queued {
		return js, fmt.Errorf("fleet: grant: %w (%s)", ErrNotQueued, js.State)
	}
	js.State, js.LeaseID, js.WorkerID = Leased, leaseID, workerID
	js.ExpiresAt = now.Add(ttl)
	js.Attempts++
	return js, nil
}

// Current reports whether leaseID holds the job at now: a lease is current
// from its grant until its expiry, unless the job was given back, finished,
// or its lease was taken from it.
func Current(js JobState, leaseID string, now time.Time) bool {
	return js.State == Leased && leaseID != "" && js.LeaseID == leaseID && now.Before(js.ExpiresAt)
}

// Renew extends a current lease to now+ttl (a heartbeat).
func Renew(js JobState, leaseID string, now time.Time, ttl time.Duration) (JobState, error) {
	if !Current(js, leaseID, now) {
		return js, fmt.Errorf("fleet: renew: %w", ErrLeaseNotCurrent)
	}
	js.ExpiresAt = now.Add(ttl)
	return js, nil
}

// Complete accepts the result of a current lease: the job is done. Any
// other lease's result is refused (409), so a job is recorded once.
func Complete(js JobState, leaseID string, now time.Time) (JobState, error) {
	if !Current(js, leaseID, now) {
		return js, fmt.Errorf("fleet: result: %w", ErrLeaseNotCurrent)
	}
	js.State, js.LeaseID, js.WorkerID, js.ExpiresAt = Done, "", "", time.Time{}
	return js, nil
}

// Release gives a current lease back: the job is queued again at once. A
// give-back (a worker stopping) is not a lost lease.
func Release(js JobState, leaseID string, now time.Time) (JobState, error) {
	if !Current(js, leaseID, now) {
		return js, fmt.Errorf("fleet: release: %w", ErrLeaseNotCurrent)
	}
	js.State, js.LeaseID, js.WorkerID, js.ExpiresAt = Queued, "", "", time.Time{}
	return js, nil
}

// Expire takes back a lease that was not renewed in time. It reports
// whether it did; the job goes back to the queue, or, at its
// MaxLostLeases-th lost lease, fails (the caller records an error result
// that says so, never held against the model).
func Expire(js JobState, now time.Time) (JobState, bool) {
	if js.State != Leased || now.Before(js.ExpiresAt) {
		return js, false
	}
	js.Lost++
	js.State, js.LeaseID, js.WorkerID, js.ExpiresAt = Queued, "", "", time.Time{}
	if js.Lost >= MaxLostLeases {
		js.State = Failed
	}
	return js, true
}

// Cancel ends an open job without a result (its scan ended without it).
func Cancel(js JobState) JobState {
	if js.State.Final() {
		return js
	}
	js.State, js.LeaseID, js.WorkerID, js.ExpiresAt = Cancelled, "", "", time.Time{}
	return js
}

// Settle is where a job that lost or gave back its lease goes: back to the
// queue (as Expire and Release left it) while its scan runs; once its scan
// has ended (a deadline or a stall withdrew what was queued), cancelled, so
// that it is never leased again. A failed job keeps its error, a leased one
// may still finish.
func Settle(js JobState, scanRunning bool) JobState {
	if js.State == Queued && !scanRunning {
		return Cancel(js)
	}
	return js
}

// Adopts reports whether a scan about to queue job (for runtime key) takes
// over old instead, a job of an ended scan still leased for runtime
// oldKey: the same probe (model, revision, target, mode, runtime), whose
// result then counts once, for the new scan.
func Adopts(old Job, oldKey string, job Job, key string) bool {
	return old.ModelID == job.ModelID && old.Revision == job.Revision && old.Target == job.Target &&
		old.Mode == job.Mode && oldKey == key
}

// LostMessage is the message of the error result recorded for a job that
// lost every lease it was given.
func LostMessage(lost int, lastWorker string) string {
	msg := fmt.Sprintf("scanner fleet: the probe's lease expired %d times (its workers died, were preempted or lost the server)", lost)
	if lastWorker != "" {
		msg += "; last held by worker " + lastWorker
	}
	return msg + "; not the model's failure"
}
