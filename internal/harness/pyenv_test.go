package harness

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestPyenvRefusesAnOldPython: scripts/pyenv.sh stops at once, in one line
// naming what to install, with an interpreter older than 3.11 (Ubuntu
// 22.04's python3, a TPU VM's) instead of failing deep inside pip.
func TestPyenvRefusesAnOldPython(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "python3.10")
	script := "#!/bin/sh\n" +
		`case "$2" in *print*) echo 3.10;; *version_info*) exit 1;; esac` + "\nexit 0\n"
	if err := os.WriteFile(old, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "pyenv.sh"))
	cmd.Env = append(os.Environ(), "PYTHON="+old, "SCANNER_CACHE_HOME="+filepath.Join(dir, "cache"))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("pyenv.sh with Python 3.10: %v, want exit status 1\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "needs Python >= 3.11") || !strings.Contains(lines[0], "is 3.10") ||
		!strings.Contains(lines[0], "apt-get install python3.11 python3.11-venv") {
		t.Errorf("pyenv.sh said %q; want one line naming Python >= 3.11 and what to install", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache", "venv-"+RequirementsHash())); !os.IsNotExist(err) {
		t.Errorf("an environment was started: %v", err)
	}
}
