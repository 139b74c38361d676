package sweep

import (
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestTheListIsGooglesSweep(t *testing.T) {
	f, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	// models.csv at the named commit: 200 models over 43 pipeline tags (issue 41 counts the same).
	if len(f.Models) != 200 {
		t.Errorf("%d models, want 200", len(f.Models))
	}
	tasks := map[string]bool{}
	for _, m := range f.Models {
		tasks[m.Task] = true
	}
	if len(tasks) != 43 {
		t.Errorf("%d tasks, want 43", len(tasks))
	}
	if f.Source.Repository != "google-pytorch/torch_tpu" ||
		f.Source.Models.Path != "examples/benchmarks/e2e/harness/gen_utils/models.csv" ||
		len(f.Source.Models.Commit) != 40 || len(f.Source.SkippedRunModes.Commit) != 40 {
		t.Errorf("source %+v", f.Source)
	}
	// Entries read by hand from gen_utils.py: the task leaders the issue names, and the kinds of skip.
	want := map[string][2]string{
		"google/gemma-4-12B-it":            {"any-to-any", "compiled eager_default eager_optimized|compiled eager_default eager_optimized"},
		"laion/clap-htsat-fused":           {"audio-classification", "compiled eager_default eager_optimized|compiled eager_default eager_optimized"},
		"BAAI/AltCLIP":                     {"zero-shot-image-classification", "eager_default eager_optimized|compiled eager_default eager_optimized"},
		"answerdotai/ModernBERT-base":      {"fill-mask", "compiled|compiled"},
		"meta-llama/Llama-3.2-1B-Instruct": {"text-generation", "|"},
		"kha-white/manga-ocr-base":         {"image-to-text", "compiled eager_default eager_optimized|"},
	}
	for _, m := range f.Models {
		w, ok := want[m.ModelID]
		if !ok {
			continue
		}
		delete(want, m.ModelID)
		got := strings.Join(m.SkippedRunModes.Inference, " ") + "|" + strings.Join(m.SkippedRunModes.Train, " ")
		if m.Task != w[0] || got != w[1] {
			t.Errorf("%s: task %q skips %q, want %q %q", m.ModelID, m.Task, got, w[0], w[1])
		}
	}
	if len(want) != 0 {
		t.Errorf("not in the list: %v", want)
	}
}

func TestLoadRefusesABrokenList(t *testing.T) {
	good := File{Source: Source{Repository: "r", Models: FileRef{Commit: "c"}, SkippedRunModes: FileRef{Commit: "c"}},
		RunModes: []string{"compiled"}}
	cases := map[string]func(*File){
		"no source": func(f *File) { f.Source = Source{} },
		"listed twice": func(f *File) {
			f.Models = append(f.Models, Model{ModelID: "a/b", Task: "t"}, Model{ModelID: "a/b", Task: "t"})
		},
		"no task": func(f *File) { f.Models = append(f.Models, Model{ModelID: "a/b"}) },
		"unknown mode": func(f *File) {
			m := Model{ModelID: "a/b", Task: "t"}
			m.SkippedRunModes.Train = []string{"eager_fast"}
			f.Models = append(f.Models, m)
		},
	}
	if err := good.check(); err != nil {
		t.Fatalf("good list refused: %v", err)
	}
	for name, mutate := range cases {
		f := good
		f.Models = nil
		mutate(&f)
		if err := f.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMeasure(t *testing.T) {
	f := File{Models: []Model{
		{ModelID: "a/pass", Task: "t1"}, {ModelID: "a/fail", Task: "t1"}, {ModelID: "a/oom", Task: "t2"},
		{ModelID: "a/skip", Task: "t2"}, {ModelID: "a/error", Task: "t2"}, {ModelID: "a/none", Task: "t3"},
	}}
	sig := "harness_inputs:config:vision_config"
	results := map[string]*compat.Result{
		"a/pass":  {Status: compat.StatusPass},
		"a/fail":  {Status: compat.StatusFail, Stage: compat.Ptr(compat.StageForward)},
		"a/oom":   {Status: compat.StatusOOM},
		"a/skip":  {Status: compat.StatusSkipped},
		"a/error": {Status: compat.StatusError, Stage: compat.Ptr(compat.StageConfig), Signature: &sig},
	}
	cov := Measure(f, func(id string) *compat.Result { return results[id] })
	if got := cov.Counts; got != (Counts{Models: 6, Verdicts: 3, Skipped: 1, ScannerError: 1, Untested: 1}) {
		t.Errorf("counts %+v", got)
	}
	if s := cov.Share(); s == nil || *s != 0.5 {
		t.Errorf("share %v", s)
	}
	wantTasks := []TaskCounts{
		{"t1", Counts{Models: 2, Verdicts: 2}},
		{"t2", Counts{Models: 3, Verdicts: 1, Skipped: 1, ScannerError: 1}},
		{"t3", Counts{Models: 1, Untested: 1}},
	}
	if len(cov.Tasks) != len(wantTasks) {
		t.Fatalf("tasks %+v", cov.Tasks)
	}
	for i, w := range wantTasks {
		if cov.Tasks[i] != w {
			t.Errorf("task %d: %+v, want %+v", i, cov.Tasks[i], w)
		}
	}
	if len(cov.Gaps) != 2 || cov.Gaps[0].ModelID != "a/error" || cov.Gaps[0].Outcome != ScannerError ||
		cov.Gaps[0].Signature == nil || *cov.Gaps[0].Signature != sig || cov.Gaps[1].ModelID != "a/none" ||
		cov.Gaps[1].Outcome != Untested || cov.Gaps[1].Status != nil {
		t.Errorf("gaps %+v", cov.Gaps)
	}
	if (Counts{}).Share() != nil {
		t.Error("share of nothing is not null")
	}
}

func TestOutcomeOfEveryStatus(t *testing.T) {
	want := map[compat.Status]Outcome{
		compat.StatusPass: Verdict, compat.StatusFail: Verdict, compat.StatusOOM: Verdict, compat.StatusTimeout: Verdict,
		compat.StatusCrash: Verdict, compat.StatusSkipped: Skipped, compat.StatusError: ScannerError,
		compat.StatusUntested: Untested,
	}
	for _, s := range compat.Statuses {
		w, ok := want[s]
		if !ok {
			t.Errorf("status %q has no expected outcome", s)
			continue
		}
		if got := OutcomeOf(&compat.Result{Status: s}); got != w {
			t.Errorf("%q: %q, want %q", s, got, w)
		}
	}
	if OutcomeOf(nil) != Untested {
		t.Error("no result is not untested")
	}
}
