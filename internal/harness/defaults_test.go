package harness

import (
	"regexp"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

// TestHandRunDefaultsAreTheScanners: harness.py run by hand defaults
// --target and --mode to what the scanner's configuration does
// (config.Defaults); the scanner always passes both.
func TestHandRunDefaultsAreTheScanners(t *testing.T) {
	src, err := files.ReadFile(Entry)
	if err != nil {
		t.Fatal(err)
	}
	d := config.Defaults()
	for flag, want := range map[string]string{"--target": string(d.Target), "--mode": string(d.Mode)} {
		m := regexp.MustCompile(`add_argument\("` + flag + `",[^\n]*?default="([a-z]+)"`).FindSubmatch(src)
		if m == nil {
			t.Errorf("harness.py: no default for %s", flag)
			continue
		}
		if got := string(m[1]); got != want {
			t.Errorf("harness.py %s defaults to %q, the scanner to %q", flag, got, want)
		}
	}
}
