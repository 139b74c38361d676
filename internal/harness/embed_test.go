package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestExtract checks that the runner gets every file the harness
// reads next to harness.py: its modules and its data (the shared OOM table).
func TestExtract(t *testing.T) {
	dir, script, err := Extract(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if script != filepath.Join(dir, "harness.py") {
		t.Errorf("script %q, want harness.py in %q", script, dir)
	}
	if fi, err := os.Stat(dir); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o700 {
		t.Errorf("directory %q has mode %v, want 0700", dir, fi.Mode().Perm())
	}
	for _, name := range []string{"harness.py", "harness_failures.py", "harness_tasks.py", "harness_testing.py",
		"oom_markers.json"} {
		want, err := files.ReadFile(name)
		if err != nil {
			t.Errorf("%s is not embedded: %v", name, err)
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: extracted %d bytes (%v), want the embedded %d", name, len(got), err, len(want))
		}
	}
}
