package harness

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// FitTable is fit.json: the constants of the probe fit formula, whether
// one smoke test's weights fit the memory budget where it runs. The
// scanner's plan (scan.ProbeNeed, scan.Plan) applies the formula with them,
// and the harness reads the same file (it is extracted with the harness),
// so the two cannot disagree. The file's "about" says what each constant
// means. (Whether a model can be served on a TPU generation is another
// question: readiness.MinDevices.)
type FitTable struct {
	FitFactor     float64 `json:"fit_factor"`
	FitSlackBytes int64   `json:"fit_slack_bytes"`
	// TrainStateFactor is a trained copy's bytes over its weights' bytes:
	// the weights, their gradients and AdamW's two moments (4).
	TrainStateFactor int64                       `json:"train_state_factor"`
	DtypeBytes       map[string]int64            `json:"dtype_bytes"`
	Targets          map[compat.Target]FitTarget `json:"targets"`
	// CheckpointBytesPerParam bounds a safetensors checkpoint's bytes per
	// parameter (16-bit to float32): its parameter count from its size.
	CheckpointBytesPerParam struct {
		Min int64 `json:"min"`
		Max int64 `json:"max"`
	} `json:"checkpoint_bytes_per_param"`
	// Examples are worked cases of the formula, checked by the Go and the
	// Python tests alike.
	Examples []FitExample `json:"examples"`
}

// FitTarget is how a model runs on one target: the dtype the harness runs
// it in and how many copies of it the target's memory budget holds.
type FitTarget struct {
	Dtype  string `json:"dtype"`
	Copies int64  `json:"copies"`
}

// FitExample is one worked case: need(Params, Target) = Need.
type FitExample struct {
	Params int64         `json:"params"`
	Target compat.Target `json:"target"`
	Need   int64         `json:"need"`
}

//go:embed fit.json
var fitJSON []byte

// Fit is the embedded table. It is part of the build: a table that does not
// parse fails TestFitTable, and panics at start-up rather than plan wrong.
var Fit = must(parseFit(fitJSON))

func parseFit(data []byte) (FitTable, error) {
	var t FitTable
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("harness: fit.json: %w", err)
	}
	var errs []error
	if t.FitFactor < 1 || t.FitSlackBytes < 0 {
		errs = append(errs, fmt.Errorf("fit_factor %v (want >= 1) or fit_slack_bytes %d (want >= 0)", t.FitFactor, t.FitSlackBytes))
	}
	if t.TrainStateFactor < 1 {
		errs = append(errs, fmt.Errorf("train_state_factor %d (want >= 1)", t.TrainStateFactor))
	}
	if b := t.CheckpointBytesPerParam; b.Min < 1 || b.Max < b.Min {
		errs = append(errs, fmt.Errorf("checkpoint_bytes_per_param %+v: want 1 <= min <= max", b))
	}
	for _, target := range compat.Targets {
		ft, ok := t.Targets[target]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("no entry for target %s", target))
		case t.DtypeBytes[ft.Dtype] < 1 || ft.Copies < 1:
			errs = append(errs, fmt.Errorf("target %s: dtype %q (bytes %d), copies %d", target, ft.Dtype, t.DtypeBytes[ft.Dtype], ft.Copies))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return t, fmt.Errorf("harness: fit.json: %w", err)
	}
	return t, nil
}
