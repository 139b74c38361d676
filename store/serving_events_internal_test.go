package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// A verdict stored before the serving changes were written is the one a
// new verdict is compared with: pass → fail is a regression, not a first.
func TestServingEventAfterAnOldVerdict(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.UpsertModels(ctx, []ModelUpsert{{ID: "org/a", SHA: "a"}}); err != nil {
		t.Fatal(err)
	}
	m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "pass"}
	if err := s.PutServingResult(ctx, "org/a", m); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM events`); err != nil { // as written before serving changes
		t.Fatal(err)
	}
	m.Status = "fail"
	if err := s.PutServingResult(ctx, "org/a", m); err != nil {
		t.Fatal(err)
	}
	evs, err := s.ModelEvents(ctx, "org/a", 10)
	if err != nil || len(evs) != 1 || evs[0].Kind != compat.EventServingRegression || evs[0].FromStatus != "pass" {
		t.Errorf("after an old pass: %+v %v", evs, err)
	}
}
