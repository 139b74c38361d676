package testenv

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is -update: the golden files are rewritten rather than compared.
var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// Golden compares got with testdata/name (in the test's package folder),
// or writes it there under `go test -update`. A missing file and a
// difference both name the command that rewrites it.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run '%s' -update in the package's folder to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n got: %s\nwant: %s\n(run go test -run '%s' -update if the change is intended)", path, got, want, t.Name())
	}
}
