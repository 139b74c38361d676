package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Times are stored as Unix nanoseconds and come back in UTC; the zero time
// is stored as NULL where a column allows it.

// unixNano is every conversion of a time to the stored nanoseconds. Past
// what int64 nanoseconds hold (1678 to 2262) time.UnixNano wraps (2300
// would read back as 1715); here such a time saturates at the nearest end
// instead, so nothing stored ever moves to the other side of the range.
// Results are refused before that (compat.Result.Validate).
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(minStorable):
		return math.MinInt64
	case t.After(maxStorable):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// The instants int64 nanoseconds since 1970 can hold.
var (
	minStorable = time.Unix(0, math.MinInt64)
	maxStorable = time.Unix(0, math.MaxInt64)
)

func fromNano(ns int64) time.Time { return time.Unix(0, ns).UTC() }

func nullTime(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: unixNano(t), Valid: true}
}

func nullTimePtr(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return nullTime(*t)
}

func fromNullTime(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNano(n.Int64)
}

// nullStr stores a nullable string-like contract field.
func nullStr[T ~string](p *T) sql.NullString {
	if p == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(*p), Valid: true}
}

func fromNullStr[T ~string](n sql.NullString) *T {
	if !n.Valid {
		return nil
	}
	v := T(n.String)
	return &v
}

func nullFloat(p *float64) sql.NullFloat64 {
	if p == nil {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: *p, Valid: true}
}

// jsonText is v as JSON text.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// stringsJSON is ss as JSON text, as jsonText writes it: plain strings
// (printable ASCII that encoding/json does not escape, as most Hub tags
// and ids are) are quoted here, which a listing of every model does a
// hundred thousand times; any other goes through encoding/json.
func stringsJSON(ss []string) (string, error) {
	if ss == nil {
		return "null", nil
	}
	n := 2
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return jsonText(ss)
			}
		}
		n += len(s) + 3
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String(), nil
}

// resultRow is a results row as scanned; every column is nullable so that
// one type serves both inner and outer joins.
type resultRow struct {
	id           sql.NullInt64
	scanID       sql.NullInt64
	target       sql.NullString
	status       sql.NullString
	stage        sql.NullString
	failureClass sql.NullString
	op           sql.NullString
	reason       sql.NullString
	signature    sql.NullString
	message      sql.NullString
	mode         sql.NullString
	revision     sql.NullString
	testedAt     sql.NullInt64
	durationS    sql.NullFloat64
	runtime      sql.NullString
	metrics      sql.NullString
	stages       sql.NullString
	logTail      sql.NullString
	task         sql.NullString
	repro        sql.NullString
	continuation sql.NullString
	worker       sql.NullString
	devicesUsed  sql.NullInt64
	sharding     sql.NullString
	modes        sql.NullString
	precSens     sql.NullBool
	workerTested sql.NullInt64
	tpuOps       sql.NullString
}

// dest is the Scan destinations, in the order of resultCols.
func (r *resultRow) dest() []any {
	return []any{&r.id, &r.scanID, &r.target, &r.status, &r.stage, &r.failureClass, &r.op, &r.reason,
		&r.signature, &r.message, &r.mode, &r.revision, &r.testedAt, &r.durationS, &r.runtime, &r.metrics,
		&r.stages, &r.logTail, &r.task, &r.repro, &r.continuation, &r.worker, &r.workerTested,
		&r.devicesUsed, &r.sharding, &r.modes, &r.precSens, &r.tpuOps}
}

// runtimes decodes runtime JSON, once per distinct text: the results of a
// list mostly share one runtime.
type runtimes map[string]compat.Runtime

func (rs runtimes) decode(text string) (compat.Runtime, error) {
	rt, ok := rs[text]
	if !ok {
		if err := json.Unmarshal([]byte(text), &rt); err != nil {
			return rt, err
		}
		rs[text] = rt
	}
	if rt.DeviceMemGB != nil { // no pointer shared between results
		rt.DeviceMemGB = compat.Ptr(*rt.DeviceMemGB)
	}
	if rt.TCMalloc != nil {
		rt.TCMalloc = compat.Ptr(*rt.TCMalloc)
	}
	return rt, nil
}

// result converts the row; nil when the row is the NULL side of an outer join.
func (r *resultRow) result(rts runtimes) (*compat.Result, error) {
	if !r.id.Valid {
		return nil, nil
	}
	res := compat.Result{
		Target:       compat.Target(r.target.String),
		Status:       compat.Status(r.status.String),
		Stage:        fromNullStr[compat.Stage](r.stage),
		FailureClass: fromNullStr[compat.FailureClass](r.failureClass),
		Op:           fromNullStr[string](r.op),
		Reason:       fromNullStr[compat.Reason](r.reason),
		Signature:    fromNullStr[string](r.signature),
		Message:      fromNullStr[string](r.message),
		Mode:         fromNullStr[compat.Mode](r.mode),
		Revision:     r.revision.String,
		TestedAt:     fromNano(r.testedAt.Int64),
		DurationS:    r.durationS.Float64,
		Repro:        r.repro.String,
		Task:         r.task.String,
		LogTail:      r.logTail.String,
		Worker:       r.worker.String,
		DevicesUsed:  max(int(r.devicesUsed.Int64), 1),
		Sharding:     fromNullStr[compat.Sharding](r.sharding),

		PrecisionSensitive: r.precSens.Bool,
	}
	if r.scanID.Valid {
		id := r.scanID.Int64
		res.ScanID = &id
	}
	if r.workerTested.Valid {
		res.WorkerTestedAt = compat.Ptr(fromNano(r.workerTested.Int64))
	}
	var err error
	if res.Runtime, err = rts.decode(r.runtime.String); err != nil {
		return nil, fmt.Errorf("result %d runtime: %w", r.id.Int64, err)
	}
	if err := json.Unmarshal([]byte(r.metrics.String), &res.Metrics); err != nil {
		return nil, fmt.Errorf("result %d metrics: %w", r.id.Int64, err)
	}
	if r.stages.Valid {
		if err := json.Unmarshal([]byte(r.stages.String), &res.Stages); err != nil {
			return nil, fmt.Errorf("result %d stages: %w", r.id.Int64, err)
		}
	}
	if r.continuation.Valid {
		if err := json.Unmarshal([]byte(r.continuation.String), &res.Continuation); err != nil {
			return nil, fmt.Errorf("result %d continuation: %w", r.id.Int64, err)
		}
	}
	if r.modes.Valid {
		if err := json.Unmarshal([]byte(r.modes.String), &res.Modes); err != nil {
			return nil, fmt.Errorf("result %d modes: %w", r.id.Int64, err)
		}
	}
	if r.tpuOps.Valid {
		if err := json.Unmarshal([]byte(r.tpuOps.String), &res.TPUOps); err != nil {
			return nil, fmt.Errorf("result %d tpu_ops: %w", r.id.Int64, err)
		}
	}
	return &res, nil
}

// scanResults reads rows of resultCols; it takes a query's two results.
func scanResults(rows *sql.Rows, err error) ([]compat.Result, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []compat.Result{}
	rts := runtimes{}
	for rows.Next() {
		var rr resultRow
		if err := rows.Scan(rr.dest()...); err != nil {
			return nil, err
		}
		res, err := rr.result(rts)
		if err != nil {
			return nil, err
		}
		out = append(out, *res)
	}
	return out, rows.Err()
}

// modelRow is a models row as scanned.
type modelRow struct {
	id, task, library, sha string
	downloads, likes       int64
	gated                  bool
	tags                   sql.NullString
	lastModified           sql.NullInt64
	readiness              sql.NullString
}

func (m *modelRow) dest() []any {
	return []any{&m.id, &m.task, &m.library, &m.downloads, &m.likes, &m.gated, &m.sha, &m.tags, &m.lastModified, &m.readiness}
}

func (m *modelRow) model() (compat.Model, error) {
	out := compat.Model{
		ID:           m.id,
		Task:         m.task,
		Library:      m.library,
		Downloads:    m.downloads,
		Likes:        m.likes,
		Gated:        m.gated,
		SHA:          m.sha,
		URL:          HubURL + "/" + m.id,
		LastModified: fromNullTime(m.lastModified),
	}
	if m.tags.Valid {
		if err := json.Unmarshal([]byte(m.tags.String), &out.Tags); err != nil {
			return out, fmt.Errorf("model %s tags: %w", m.id, err)
		}
	}
	var err error
	out.Readiness, err = decodeReadiness(m.id, m.readiness)
	return out, err
}

// scanEvents reads rows of eventCols; it takes a query's two results.
func scanEvents(rows *sql.Rows, err error) ([]compat.Event, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []compat.Event{}
	for rows.Next() {
		var (
			e        compat.Event
			runtime  string
			sig, msg sql.NullString
			stage    sql.NullString
			at       int64
			devices  sql.NullInt64
		)
		if err := rows.Scan(&e.ID, &e.ModelID, &e.Target, &e.Kind, &e.FromStatus, &e.ToStatus, &e.Revision,
			&runtime, &sig, &msg, &at, &stage, &e.Epoch, &devices); err != nil {
			return nil, err
		}
		e.DevicesUsed = int(max(devices.Int64, 0)) // 0: its result is gone
		e.Stage = fromNullStr[compat.Stage](stage)
		e.Signature = fromNullStr[string](sig)
		e.Message = fromNullStr[string](msg)
		e.At = fromNano(at)
		if err := json.Unmarshal([]byte(runtime), &e.Runtime); err != nil {
			return nil, fmt.Errorf("event %d runtime: %w", e.ID, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// scanRow is what sql.Row and sql.Rows have in common.
type scanRow interface{ Scan(dest ...any) error }

// scanScan reads one row of scanCols.
func scanScan(row scanRow) (Scan, error) {
	var (
		s        Scan
		status   string
		started  int64
		finished sql.NullInt64
		busy     sql.NullFloat64
		runtime  string
		stalled  sql.NullInt64
	)
	if err := row.Scan(&s.ID, &s.Trigger, &status, &s.Target, &s.Params, &started, &finished,
		&s.Planned, &s.Done, &s.Probed, &s.Unchanged, &s.Error, &busy, &runtime, &stalled, &s.FleetNote); err != nil {
		return s, err
	}
	if stalled.Valid {
		s.StalledSince = compat.Ptr(fromNano(stalled.Int64))
	}
	s.Status = ScanStatus(status)
	s.StartedAt = fromNano(started)
	if finished.Valid {
		t := fromNano(finished.Int64)
		s.FinishedAt = &t
	}
	if busy.Valid {
		b := busy.Float64
		s.DeviceBusy = &b
	}
	if err := json.Unmarshal([]byte(runtime), &s.Runtime); err != nil {
		return s, fmt.Errorf("scan %d runtime: %w", s.ID, err)
	}
	return s, nil
}
