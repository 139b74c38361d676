package scan

import (
	"context"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Store is what a scan reads from and writes to the database: its own
// record, the models the Hub listed, and each model's results.
// *store.SQLite implements it. Every "not found" is an error wrapping
// store.ErrNotFound, never a zero value.
type Store interface {
	// StartScan opens the scan's record (status running) and returns its id.
	StartScan(ctx context.Context, s store.Scan) (int64, error)
	// UpdateScanProgress sets the scan's counters; store.ErrNotFound for
	// an unknown scan.
	UpdateScanProgress(ctx context.Context, id int64, planned, done, probed, unchanged int) error
	// FinishScan closes the scan's record; store.ErrNotFound for an
	// unknown scan.
	FinishScan(ctx context.Context, id int64, f store.ScanFinish) error
	// GetScan reads the scan's record back; store.ErrNotFound for an
	// unknown scan.
	GetScan(ctx context.Context, id int64) (store.Scan, error)
	// RenewScanOwner renews this process's claim on a running scan
	// (store.ErrNotOwner when another took it over).
	RenewScanOwner(ctx context.Context, id int64) error

	// UpsertModels stores what the Hub said about the listed models (and
	// the old ids it redirected from).
	UpsertModels(ctx context.Context, models []store.ModelUpsert) error
	// LatestResult is a model's newest result on target, to decide whether
	// to retest; store.ErrNotFound for an unknown model or none there.
	LatestResult(ctx context.Context, id string, target compat.Target) (compat.Result, error)
	// RecordResult stores a result and, when the status changed, an event.
	RecordResult(ctx context.Context, modelID string, r compat.Result) (store.RecordOutcome, error)
	// SetReadiness stores a model's readiness (kept against a listing
	// summary's for the same revision); store.ErrNotFound for an unknown
	// model.
	SetReadiness(ctx context.Context, u store.ReadinessUpdate) error
	// RecordFlaky writes a flaky event: a change seen once that a rerun did
	// not confirm; store.ErrNotFound for an unknown model.
	RecordFlaky(ctx context.Context, modelID string, seen compat.Result, kept compat.Status) error
	// ServingRegistry is what a vllm-torchtpu release declares it serves;
	// store.ErrNotFound when it was never read. PutServingRegistry keeps
	// it.
	ServingRegistry(ctx context.Context, version string) (serving.Registry, error)
	PutServingRegistry(ctx context.Context, r serving.Registry) error
	// PutServingResult keeps a model's newest measured serving verdict,
	// beside its results (never one of them); store.ErrNotFound for an
	// unknown model.
	PutServingResult(ctx context.Context, modelID string, m compat.ServingMeasured) error
}

var _ Store = (*store.SQLite)(nil)
