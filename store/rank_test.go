package store

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// The schema's defaults (status_rank 7 for untested) and failingness
// assume compat.Statuses' order.
func TestStatusRankMatchesSchema(t *testing.T) {
	if got := statusRank(compat.StatusUntested); got != 7 {
		t.Errorf("untested rank = %d; the schema's current.status_rank default is 7", got)
	}
	for i, st := range compat.Statuses {
		if statusRank(st) != i {
			t.Errorf("rank of %s = %d; want %d", st, statusRank(st), i)
		}
	}
}
