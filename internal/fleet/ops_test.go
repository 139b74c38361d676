package fleet

import (
	"slices"
	"testing"
	"time"
)

// TestSettle: a job that lost or gave back its lease goes back to the
// queue while its scan runs; once the scan has ended (a deadline withdrew
// what was queued) it is cancelled, never leased again.
func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      JobState
		running bool
		want    State
	}{
		{"requeued, scan running", JobState{State: Queued, Lost: 1}, true, Queued},
		{"requeued, scan ended", JobState{State: Queued, Lost: 1}, false, Cancelled},
		{"failed, scan ended", JobState{State: Failed, Lost: 3}, false, Failed}, // its error stands
		{"leased, scan ended", leased("L", t0, 1, 0), false, Leased},            // it may finish
		{"done", JobState{State: Done}, false, Done},
	} {
		if got := Settle(tc.in, tc.running); got.State != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got.State, tc.want)
		}
	}
	if got := Settle(JobState{State: Queued, Lost: 2, Attempts: 2}, false); got.Lost != 2 || got.Attempts != 2 {
		t.Errorf("settling lost the counts: %+v", got)
	}
}

// TestAdopts: a new scan takes over a job still leased from an ended scan
// when it would queue the same probe (model, revision, target, mode,
// runtime): the probe in flight is recorded once, for the new scan.
func TestAdopts(t *testing.T) {
	base := Job{ModelID: "o/m", Revision: "r1", Target: "tpu", Mode: "full", TimeoutS: 60}
	for _, tc := range []struct {
		name   string
		edit   func(j *Job)
		newKey string
		want   bool
	}{
		{"the same probe", func(*Job) {}, "k", true},
		{"other timeout and note", func(j *Job) { j.TimeoutS, j.PlanNote = 120, "x" }, "k", true},
		{"another model", func(j *Job) { j.ModelID = "o/n" }, "k", false},
		{"another revision", func(j *Job) { j.Revision = "r2" }, "k", false},
		{"another mode", func(j *Job) { j.Mode = "arch" }, "k", false},
		{"another target", func(j *Job) { j.Target = "cpu" }, "k", false},
		{"another runtime", func(*Job) {}, "k2", false},
	} {
		j := base
		tc.edit(&j)
		if got := Adopts(base, "k", j, tc.newKey); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestUnserved: which queued jobs no live worker can take (a rollout moved
// the fleet to another runtime, or the fleet is gone). A worker that said
// it is leaving is not live.
func TestUnserved(t *testing.T) {
	ttl := 2 * time.Minute
	kA, kB := QueueKey{"tpu", rtA.RetestKey(), 1}, QueueKey{"tpu", rtB.RetestKey(), 1}
	k16 := QueueKey{"tpu", rtA.RetestKey(), 16}
	left := seen("a2", "tpu", rtA, 8, 0)
	left.Left = t0.Add(-time.Second)
	for _, tc := range []struct {
		name  string
		keys  []QueueKey
		fleet []Seen
		want  []QueueKey
	}{
		{"served", []QueueKey{kA}, []Seen{seen("a", "tpu", rtA, 8, 0)}, nil},
		{"rolled out", []QueueKey{kA}, []Seen{seen("b", "tpu", rtB, 8, 0)}, []QueueKey{kA}},
		{"old worker gone", []QueueKey{kA}, []Seen{seen("a", "tpu", rtA, 8, time.Hour), seen("b", "tpu", rtB, 8, 0)}, []QueueKey{kA}},
		{"old worker left", []QueueKey{kA}, []Seen{left}, []QueueKey{kA}},
		{"mixed", []QueueKey{kA, kB}, []Seen{seen("b", "tpu", rtB, 8, 0)}, []QueueKey{kA}},
		{"no fleet", []QueueKey{kA}, nil, []QueueKey{kA}},
		{"nothing queued", nil, nil, nil},
		// a job sharded over more devices than any live worker has
		{"too big for the fleet", []QueueKey{k16, kA}, []Seen{seen("a", "tpu", rtA, 8, 0)}, []QueueKey{k16}},
	} {
		if got := Unserved(tc.keys, tc.fleet, t0, ttl); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// A leaving worker is not planned for either.
	if _, _, err := PlanGroup([]Seen{left}, "tpu", t0, ttl); err == nil {
		t.Error("PlanGroup planned for a worker that left")
	}
}
