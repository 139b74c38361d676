package scan

import (
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Progress is reported after every model that got an outcome.
type Progress struct {
	ScanID    int64
	Planned   int
	Done      int
	Probed    int
	Unchanged int
	ModelID   string
	Result    *compat.Result // nil when the model was unchanged
}

// Hooks let a caller observe scans (metrics, progress bars, the service's
// state). Every field is optional.
type Hooks struct {
	Progress   func(Progress)
	ProbeDone  func(r compat.Result, held time.Duration)
	ScanDone   func(s store.Scan)
	HubFailure func(err error) // the Hub could not be reached (nil: it could)
	// Locked: the scan holds the database's scan lock (its path) and runs
	// now; a Run that another process's scan holds off never calls it.
	Locked func(lockPath string)
}

// then is h followed by o: each event reaches h's hook, then o's.
func (h Hooks) then(o Hooks) Hooks {
	return Hooks{
		Progress:   chain(h.Progress, o.Progress),
		ScanDone:   chain(h.ScanDone, o.ScanDone),
		HubFailure: chain(h.HubFailure, o.HubFailure),
		Locked:     chain(h.Locked, o.Locked),
		ProbeDone: func(r compat.Result, held time.Duration) {
			if h.ProbeDone != nil {
				h.ProbeDone(r, held)
			}
			if o.ProbeDone != nil {
				o.ProbeDone(r, held)
			}
		},
	}
}

func chain[T any](a, b func(T)) func(T) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(v T) { a(v); b(v) }
}
