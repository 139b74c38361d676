package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// eventByID is event id as the store reads it back (its UID included).
func eventByID(t *testing.T, s *SQLite, id int64) compat.Event {
	t.Helper()
	evs, err := s.EventsAfter(context.Background(), id-1, 1)
	if err != nil || len(evs) != 1 || evs[0].ID != id {
		t.Fatalf("event %d: %v %v", id, evs, err)
	}
	return evs[0]
}

// TestIDsAreUniqueAcrossRestores: a copy restored from `scanner backup`
// hands out an event's number again for another change, but not its UID
// (nor its delivery's id): every opening of a database starts an epoch,
// so even the same backup restored twice gives two. An event written
// before the backup keeps, in the copy, the UID it was published with;
// an event from before epochs keeps its bare id.
func TestIDsAreUniqueAcrossRestores(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live, err := Open(ctx, filepath.Join(dir, "live.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	before := addEvents(t, live, "org/a", compat.StatusPass)[0]
	published := eventByID(t, live, before)
	if published.Epoch == "" || published.UID() == "1" {
		t.Fatalf("a new event without an epoch: %+v", published)
	}
	backup := filepath.Join(dir, "backup.db")
	if err := live.Backup(ctx, backup); err != nil {
		t.Fatal(err)
	}
	lost := eventByID(t, live, addEvents(t, live, "org/b", compat.StatusPass)[0]) // after the backup: lost on restore

	var uids []string
	for _, name := range []string{"restored-1.db", "restored-2.db"} { // the same backup restored twice
		b, err := os.ReadFile(backup)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		restored, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if got := eventByID(t, restored, before); got.UID() != published.UID() {
			t.Errorf("%s: the event from before the backup is %q, was published as %q", name, got.UID(), published.UID())
		}
		again := eventByID(t, restored, addEvents(t, restored, "org/c", compat.StatusFail)[0])
		if again.ID != lost.ID {
			t.Fatalf("%s: the restored copy gave id %d, want the lost event's %d (the case under test)", name, again.ID, lost.ID)
		}
		uids = append(uids, again.UID())
		// Its delivery is sent with its UID.
		if err := restored.QueueDeliveries(ctx, again.ID, []NewDelivery{{Endpoint: "e", EventID: again.ID, Body: []byte(`{}`), UID: again.UID()}}); err != nil {
			t.Fatal(err)
		}
		if ds, err := restored.DueDeliveries(ctx, "e", again.At.Add(1e18), 10); err != nil || len(ds) != 1 || ds[0].UID != again.UID() {
			t.Errorf("%s: deliveries %+v %v, want one with UID %q", name, ds, err, again.UID())
		}
		restored.Close()
	}
	if uids[0] == lost.UID() || uids[1] == lost.UID() || uids[0] == uids[1] {
		t.Errorf("UIDs of event %d: lost %q, restored %q and %q: want all different", lost.ID, lost.UID(), uids[0], uids[1])
	}

	// An event from before epochs (written before the migration) keeps its
	// bare id.
	if _, err := live.w.ExecContext(ctx, `UPDATE events SET epoch = '' WHERE id = ?`, before); err != nil {
		t.Fatal(err)
	}
	if got := eventByID(t, live, before).UID(); got != "1" {
		t.Errorf("an event from before epochs: UID %q, want its bare id 1", got)
	}
}
