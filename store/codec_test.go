package store_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestCorruptResultJSONIsAnError: a result whose stored JSON (runtime,
// metrics, stages, continuation) no longer decodes is an error on every
// read path, never a result shown with an empty runtime or metrics.
func TestCorruptResultJSONIsAnError(t *testing.T) {
	for _, column := range []string{"runtime", "metrics", "stages", "continuation"} {
		t.Run(column, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "scanner.db")
			s, err := store.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			upsert(t, s, "org/a", "org/b")
			r := result("tpu", "pass", at(1))
			r.Stages = []compat.StageRun{{Stage: compat.StageLoad, OK: true, DurationS: 1.5}}
			r.Continuation = &compat.Continuation{Prompt: "p", Text: "t"}
			record(t, s, "org/a", r)
			record(t, s, "org/b", result("tpu", "fail", at(2)))
			s.Close()

			db, err := sql.Open("sqlite3", path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := db.Exec(`UPDATE results SET ` + column + ` = '{"not json' WHERE model_id = 'org/a'`)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				t.Fatalf("corrupting %s: %d rows, %v", column, n, err)
			}
			db.Close()

			s, err = store.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// The other model's result still reads.
			if h, err := s.History(ctx, "org/b", "tpu", 10); err != nil || len(h) != 1 || h[0].Status != "fail" {
				t.Errorf("org/b history = %+v, %v", h, err)
			}
			reads := map[string]func() error{
				"GetModel": func() error { _, err := s.GetModel(ctx, "org/a", "tpu"); return err },
				"History":  func() error { _, err := s.History(ctx, "org/a", "tpu", 10); return err },
				"ListModels": func() error {
					_, _, err := s.ListModels(ctx, store.ModelQuery{Target: "tpu"})
					return err
				},
			}
			if column == "continuation" {
				delete(reads, "ListModels") // lists leave the continuation out
			}
			for name, read := range reads {
				if err := read(); err == nil || !strings.Contains(err.Error(), column) {
					t.Errorf("%s with corrupt %s: %v; want an error naming %s", name, column, err, column)
				}
			}
		})
	}
}

// TestModelTagsStoredAsDocumented: the models.tags column is a JSON array,
// NULL when the model has no tags (nil or empty), as the schema says; the
// tags read back either way.
func TestModelTagsStoredAsDocumented(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id     string
		tags   []string
		stored sql.NullString
	}{
		{"org/none", nil, sql.NullString{}},
		{"org/empty", []string{}, sql.NullString{}},
		{"org/two", []string{"pytorch", "text-generation"}, sql.NullString{String: `["pytorch","text-generation"]`, Valid: true}},
	}
	for _, tt := range tests {
		if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: tt.id, Task: "fill-mask", Tags: tt.tags}}); err != nil {
			t.Fatal(err)
		}
		m, err := s.GetModel(ctx, tt.id, "")
		if err != nil || !slices.Equal(m.Tags, tt.tags) || (len(tt.tags) == 0 && m.Tags != nil) {
			t.Errorf("%s: tags %#v, %v; want %#v (nil when none)", tt.id, m.Tags, err, tt.tags)
		}
	}
	s.Close()
	for _, tt := range tests {
		if got := storedColumn(t, path, `SELECT tags FROM models WHERE id = ?`, tt.id); got != tt.stored {
			t.Errorf("%s: stored tags %+v; want %+v", tt.id, got, tt.stored)
		}
	}
}

// TestResultStagesStoredAsDocumented: the results.stages column is a JSON
// array, NULL when the result has no stages, as the schema says; the stages
// read back either way.
func TestResultStagesStoredAsDocumented(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	two := []compat.StageRun{{Stage: compat.StageLoad, OK: true, DurationS: 1.5}, {Stage: compat.StageForward, OK: false, DurationS: 0.25}}
	tests := []struct {
		id     string
		stages []compat.StageRun
		stored sql.NullString
	}{
		{"org/none", nil, sql.NullString{}},
		{"org/empty", []compat.StageRun{}, sql.NullString{}},
		{"org/two", two, sql.NullString{String: `[{"stage":"load","ok":true,"duration_s":1.5},{"stage":"forward","ok":false,"duration_s":0.25}]`, Valid: true}},
	}
	for _, tt := range tests {
		upsert(t, s, tt.id)
		r := result("cpu", "pass", at(1))
		r.Stages = tt.stages
		record(t, s, tt.id, r)
		h, err := s.History(ctx, tt.id, "cpu", 1)
		if err != nil || len(h) != 1 {
			t.Fatalf("%s: history %d results, %v", tt.id, len(h), err)
		}
		if got := h[0].Stages; !slices.Equal(got, tt.stages) || (len(tt.stages) == 0 && got != nil) {
			t.Errorf("%s: stages read back %#v; want %#v (nil when none)", tt.id, got, tt.stages)
		}
	}
	s.Close()
	for _, tt := range tests {
		if got := storedColumn(t, path, `SELECT stages FROM results WHERE model_id = ?`, tt.id); got != tt.stored {
			t.Errorf("%s: stored stages %+v; want %+v", tt.id, got, tt.stored)
		}
	}
}

// storedColumn reads one column as stored, with the query given, straight
// from the database file (not through the store).
func storedColumn(t *testing.T, path, query, id string) sql.NullString {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got sql.NullString
	if err := db.QueryRow(query, id).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}
