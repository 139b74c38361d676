package readiness

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestHeadroomInProseIsTheConstant: where the docs, the pages or the
// code's comments state min_devices' headroom ("with 10% headroom"), the
// figure is ServingHeadroomPct (the pages and hints render it from the
// constant; prose cannot, so it is checked here).
func TestHeadroomInProseIsTheConstant(t *testing.T) {
	pct := regexp.MustCompile(`([0-9]+)\s*%\s+headroom`)
	n := 0
	for path, text := range testenv.Sources(t, ".md", ".html", ".go", ".py") {
		for _, m := range pct.FindAllStringSubmatch(text, -1) {
			n++
			if m[1] != strconv.Itoa(ServingHeadroomPct) {
				t.Errorf("%s: %q, ServingHeadroomPct is %d", path, m[0], ServingHeadroomPct)
			}
		}
	}
	if n < 2 {
		t.Errorf("only %d statements of the headroom: docs/sharding.md and docs/serving.md made two", n)
	}
}
