// Package store keeps the scanner's state in SQLite: models, scans, results
// and events (status changes). All SQL of the project lives in this package.
//
// Not-found lookups return an error that wraps ErrNotFound, never (zero, nil).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// ErrNotFound is wrapped by every lookup that finds nothing.
var ErrNotFound = errors.New("not found")

// ErrBadCursor is returned for a cursor this store did not produce.
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
	ID         int64      `json:"id"`
	Trigger    string     `json:"trigger"` // "schedule", "manual", "cli", "startup"
	Status     ScanStatus `json:"status"`
	Target     string     `json:"target"`
	Params     string     `json:"params"` // the scan's options, JSON
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Planned    int        `json:"planned"`   // models listed for this scan
	Done       int        `json:"done"`      // models with a recorded outcome
	Probed     int        `json:"probed"`    // of which a probe really ran
	Unchanged  int        `json:"unchanged"` // of which nothing changed (no retest)
	Error      string     `json:"error,omitempty"`
	// DeviceBusy is the time probes held the device ÷ the scan's wall time;
	// nil until the scan finishes.
	DeviceBusy *float64       `json:"device_busy_fraction"`
	Runtime    compat.Runtime `json:"runtime"`
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
	Task   string
	Org    string        // the id's part before "/"; "" for all
	Target compat.Target // whose result is "current"; "" = the most recent on any target
	Sort   string        // "downloads" (default), "likes", "status", "tokens_per_s", "tested_at", "id"
	Desc   *bool         // nil = the sort's natural direction
	Limit  int           // capped by the store at 1000; 0 = 50
	Cursor string        // opaque, from the previous page's next cursor
}

// Summary is the site's headline.
type Summary struct {
	Models           int                   `json:"models"`
	Tested           int                   `json:"tested"`
	Counts           map[compat.Status]int `json:"counts"`
	PassRate         *float64              `json:"pass_rate"` // pass ÷ tested (not skipped/error/untested); nil when none
	WeightedPassRate *float64              `json:"download_weighted_pass_rate"`
	LastScan         *Scan                 `json:"last_scan"`
	Runtime          *compat.Runtime       `json:"runtime"` // of the most recent result
}

// FailureGroup is one root cause and what it blocks.
type FailureGroup struct {
	Signature     string              `json:"signature"`
	FailureClass  compat.FailureClass `json:"failure_class"`
	Op            *string             `json:"op"`
	Models        int                 `json:"models"`
	Downloads     int64               `json:"downloads"`
	DownloadShare float64             `json:"download_share"` // of all known models' downloads
	Examples      []string            `json:"examples"`       // a few model ids
}

// RecordOutcome is what RecordResult did.
type RecordOutcome struct {
	ResultID int64
	Event    *compat.Event // nil when the status did not change
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

// Store is the scanner's persistent state. Every method is safe for
// concurrent use; writes are serialised by SQLite (one writer, WAL readers).
type Store interface {
	// UpsertModels inserts or updates models (and their aliases).
	UpsertModels(ctx context.Context, models []ModelUpsert) error
	// GetModel returns a model by id or alias, with its current result on
	// target ("" = most recent on any target). ErrNotFound if unknown.
	GetModel(ctx context.Context, id string, target compat.Target) (compat.Model, error)
	// ListModels returns one page and the cursor of the next ("" at the end).
	ListModels(ctx context.Context, q ModelQuery) ([]compat.Model, string, error)
	// CurrentResults returns the latest result of a model on each target it has one.
	CurrentResults(ctx context.Context, id string) ([]compat.Result, error)
	// History returns a model's results, newest first (target "" = all).
	History(ctx context.Context, id string, target compat.Target, limit int) ([]compat.Result, error)
	// LatestResult is the newest result of a model on a target; ErrNotFound if none.
	LatestResult(ctx context.Context, id string, target compat.Target) (compat.Result, error)

	// RecordResult stores a result in one transaction, updates the model's
	// current result on that target, and writes an event when the status
	// changed (or it is the first result on the target).
	RecordResult(ctx context.Context, modelID string, r compat.Result) (RecordOutcome, error)
	// RecordFlaky writes a flaky event: a change seen once that a rerun did not confirm.
	RecordFlaky(ctx context.Context, modelID string, seen compat.Result, kept compat.Status) error

	// StartScan opens a scan record with status running.
	StartScan(ctx context.Context, s Scan) (int64, error)
	// UpdateScanProgress sets the planned/done/probed/unchanged counters.
	UpdateScanProgress(ctx context.Context, id int64, planned, done, probed, unchanged int) error
	// FinishScan closes a scan.
	FinishScan(ctx context.Context, id int64, f ScanFinish) error
	// GetScan returns one scan; ErrNotFound if unknown.
	GetScan(ctx context.Context, id int64) (Scan, error)
	// ListScans returns the newest scans first.
	ListScans(ctx context.Context, limit int) ([]Scan, error)
	// MarkInterrupted marks interrupted every running scan whose process is
	// gone (called at start-up, after a crash) and returns how many it marked.
	MarkInterrupted(ctx context.Context) (int, error)

	// Summary is the headline for target ("" = current results on any target).
	Summary(ctx context.Context, target compat.Target) (Summary, error)
	// Failures groups current failing results by signature, most downloads first.
	Failures(ctx context.Context, target compat.Target, limit int) ([]FailureGroup, error)
	// Runtimes lists the runtimes with results on a target ("" = all), newest first.
	Runtimes(ctx context.Context, target compat.Target) ([]RuntimeStats, error)
	// RuntimeResults returns each model's newest result on one runtime.
	RuntimeResults(ctx context.Context, ref compat.RuntimeRef) ([]compare.Entry, error)
	// Events returns status changes, newest first.
	Events(ctx context.Context, limit int) ([]compat.Event, error)
	// ModelEvents returns one model's status changes, newest first.
	ModelEvents(ctx context.Context, id string, limit int) ([]compat.Event, error)
	// Changed reports the last data change time, for ETags and caches.
	Changed(ctx context.Context) (time.Time, error)

	// Backup writes a consistent copy of the database to path while in use.
	Backup(ctx context.Context, path string) error
	// IntegrityCheck runs PRAGMA integrity_check and returns its first line ("ok").
	IntegrityCheck(ctx context.Context) (string, error)
	Close() error
}
