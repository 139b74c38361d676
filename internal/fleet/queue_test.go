package fleet

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func leased(id string, expires time.Time, attempts, lost int) JobState {
	return JobState{State: Leased, LeaseID: id, WorkerID: "w1", ExpiresAt: expires, Attempts: attempts, Lost: lost}
}

func TestGrant(t *testing.T) {
	ttl := 2 * time.Minute
	for _, tc := range []struct {
		name string
		in   JobState
		want JobState
		err  error
	}{
		{"queued job", JobState{State: Queued},
			JobState{State: Leased, LeaseID: "L", WorkerID: "w9", ExpiresAt: t0.Add(ttl), Attempts: 1}, nil},
		{"re-lease keeps the count", JobState{State: Queued, Attempts: 2, Lost: 2},
			JobState{State: Leased, LeaseID: "L", WorkerID: "w9", ExpiresAt: t0.Add(ttl), Attempts: 3, Lost: 2}, nil},
		{"leased job", leased("A", t0.Add(time.Minute), 1, 0), leased("A", t0.Add(time.Minute), 1, 0), ErrNotQueued},
		{"done job", JobState{State: Done, Attempts: 1}, JobState{State: Done, Attempts: 1}, ErrNotQueued},
		{"failed job", JobState{State: Failed, Lost: 3}, JobState{State: Failed, Lost: 3}, ErrNotQueued},
		{"cancelled job", JobState{State: Cancelled}, JobState{State: Cancelled}, ErrNotQueued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Grant(tc.in, "L", "w9", t0, ttl)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestLeaseTransitionsNeedTheCurrentLease(t *testing.T) {
	ttl := time.Minute
	exp := t0.Add(30 * time.Second)
	cur := leased("A", exp, 1, 0)
	for _, tc := range []struct {
		name    string
		js      JobState
		lease   string
		now     time.Time
		current bool
	}{
		{"holder before expiry", cur, "A", t0, true},
		{"holder a moment before expiry", cur, "A", exp.Add(-time.Nanosecond), true},
		{"holder at expiry", cur, "A", exp, false},
		{"holder after expiry", cur, "A", exp.Add(time.Second), false},
		{"another lease", cur, "B", t0, false},
		{"empty lease id", JobState{State: Leased, ExpiresAt: exp}, "", t0, false},
		{"job queued again", JobState{State: Queued, Attempts: 1, Lost: 1}, "A", t0, false},
		{"job done", JobState{State: Done, Attempts: 1}, "A", t0, false},
		{"job failed", JobState{State: Failed, Lost: 3}, "A", t0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Current(tc.js, tc.lease, tc.now); got != tc.current {
				t.Fatalf("Current = %v, want %v", got, tc.current)
			}
			renewed, err := Renew(tc.js, tc.lease, tc.now, ttl)
			done, errC := Complete(tc.js, tc.lease, tc.now)
			back, errR := Release(tc.js, tc.lease, tc.now)
			if !tc.current {
				for _, e := range []error{err, errC, errR} {
					if !errors.Is(e, ErrLeaseNotCurrent) {
						t.Errorf("err = %v, want ErrLeaseNotCurrent", e)
					}
				}
				if renewed != tc.js || done != tc.js || back != tc.js {
					t.Errorf("a refused transition changed the job: %+v %+v %+v", renewed, done, back)
				}
				return
			}
			if err != nil || errC != nil || errR != nil {
				t.Fatalf("errors: %v %v %v", err, errC, errR)
			}
			if want := leased("A", tc.now.Add(ttl), 1, 0); renewed != want {
				t.Errorf("renewed = %+v, want %+v", renewed, want)
			}
			if want := (JobState{State: Done, Attempts: 1}); done != want {
				t.Errorf("completed = %+v, want %+v", done, want)
			}
			if want := (JobState{State: Queued, Attempts: 1}); back != want {
				t.Errorf("released = %+v, want %+v (a give-back is not a lost lease)", back, want)
			}
		})
	}
}

func TestExpire(t *testing.T) {
	exp := t0.Add(time.Minute)
	for _, tc := range []struct {
		name    string
		in      JobState
		now     time.Time
		want    JobState
		expired bool
	}{
		{"not yet", leased("A", exp, 1, 0), exp.Add(-time.Second), leased("A", exp, 1, 0), false},
		{"first loss requeues", leased("A", exp, 1, 0), exp, JobState{State: Queued, Attempts: 1, Lost: 1}, true},
		{"second loss requeues", leased("B", exp, 2, 1), exp.Add(time.Hour), JobState{State: Queued, Attempts: 2, Lost: 2}, true},
		{"third loss fails", leased("C", exp, 3, 2), exp, JobState{State: Failed, Attempts: 3, Lost: 3}, true},
		{"give-backs do not count", leased("D", exp, 5, 0), exp, JobState{State: Queued, Attempts: 5, Lost: 1}, true},
		{"queued job", JobState{State: Queued, Lost: 1}, exp, JobState{State: Queued, Lost: 1}, false},
		{"done job", JobState{State: Done, Attempts: 1}, exp.Add(time.Hour), JobState{State: Done, Attempts: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, expired := Expire(tc.in, tc.now)
			if got != tc.want || expired != tc.expired {
				t.Errorf("got %+v %v\nwant %+v %v", got, expired, tc.want, tc.expired)
			}
		})
	}
}

// A whole life: three workers die in turn; the job fails, and a late
// result from the first is refused.
func TestLostLeasesEndInFailure(t *testing.T) {
	ttl := time.Minute
	js := JobState{State: Queued}
	now := t0
	for i, lease := range []string{"A", "B", "C"} {
		var err error
		if js, err = Grant(js, lease, "w", now, ttl); err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		now = now.Add(ttl)
		var expired bool
		if js, expired = Expire(js, now); !expired {
			t.Fatalf("lease %d did not expire", i)
		}
	}
	if js.State != Failed || js.Lost != MaxLostLeases || js.Attempts != 3 {
		t.Fatalf("after three lost leases: %+v", js)
	}
	if _, err := Complete(js, "A", now); !errors.Is(err, ErrLeaseNotCurrent) {
		t.Errorf("late result accepted: %v", err)
	}
	if _, err := Grant(js, "D", "w", now, ttl); !errors.Is(err, ErrNotQueued) {
		t.Errorf("failed job leased again: %v", err)
	}
}

func TestCancel(t *testing.T) {
	for _, tc := range []struct {
		in   JobState
		want State
	}{
		{JobState{State: Queued}, Cancelled},
		{leased("A", t0, 1, 0), Cancelled},
		{JobState{State: Done}, Done},
		{JobState{State: Failed}, Failed},
	} {
		got := Cancel(tc.in)
		if got.State != tc.want || (got.State == Cancelled && got.LeaseID != "") {
			t.Errorf("Cancel(%+v) = %+v, want state %s", tc.in, got, tc.want)
		}
	}
}

func TestStates(t *testing.T) {
	final := map[State]bool{Queued: false, Leased: false, Done: true, Failed: true, Cancelled: true}
	for s, f := range final {
		if !s.Valid() || s.Final() != f {
			t.Errorf("%s: Valid %v Final %v", s, s.Valid(), s.Final())
		}
	}
	if State("running").Valid() {
		t.Error("an unknown state is valid")
	}
}
