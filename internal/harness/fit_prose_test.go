package harness

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestFitFiguresInProseAreTheTables: where the docs, the pages or the
// code's comments state the fit formula's figures ("× 1.2 + 512 MiB",
// "B/4 to B/2 parameters", "three copies on cpu", "2 + 4 bytes a
// parameter"), they are fit.json's; a change of the table fails here until
// the prose says the same.
func TestFitFiguresInProseAreTheTables(t *testing.T) {
	formula := regexp.MustCompile(`× ([0-9.]+) \+ ([0-9]+) MiB`)
	checkpoint := regexp.MustCompile(`B/([0-9]+) to B/([0-9]+) parameters`)
	copies := regexp.MustCompile(`([a-z0-9]+)\s+and\s+(one|two|three|four)\s+cop(?:y|ies)\s+on\s+(cpu|an\s+accelerator)`)
	perParam := regexp.MustCompile(`([0-9]+) \+ ([0-9]+) bytes a parameter`)
	words := map[string]int{"one": 1, "two": 2, "three": 3, "four": 4}
	cpu, tpu := Fit.Targets["cpu"], Fit.Targets["tpu"]
	seen := map[string]int{}
	for path, text := range testenv.Sources(t, ".md", ".html", ".go", ".py") {
		for _, m := range formula.FindAllStringSubmatch(text, -1) {
			seen["formula"]++
			f, _ := strconv.ParseFloat(m[1], 64)
			mib, _ := strconv.ParseInt(m[2], 10, 64)
			if f != Fit.FitFactor || mib<<20 != Fit.FitSlackBytes {
				t.Errorf("%s: %q, fit.json says × %g + %d MiB", path, m[0], Fit.FitFactor, Fit.FitSlackBytes>>20)
			}
		}
		for _, m := range checkpoint.FindAllStringSubmatch(text, -1) {
			seen["checkpoint"]++
			lo, _ := strconv.ParseInt(m[1], 10, 64)
			hi, _ := strconv.ParseInt(m[2], 10, 64)
			if lo != Fit.CheckpointBytesPerParam.Max || hi != Fit.CheckpointBytesPerParam.Min {
				t.Errorf("%s: %q, fit.json says B/%d to B/%d", path, m[0], Fit.CheckpointBytesPerParam.Max, Fit.CheckpointBytesPerParam.Min)
			}
		}
		for _, m := range copies.FindAllStringSubmatch(text, -1) {
			seen["copies"]++
			want := cpu
			if m[3] != "cpu" {
				want = tpu
			}
			if m[1] != want.Dtype || int64(words[m[2]]) != want.Copies {
				t.Errorf("%s: %q, fit.json says %s and %d", path, m[0], want.Dtype, want.Copies)
			}
		}
		for _, m := range perParam.FindAllStringSubmatch(text, -1) {
			seen["per parameter"]++
			run, ref := m[1], m[2]
			if run != strconv.FormatInt(Fit.DtypeBytes[cpu.Dtype], 10) || ref != strconv.FormatInt(Fit.DtypeBytes["float32"], 10) ||
				Fit.DtypeBytes[cpu.Dtype]*cpu.Copies != Fit.DtypeBytes[cpu.Dtype]+Fit.DtypeBytes["float32"] {
				t.Errorf("%s: %q, fit.json: %s is %d bytes, float32 %d, %d copies on cpu", path, m[0], cpu.Dtype,
					Fit.DtypeBytes[cpu.Dtype], Fit.DtypeBytes["float32"], cpu.Copies)
			}
		}
	}
	for _, what := range []string{"formula", "checkpoint", "copies", "per parameter"} {
		if seen[what] == 0 {
			t.Errorf("no prose states the fit's %s: docs/configuration.md did", what)
		}
	}
}
