package store_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// Failure groups on a target whose models have no downloads have a
// download share of 0 (not NaN: the JSON API could not encode it).
func TestFailuresWithoutDownloads(t *testing.T) {
	s := storetest.MustOpen(t)
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "o/a"}, {ID: "o/b"}}); err != nil {
		t.Fatal(err)
	}
	r := result("tpu", "fail", at(1))
	r.Signature = compat.Ptr("unsupported_op:aten::fft")
	record(t, s, "o/a", r)
	record(t, s, "o/b", r)
	got, err := s.Failures(ctx, "tpu", 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("failures = %+v, %v; want one group", got, err)
	}
	if g := got[0]; g.Models != 2 || g.Downloads != 0 || g.DownloadShare != 0 {
		t.Errorf("group = %+v; want 2 models, 0 downloads, share 0", g)
	}
}

// A current row whose status rank this binary does not know (past the end
// of compat.Statuses, as a newer binary might write) counts as untested.
func TestSummaryUnknownStatusRank(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	upsert(t, s, "o/a", "o/b")
	record(t, s, "o/a", result("tpu", "pass", at(1)))
	record(t, s, "o/b", result("tpu", "fail", at(1)))
	s.Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	// As that binary would write it: the row and its status tallies.
	for _, q := range []string{
		`UPDATE current SET status_rank = ?1 WHERE model_id = 'o/b' AND target = 'tpu'`,
		`UPDATE status_tallies SET models = models - 1, downloads = downloads - 900 WHERE target = 'tpu' AND status_rank = 1`,
		`INSERT INTO status_tallies (target, status_rank, models, downloads) VALUES ('tpu', ?1, 1, 900)`,
	} {
		if _, err := db.Exec(q, len(compat.Statuses)); err != nil {
			t.Fatal(q, err)
		}
	}
	db.Close()
	s, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sum, err := s.Summary(ctx, "tpu")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Models != 2 || sum.Counts["pass"] != 1 || sum.Counts["fail"] != 0 || sum.Counts["untested"] != 1 || sum.Tested != 1 {
		t.Errorf("summary = %+v; want 2 models: 1 pass, 1 untested", sum)
	}
}
