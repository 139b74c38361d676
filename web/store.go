package web

import (
	"context"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Store is what the web server reads from the database; it writes nothing.
// *store.SQLite implements it; tests wrap one to inject failures. Every
// "not found" is an error wrapping store.ErrNotFound, never a zero value.
type Store interface {
	// Changed is the time of the last data change; the caches of pages,
	// lists and badges are keyed by it.
	Changed(ctx context.Context) (time.Time, error)
	// CheckFile is nil while the database file is the one the store
	// opened; its error wraps store.ErrGone once the file was deleted or
	// replaced (every write then fails: /readyz says so).
	CheckFile() error

	// ListModels returns one page of the table, the API list or the CSV,
	// and the next page's cursor ("" after the last). Its error wraps
	// store.ErrInvalid for a query it refuses (unknown sort, status or
	// target; a cursor it did not make).
	ListModels(ctx context.Context, q store.ModelQuery) ([]compat.Model, string, error)
	// ExportModels is ListModels for an export's walk through every page:
	// the same answer, read without growing the process's memory.
	ExportModels(ctx context.Context, q store.ModelQuery) ([]compat.Model, string, error)
	// GetModel is the model known as id (an alias too) with its current
	// result on target ("" = any); store.ErrNotFound for an unknown model.
	GetModel(ctx context.Context, id string, target compat.Target) (compat.Model, error)
	// ServingRegistry is what a vllm-torchtpu release declares it serves;
	// store.ErrNotFound when no scan has read it.
	ServingRegistry(ctx context.Context, version string) (serving.Registry, error)
	// ServingResults are the models' newest measured serving verdicts,
	// by model id; a model never measured is absent.
	ServingResults(ctx context.Context, ids []string) (map[string]compat.ServingMeasured, error)
	// CurrentResults is a model's current result on each target it has
	// one on; store.ErrNotFound for an unknown model.
	CurrentResults(ctx context.Context, id string) ([]compat.Result, error)
	// History is a model's results, newest first (target "" = all);
	// store.ErrNotFound for an unknown model.
	History(ctx context.Context, id string, target compat.Target, limit int) ([]compat.Result, error)
	// ModelEvents is a model's status changes, newest first;
	// store.ErrNotFound for an unknown model.
	ModelEvents(ctx context.Context, id string, limit int) ([]compat.Event, error)

	// Summary is the table's headline on target ("" = any).
	Summary(ctx context.Context, target compat.Target) (store.Summary, error)
	// Failures groups the current failing results on target by root
	// cause, most downloads first; empty when none.
	Failures(ctx context.Context, target compat.Target, limit int) ([]store.FailureGroup, error)
	// Events is the feed: status changes, newest first.
	Events(ctx context.Context, limit int) ([]compat.Event, error)

	// Runtimes lists the runtimes with results on target ("" = all), newest
	// first; empty when none; store.ErrInvalid for an unknown target.
	Runtimes(ctx context.Context, target compat.Target) ([]store.RuntimeStats, error)
	// Compare is a page of the comparison of two runtimes: a page of each
	// list (or of the one list a cursor continues) and the whole
	// comparison's headline; store.ErrNotFound for a runtime without
	// results, store.ErrInvalid for a cursor it did not make for them.
	Compare(ctx context.Context, q store.CompareQuery) (store.ComparePage, error)
	// ComparePages is Compare of each query, read together (the feed's
	// comparisons): the same pages, in order.
	ComparePages(ctx context.Context, qs []store.CompareQuery) ([]store.ComparePage, error)

	// ListScans is the newest scans first; GetScan one scan,
	// store.ErrNotFound for an unknown id.
	ListScans(ctx context.Context, limit int) ([]store.Scan, error)
	GetScan(ctx context.Context, id int64) (store.Scan, error)

	// KernelTables lists the kept TorchTPU kernel tables, oldest read
	// first; empty when none.
	KernelTables(ctx context.Context) ([]compat.KernelTable, error)
	// MissingOps is the fix list of the predictions judged against table
	// ("" = the newest kept), with the table it used.
	MissingOps(ctx context.Context, table string) ([]store.MissingOp, string, error)
	// PredictionHits is how the predictions held against tpu results.
	PredictionHits(ctx context.Context) (store.PredictionScore, error)
	// PredictedTally sums the current predictions (the headline's
	// predicted figures).
	PredictedTally(ctx context.Context) (store.Predicted, error)
}

var _ Store = (*store.SQLite)(nil)
