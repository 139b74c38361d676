// Package sweep is Google's own TorchTPU Hugging Face sweep (sweep.json: the
// models, tasks and skipped run modes of torch_tpu's e2e benchmark list, with
// the repository, paths and commits it was read from) and the scanner's
// coverage of it: how many of its models get a real verdict, per task.
//
// The coverage is a pure function of the list and each model's current
// result on a target (Measure); the web layer reads the results from the
// store, so the figure is recomputed whenever the data changes.
package sweep

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

//go:embed sweep.json
var raw []byte

// File is sweep.json. Its "about" says what each part means.
type File struct {
	About  string `json:"about"`
	Source Source `json:"source"`
	// RunModes are the run modes Google's generated benchmarks know.
	RunModes []string `json:"run_modes"`
	Models   []Model  `json:"models"`
}

// Source names where the list was read: the repository, and each file's
// path and commit.
type Source struct {
	Repository      string  `json:"repository"`
	ReadFrom        string  `json:"read_from"`
	Models          FileRef `json:"models"`
	SkippedRunModes FileRef `json:"skipped_run_modes"`
}

// FileRef is one file of the source repository at one commit.
type FileRef struct {
	Path   string `json:"path"`
	Commit string `json:"commit"`
}

// Model is one entry of the sweep.
type Model struct {
	ModelID   string `json:"model_id"`
	Task      string `json:"task"` // the pipeline tag models.csv gives it
	ModelType string `json:"model_type"`
	// SkippedRunModes are the run modes Google skips for the model's
	// inference and train benchmarks (empty: none).
	SkippedRunModes struct {
		Inference []string `json:"inference"`
		Train     []string `json:"train"`
	} `json:"skipped_run_modes"`
}

// Load parses sweep.json and checks it: every model named once, with a task,
// and only the run modes the file lists.
func Load() (File, error) {
	var f File
	if err := json.Unmarshal(raw, &f); err != nil {
		return File{}, fmt.Errorf("sweep: sweep.json: %w", err)
	}
	return f, f.check()
}

func (f File) check() error {
	if f.Source.Repository == "" || f.Source.Models.Commit == "" || f.Source.SkippedRunModes.Commit == "" {
		return fmt.Errorf("sweep: sweep.json names no source repository or commit")
	}
	modes := map[string]bool{}
	for _, m := range f.RunModes {
		modes[m] = true
	}
	seen := map[string]bool{}
	for _, m := range f.Models {
		if m.ModelID == "" || m.Task == "" {
			return fmt.Errorf("sweep: sweep.json: a model without an id or a task: %+v", m)
		}
		if seen[m.ModelID] {
			return fmt.Errorf("sweep: sweep.json: %s is listed twice", m.ModelID)
		}
		seen[m.ModelID] = true
		for _, mode := range append(append([]string{}, m.SkippedRunModes.Inference...), m.SkippedRunModes.Train...) {
			if !modes[mode] {
				return fmt.Errorf("sweep: sweep.json: %s skips run mode %q, which run_modes does not list", m.ModelID, mode)
			}
		}
	}
	return nil
}

// Outcome is what the scanner has for one model of the sweep.
type Outcome string

// The outcomes, one per model.
const (
	// Verdict: pass, or a status held against the model (compat.Status.IsVerdict).
	Verdict Outcome = "verdict"
	// Skipped: an honest skip, with its reason (not on TPU-ready terms, too large, ...).
	Skipped Outcome = "skipped"
	// ScannerError: the scanner's own inability (status error): its gap, not the model's.
	ScannerError Outcome = "scanner_error"
	// Untested: no result on the target yet (not listed, not probed).
	Untested Outcome = "untested"
)

// OutcomeOf is the outcome of a model's current result (nil: none).
func OutcomeOf(r *compat.Result) Outcome {
	switch {
	case r == nil || r.Status == compat.StatusUntested:
		return Untested
	case r.Status.IsVerdict():
		return Verdict
	case r.Status == compat.StatusSkipped:
		return Skipped
	default:
		return ScannerError
	}
}

// Counts tallies the outcomes of a set of models.
type Counts struct {
	Models       int `json:"models"`
	Verdicts     int `json:"verdicts"`
	Skipped      int `json:"skipped"`
	ScannerError int `json:"scanner_errors"`
	Untested     int `json:"untested"`
}

// Share is verdicts ÷ models; nil when there are no models.
func (c Counts) Share() *float64 {
	if c.Models == 0 {
		return nil
	}
	v := float64(c.Verdicts) / float64(c.Models)
	return &v
}

func (c *Counts) add(o Outcome) {
	c.Models++
	switch o {
	case Verdict:
		c.Verdicts++
	case Skipped:
		c.Skipped++
	case ScannerError:
		c.ScannerError++
	default:
		c.Untested++
	}
}

// TaskCounts is the coverage of one task of the sweep.
type TaskCounts struct {
	Task string `json:"task"`
	Counts
}

// Gap is one model the scanner gives no verdict: its own error, or no
// result yet.
type Gap struct {
	ModelID   string         `json:"model_id"`
	Task      string         `json:"task"`
	Outcome   Outcome        `json:"outcome"`
	Stage     *compat.Stage  `json:"stage"`
	Signature *string        `json:"signature"`
	Status    *compat.Status `json:"status"`
}

// Coverage is the scanner's coverage of the sweep on one target.
type Coverage struct {
	Counts
	Tasks []TaskCounts `json:"tasks"` // by task name
	// Gaps are the models with a scanner error or no result, in list order.
	Gaps []Gap `json:"gaps"`
}

// Measure is the coverage of f's models given each one's current result
// (result returns nil for a model without one).
func Measure(f File, result func(modelID string) *compat.Result) Coverage {
	var cov Coverage
	byTask := map[string]*TaskCounts{}
	for _, m := range f.Models {
		r := result(m.ModelID)
		o := OutcomeOf(r)
		cov.add(o)
		tc := byTask[m.Task]
		if tc == nil {
			tc = &TaskCounts{Task: m.Task}
			byTask[m.Task] = tc
		}
		tc.add(o)
		if o == ScannerError || o == Untested {
			g := Gap{ModelID: m.ModelID, Task: m.Task, Outcome: o}
			if r != nil {
				g.Stage, g.Signature, g.Status = r.Stage, r.Signature, compat.Ptr(r.Status)
			}
			cov.Gaps = append(cov.Gaps, g)
		}
	}
	for _, tc := range byTask {
		cov.Tasks = append(cov.Tasks, *tc)
	}
	sort.Slice(cov.Tasks, func(i, j int) bool { return cov.Tasks[i].Task < cov.Tasks[j].Task })
	return cov
}
