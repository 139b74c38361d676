package store

import (
	"context"
	"path/filepath"
	"testing"
)

// Migration 0019 keeps what 0016 stored: each model's one serving row
// becomes its judged row (a verdict) or its not-judged row (error,
// skipped), and the read shows it as before.
func TestMigrationKeepsTheStoredServingVerdicts(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.UpsertModels(ctx, []ModelUpsert{{ID: "org/pass", SHA: "a"}, {ID: "org/noref", SHA: "b"}}); err != nil {
		t.Fatal(err)
	}
	// the schema as 0016 left it, with a row of each kind
	for _, q := range []string{
		`DROP TABLE serving_results`,
		`CREATE TABLE serving_results (model_id TEXT PRIMARY KEY REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
			runtime_key TEXT NOT NULL, status TEXT NOT NULL, measured_at INTEGER NOT NULL, result TEXT NOT NULL) WITHOUT ROWID`,
		`INSERT INTO serving_results VALUES ('org/pass', '0.29.0~~~', 'pass', 1000, '{"evidence":"measured","status":"pass","tensor_parallel_size":1}')`,
		`INSERT INTO serving_results VALUES ('org/noref', '0.29.0~~~', 'skipped', 2000,
			'{"evidence":"measured","status":"skipped","reason":"no_reference","tensor_parallel_size":1}')`,
		`ALTER TABLE events DROP COLUMN stage`,
		`ALTER TABLE workers DROP COLUMN serving`,
		`DELETE FROM schema_migrations WHERE version >= 19`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var judged, unjudged int
	if err := s.w.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE judged = 1), count(*) FILTER (WHERE judged = 0) FROM serving_results`).
		Scan(&judged, &unjudged); err != nil {
		t.Fatal(err)
	}
	if judged != 1 || unjudged != 1 {
		t.Errorf("after 0019: %d judged rows, %d not judged, want 1 and 1", judged, unjudged)
	}
	got, err := s.ServingResults(ctx, []string{"org/pass", "org/noref"})
	if err != nil {
		t.Fatal(err)
	}
	if got["org/pass"].Status != "pass" || got["org/noref"].Status != "skipped" || got["org/noref"].Reason == nil {
		t.Errorf("read after 0019: %+v", got)
	}
}
