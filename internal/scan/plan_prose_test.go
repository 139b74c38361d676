package scan

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestBudgetFiguresInProseAreThePlans: where the docs state the cpu
// budget's figures ("less torch's own 1.5 GiB"), they are the plan's
// (torchOverhead); a change of the constant fails here until the prose
// says the same.
func TestBudgetFiguresInProseAreThePlans(t *testing.T) {
	torch := regexp.MustCompile(`torch's\s+own\s+([0-9.]+)\s+GiB`)
	n := 0
	for path, text := range testenv.Sources(t, ".md", ".html") {
		for _, m := range torch.FindAllStringSubmatch(text, -1) {
			n++
			if gib, _ := strconv.ParseFloat(m[1], 64); int64(gib*(1<<30)) != torchOverhead {
				t.Errorf("%s: %q, the plan's torchOverhead is %g GiB", path, m[0], float64(torchOverhead)/(1<<30))
			}
		}
	}
	if n == 0 {
		t.Error("no prose states torch's share: docs/configuration.md did")
	}
}
