package harness

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestFitTable: fit.json parses into a table for every target, a
// broken one is refused, and the harness takes its constants from the
// file rather than keeping its own.
func TestFitTable(t *testing.T) {
	got, err := parseFit(fitJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range compat.Targets {
		ft := got.Targets[target]
		if got.DtypeBytes[ft.Dtype] == 0 || ft.Copies == 0 {
			t.Errorf("%s: %+v", target, ft)
		}
	}
	if len(got.Examples) == 0 {
		t.Error("no worked examples for the Go and Python tests")
	}
	broken := strings.Replace(string(fitJSON), `"cuda":`, `"gpu":`, 1)
	if _, err := parseFit([]byte(broken)); err == nil || !strings.Contains(err.Error(), "cuda") {
		t.Errorf("a table without cuda: %v, want an error naming it", err)
	}

	// harness_host.py reads the table for every stage (harness.py, harness_config.py, harness_compare.py)
	src, err := files.ReadFile("harness_host.py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `"fit.json"`) {
		t.Error("harness_host.py does not read fit.json")
	}
	py, err := fs.Glob(files, "*.py")
	if err != nil || len(py) == 0 {
		t.Fatalf("no harness sources: %v", err)
	}
	for _, name := range py {
		src, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if own := regexp.MustCompile(`(?m)^\s*FIT_[A-Z_]+\s*=\s*[0-9]`).Find(src); own != nil {
			t.Errorf("%s keeps a fit constant of its own: %q", name, own)
		}
	}
}
