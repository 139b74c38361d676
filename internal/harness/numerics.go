package harness

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// NumericsTable is numerics.json: how the harness holds a device
// output to the float32 CPU reference (harness_numerics.py applies it, the
// methodology page prints it). The file's "about" says what each bound
// means.
type NumericsTable struct {
	Dtypes map[string]DtypeBounds `json:"dtypes"`
	Kinds  map[string]OutputKind  `json:"kinds"`
}

// DtypeBounds are the bounds for a device dtype.
type DtypeBounds struct {
	Atol     float64 `json:"atol"`      // max_abs_diff <= Atol + Rtol * max|reference|
	Rtol     float64 `json:"rtol"`      //
	Top1     float64 `json:"top1"`      // top-1 agreement over the decisive positions, at least
	TieRtol  float64 `json:"tie_rtol"`  // decisive: best leads runner-up by > Atol + TieRtol * max|reference|
	RelError float64 `json:"rel_error"` // ||device - reference|| / ||reference||, at most
	Cosine   float64 `json:"cosine"`    // cosine similarity of every embedding vector, at least
	// The train step: |loss - reference loss| <= TrainLossAtol +
	// TrainLossRtol * |reference loss| at each of its three steps.
	TrainLossAtol float64 `json:"train_loss_atol"`
	TrainLossRtol float64 `json:"train_loss_rtol"`
}

// OutputKind is a kind of model output and the checks it gets.
type OutputKind struct {
	Checks []string `json:"checks"`
	About  string   `json:"about"`
}

// NumericsDtypes are the device dtypes the table must have, in the order
// the methodology page shows them.
var NumericsDtypes = []string{"float32", "float16", "bfloat16"}

// numericsChecks are the checks the harness knows.
var numericsChecks = []string{"max_abs", "top1", "rel_error", "cosine"}

//go:embed numerics.json
var numericsJSON []byte

// Numerics is the embedded table; one that does not parse fails
// TestNumericsTable and panics at start-up.
var Numerics = must(parseNumerics(numericsJSON))

func parseNumerics(data []byte) (NumericsTable, error) {
	var t NumericsTable
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("harness: numerics.json: %w", err)
	}
	var errs []error
	for _, d := range NumericsDtypes {
		b, ok := t.Dtypes[d]
		if !ok || b.Atol <= 0 || b.Rtol <= 0 || b.Top1 <= 0 || b.Top1 > 1 || b.RelError <= 0 || b.Cosine <= 0 || b.Cosine > 1 ||
			b.TrainLossAtol <= 0 || b.TrainLossRtol <= 0 {
			errs = append(errs, fmt.Errorf("dtype %s: missing or out of range: %+v", d, b))
		}
	}
	if len(t.Kinds) == 0 {
		errs = append(errs, errors.New("no kinds"))
	}
	for name, k := range t.Kinds {
		if !slices.Contains(k.Checks, "max_abs") {
			errs = append(errs, fmt.Errorf("kind %s: every kind checks max_abs", name))
		}
		for _, c := range k.Checks {
			if !slices.Contains(numericsChecks, c) {
				errs = append(errs, fmt.Errorf("kind %s: unknown check %q", name, c))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return t, fmt.Errorf("harness: numerics.json: %w", err)
	}
	return t, nil
}
