package harness

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

// TestHandRunDefaultsAreTheScanners: harness.py run by hand defaults
// --target to what the scanner's configuration does (config.Defaults), and
// has no --mode default at all: the scanner's plan always passes full or
// arch, and the harness chooses no mode itself (issue 24), so --mode is
// required and auto is not among its choices.
func TestHandRunDefaultsAreTheScanners(t *testing.T) {
	src, err := files.ReadFile(Entry)
	if err != nil {
		t.Fatal(err)
	}
	d := config.Defaults()
	m := regexp.MustCompile(`add_argument\("--target",[^\n]*?default="([a-z]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("harness.py: no default for --target")
	}
	if got := string(m[1]); got != string(d.Target) {
		t.Errorf("harness.py --target defaults to %q, the scanner to %q", got, d.Target)
	}
	mode := regexp.MustCompile(`(?s)add_argument\("--mode",(.*?)\)\n`).FindSubmatch(src)
	if mode == nil {
		t.Fatal("harness.py: no --mode argument")
	}
	if bytes.Contains(mode[1], []byte("default=")) || bytes.Contains(mode[1], []byte(`"auto"`)) {
		t.Errorf("harness.py --mode has a default or an auto choice: %s", mode[1])
	}
	if !bytes.Contains(mode[1], []byte(`choices=("full", "arch")`)) {
		t.Errorf("harness.py --mode choices are not full and arch: %s", mode[1])
	}
	if !bytes.Contains(src, []byte(`p.error("--mode is required`)) {
		t.Error("harness.py does not refuse a run without --mode")
	}
}
