package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDefaultPython: the cached environment's interpreter once
// scripts/pyenv.sh marked it complete, python3 from PATH before.
func TestDefaultPython(t *testing.T) {
	home := t.TempDir()
	if got := DefaultPython(home); got != "python3" {
		t.Errorf("no environment: %q, want python3", got)
	}
	venv := filepath.Join(home, "venv-"+RequirementsHash())
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := DefaultPython(home); got != "python3" {
		t.Errorf("half-built environment: %q, want python3", got)
	}
	if err := os.WriteFile(filepath.Join(venv, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := DefaultPython(home), filepath.Join(venv, "bin", "python"); got != want {
		t.Errorf("complete environment: %q, want %q", got, want)
	}
}
