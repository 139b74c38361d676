package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"slices"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
)

const (
	sqlPutServingRegistry = `INSERT INTO serving_registries (version, vllm_version, read_at) VALUES (?, ?, ?)
ON CONFLICT (version) DO UPDATE SET vllm_version = excluded.vllm_version, read_at = excluded.read_at`
	sqlDeleteServingArchs = `DELETE FROM serving_archs WHERE version = ?`
	sqlPutServingArch     = `INSERT INTO serving_archs (version, arch, kind) VALUES (?, ?, ?)`
	sqlServingRegistry    = `SELECT vllm_version FROM serving_registries WHERE version = ?`
	sqlServingArchs       = `SELECT arch, kind FROM serving_archs WHERE version = ?`

	// listWhereServe keeps the models whose first architecture the
	// release's registry lists is of a kind (serving.Declare's rule: the
	// first listed decides); listWhereNotServed those whose architectures
	// are known and none listed, by a release that was read.
	listWhereServe = `(SELECT v.kind FROM json_each(m.readiness, '$.architectures') a
	JOIN serving_archs v ON v.version = ? AND v.arch = a.value ORDER BY a.key LIMIT 1) = ?`
	// listWhereServedAny keeps the models the release serves as any kind;
	// listWhereCell those with a serving cell at all (architectures known,
	// the release read); listWhereMeasured (%s: the statuses' marks) those
	// whose newest measured serving verdict has one of the statuses.
	listWhereServedAny = `EXISTS (SELECT 1 FROM json_each(m.readiness, '$.architectures') a
	JOIN serving_archs v ON v.version = ? AND v.arch = a.value)`
	listWhereCell = `json_array_length(m.readiness, '$.architectures') > 0
	AND EXISTS (SELECT 1 FROM serving_registries WHERE version = ?)`
	listWhereMeasured  = `EXISTS (SELECT 1 FROM serving_results s WHERE s.model_id = m.id AND s.status IN (%s))`
	listWhereNotServed = `json_array_length(m.readiness, '$.architectures') > 0
	AND EXISTS (SELECT 1 FROM serving_registries WHERE version = ?)
	AND NOT EXISTS (SELECT 1 FROM json_each(m.readiness, '$.architectures') a
		JOIN serving_archs v ON v.version = ? AND v.arch = a.value)`
)

// ModelQuery.Serve's values beside the serving kinds (compat.ServingKinds:
// the release declares it serves the model as that kind), each the models
// whose table cell says so (web's vLLM column: the measured verdict when
// one was judged, else the declared cell).
const (
	// ServePass: the serving probe measured a pass.
	ServePass = "pass"
	// ServeFail: the serving probe measured a verdict held against
	// vLLM-TorchTPU (fail, oom, timeout, crash).
	ServeFail = "fail"
	// ServeDeclared: declared served (any kind), no measured verdict
	// (never measured, or measured without one: the scanner's error, not
	// judged for want of a CPU reference).
	ServeDeclared = "declared"
	// ServeNone: the release does not serve it (its architectures known,
	// none in its registry).
	ServeNone = "none"
)

// ServeValues are ModelQuery.Serve's values, in the filter's order: the
// measured ones, declared, the kinds, none. "" (all) is not listed.
func ServeValues() []string {
	out := []string{ServePass, ServeFail, ServeDeclared}
	for _, k := range compat.ServingKinds {
		out = append(out, string(k))
	}
	return append(out, ServeNone)
}

// judgedServing are the measured serving statuses that are a verdict
// (compat.ServingMeasured.Judged), for SQL IN lists: pass first, then
// those held against vLLM-TorchTPU.
func judgedServing() (pass string, held []any) {
	for _, st := range compat.Statuses {
		if st.HeldAgainstModel() {
			held = append(held, string(st))
		}
	}
	return string(compat.StatusPass), held
}

// serveFilter is the WHERE condition of ModelQuery.Serve v and its
// arguments (v validated by validServe; "" is none).
func serveFilter(v string) (string, []any) {
	pass, held := judgedServing()
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(held)), ", ")
	cell := []any{serving.Version} // listWhereCell's
	switch v {
	case "":
		return "", nil
	case ServeNone:
		return listWhereNotServed, []any{serving.Version, serving.Version}
	case ServePass:
		return listWhereCell + " AND " + fmt.Sprintf(listWhereMeasured, "?"), append(cell, pass)
	case ServeFail:
		return listWhereCell + " AND " + fmt.Sprintf(listWhereMeasured, marks), append(cell, held...)
	case ServeDeclared:
		return listWhereServedAny + " AND NOT " + fmt.Sprintf(listWhereMeasured, marks+", ?"),
			append(append([]any{serving.Version}, held...), pass)
	}
	return listWhereServe, []any{serving.Version, v}
}

// PutServingRegistry stores what a vllm-torchtpu release declares,
// replacing what was stored for that release.
func (s *SQLite) PutServingRegistry(ctx context.Context, r serving.Registry) error {
	if r.Version == "" || len(r.Archs) == 0 {
		return fmt.Errorf("store: put serving registry: %w: no version or no architectures", ErrInvalid)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: put serving registry: %w", err)
	}
	defer tx.Rollback()
	if err := putServing(ctx, tx, r, unixNano(s.now())); err != nil {
		return fmt.Errorf("store: put serving registry %s: %w", r.Version, err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return fmt.Errorf("store: put serving registry: %w", err)
	}
	if err := s.commit(tx); err != nil {
		return fmt.Errorf("store: put serving registry: %w", err)
	}
	return nil
}

func putServing(ctx context.Context, tx *sql.Tx, r serving.Registry, at int64) error {
	if _, err := tx.ExecContext(ctx, sqlPutServingRegistry, r.Version, r.VLLMVersion, at); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, sqlDeleteServingArchs, r.Version); err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, sqlPutServingArch)
	if err != nil {
		return err
	}
	defer st.Close()
	for arch, kind := range r.Archs {
		if !kind.Valid() {
			return fmt.Errorf("%w: %s: kind %q", ErrInvalid, arch, kind)
		}
		if _, err := st.ExecContext(ctx, r.Version, arch, string(kind)); err != nil {
			return err
		}
	}
	return nil
}

// ServingRegistry is what the release version declares, as stored; its
// error wraps ErrNotFound when that release was never read.
func (s *SQLite) ServingRegistry(ctx context.Context, version string) (serving.Registry, error) {
	r := serving.Registry{Version: version, Archs: map[string]compat.ServingKind{}}
	err := s.r.QueryRowContext(ctx, sqlServingRegistry, version).Scan(&r.VLLMVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return serving.Registry{}, fmt.Errorf("store: serving registry %s: %w", version, ErrNotFound)
	}
	if err != nil {
		return serving.Registry{}, fmt.Errorf("store: serving registry %s: %w", version, err)
	}
	rows, err := s.r.QueryContext(ctx, sqlServingArchs, version)
	if err != nil {
		return serving.Registry{}, fmt.Errorf("store: serving registry %s: %w", version, err)
	}
	defer rows.Close()
	for rows.Next() {
		var arch, kind string
		if err := rows.Scan(&arch, &kind); err != nil {
			return serving.Registry{}, fmt.Errorf("store: serving registry %s: %w", version, err)
		}
		r.Archs[arch] = compat.ServingKind(kind)
	}
	if err := rows.Err(); err != nil {
		return serving.Registry{}, fmt.Errorf("store: serving registry %s: %w", version, err)
	}
	return r, nil
}

// validServe accepts "" (no filter) and ServeValues.
func validServe(v string) error {
	if v == "" || slices.Contains(ServeValues(), v) {
		return nil
	}
	return fmt.Errorf("%w: serve %q (want one of %s)", ErrInvalid, v, strings.Join(ServeValues(), ", "))
}
