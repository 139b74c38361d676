// Package store keeps the scanner's state in SQLite: models, scans, results
// and events (status changes). All SQL of the project lives in this package.
//
// Not-found lookups return an error that wraps ErrNotFound, never (zero, nil).
//
// The package has no interface of its own: each consumer (web, internal/scan)
// declares the few methods of *SQLite it uses. Its types carry no JSON tags:
// the shapes the API serves are web's.
package store

import (
	"errors"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// ErrNotFound is wrapped by every lookup that finds nothing.
var ErrNotFound = errors.New("not found")

// ErrBadCursor is returned for a cursor not in its form (a list's
// cursor, CursorPattern; a comparison's, CompareCursorPattern).
var ErrBadCursor = errors.New("invalid cursor")

// ErrInvalid is wrapped by errors about the caller's arguments (an unknown
// sort, status or target; a result without a tested_at time), as opposed to
// failures of the database. An HTTP layer maps it to 400.
var ErrInvalid = errors.New("invalid argument")

// ModelUpsert is what a scan learned about a model from the Hub.
type ModelUpsert struct {
	ID           string
	Task         string
	Library      string
	Downloads    int64
	Likes        int64
	Gated        bool
	SHA          string
	Tags         []string
	LastModified time.Time
	// Aliases are older ids that the Hub redirected to ID (307 renames);
	// lookups under an alias find this model.
	Aliases []string
}

// ScanStatus is where a scan stands.
type ScanStatus string

// Scan states.
const (
	ScanRunning     ScanStatus = "running"
	ScanDone        ScanStatus = "done"
	ScanFailed      ScanStatus = "failed"      // the scan itself failed (Hub unreachable …)
	ScanInterrupted ScanStatus = "interrupted" // the process died or was stopped mid-scan
)

// Scan is one run of the scanner over a list of models.
type Scan struct {
	ID         int64
	Trigger    string // "schedule", "manual", "cli", "startup"
	Status     ScanStatus
	Target     string
	Params     string // the scan's options, JSON
	StartedAt  time.Time
	FinishedAt *time.Time
	Planned    int // models listed for this scan
	Done       int // models with a recorded outcome
	Probed     int // of which a probe really ran
	Unchanged  int // of which nothing changed (no retest)
	Error      string
	// DeviceBusy is the time probes held the device ÷ the scan's wall time;
	// nil until the scan finishes.
	DeviceBusy *float64
	Runtime    compat.Runtime
	// StalledSince is when the scan's queued jobs stopped matching any
	// live worker (--dispatch workers: a rollout to another runtime, a
	// fleet gone); nil while they match.
	StalledSince *time.Time
	// FleetNote says what the fleet did about a stall: waiting, re-planned
	// for the runtime the fleet runs now, or ended; "" when nothing.
	FleetNote string
}

// ScanFinish is how a scan ended.
type ScanFinish struct {
	Status     ScanStatus
	Error      string
	DeviceBusy *float64
}

// ModelQuery selects and orders models for the table, the API and the CSV.
type ModelQuery struct {
	Q      string          // substring of the id, case-insensitive
	Status []compat.Status // any of these (untested = no result on Target)
	Train  []compat.Status // the current result's train verdict is any of these (issue 25's matrix)
	Task   string
	Org    string // the id's part before "/"; "" for all
	Hint   string // a readiness hint code (readiness.Codes) the model has; "" for all
	// Serve keeps the models whose serving cell says it (ServeValues):
	// measured pass or fail (ServePass, ServeFail), declared served with no
	// measured verdict (ServeDeclared), declared by the pinned
	// vllm-torchtpu (serving.Version) as this kind (compat.ServingKinds),
	// or not served (ServeNone); "" for all.
	Serve  string
	Target compat.Target // whose result is "current"; "" = the most recent on any target
	Sort   string        // one of Sorts() (sort.go); "" = DefaultSort
	Desc   *bool         // nil = the sort's natural direction (Sort.Desc)
	Limit  int           // capped by the store at 1000; 0 = 50
	Cursor string        // a position (CursorPattern): the previous page's next cursor
}

// Summary is the site's headline.
type Summary struct {
	Models           int
	Tested           int
	Counts           map[compat.Status]int
	PassRate         *float64 // pass ÷ tested (not skipped/error/untested); nil when none
	WeightedPassRate *float64 // the pass rate weighted by downloads; nil when none
	LastScan         *Scan
	Runtime          *compat.Runtime // of the most recent result
	Fit              Fit             // models that fit one device of each TPU generation
	// Tasks tally every known model by task and library, whatever the
	// target: the source of the coverage figure (which share of the
	// transformers-backed models falls in a task the harness exercises).
	Tasks []TaskTally
}

// TaskTally is a count of models (and their downloads) of one task and
// library. Task is the Hub pipeline tag, else the task of the model's
// newest result (the harness infers one from config.json). Tested says
// whether those models have a result; LibraryRejected whether that result
// is preflight's "not a transformers model" (skipped, unsupported_library).
type TaskTally struct {
	Task            string
	Library         string
	Tested          bool
	LibraryRejected bool
	Models          int
	Downloads       int64
}

// FailureGroup is one root cause and what it blocks.
type FailureGroup struct {
	Signature     string
	FailureClass  compat.FailureClass
	Op            *string
	Models        int
	Downloads     int64
	DownloadShare float64  // of all known models' downloads
	Examples      []string // a few model ids
}

// RecordOutcome is what RecordResult did.
type RecordOutcome struct {
	ResultID int64
	Event    *compat.Event // nil when the status did not change
	// TrainEvent is the train verdict's regression or fix, nil when none
	// (compat.TrainChange).
	TrainEvent *compat.Event
	// Duplicate is true when the result had been recorded before (same
	// model, target, revision, runtime key and scan): nothing was written,
	// ResultID is the earlier row's and Event is nil.
	Duplicate bool
}

// Record is one result of one model, for SQLite.RecordResults.
type Record struct {
	ModelID string
	Result  compat.Result
}
