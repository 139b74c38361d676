package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestUntestedRankIsTheSchemaDefault: a model without a result has the
// status rank the Go side gives untested (statusRank), whether its current
// row was just made (the schema's default) or reset when results moved
// away (sqlResetCurrent).
func TestUntestedRankIsTheSchemaDefault(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.UpsertModels(ctx, []ModelUpsert{{ID: "o/fresh", Downloads: 1}}); err != nil {
		t.Fatal(err)
	}
	want := statusRank(compat.StatusUntested)
	if want != len(compat.Statuses)-1 {
		t.Fatalf("untested's rank %d: untested is no longer the last status word", want)
	}
	check := func(when string) {
		t.Helper()
		rows, err := s.w.QueryContext(ctx, `SELECT status_rank FROM current WHERE model_id = 'o/fresh'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var rank int
			if err := rows.Scan(&rank); err != nil {
				t.Fatal(err)
			}
			n++
			if rank != want {
				t.Errorf("%s: status_rank %d, want untested's %d", when, rank, want)
			}
		}
		if n == 0 {
			t.Fatalf("%s: no current row", when)
		}
	}
	check("a new model")
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// As if it had a passing result that moved away (a merge): the reset
	// must bring the rank back, not leave it.
	if _, err := tx.ExecContext(ctx, `UPDATE current SET status_rank = 0 WHERE model_id = 'o/fresh'`); err != nil {
		t.Fatal(err)
	}
	if err := rebuildCurrent(ctx, tx, "o/fresh"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	check("after a reset")
}
