package store

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestStatusRank: the ranks are stored (current.status_rank, whose schema
// default 7 is untested's) and order the status sort, so they are written
// out here rather than derived from compat.Statuses as statusRank is: a
// reordered or extended compat.Statuses fails this test instead of
// silently changing the meaning of stored rows.
func TestStatusRank(t *testing.T) {
	want := map[compat.Status]int{
		compat.StatusPass:     0,
		compat.StatusFail:     1,
		compat.StatusOOM:      2,
		compat.StatusTimeout:  3,
		compat.StatusCrash:    4,
		compat.StatusSkipped:  5,
		compat.StatusError:    6,
		compat.StatusUntested: 7,
		"no-such-status":      8,
	}
	for st, rank := range want {
		if got := statusRank(st); got != rank {
			t.Errorf("statusRank(%s) = %d; want %d", st, got, rank)
		}
	}
	for _, st := range compat.Statuses {
		if _, ok := want[st]; !ok {
			t.Errorf("status %s has no rank here: add it to this test and decide what its stored rank means", st)
		}
	}
}
