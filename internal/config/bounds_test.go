package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateBounds: every range a flag checks accepts its own ends and
// refuses the values just past them, for each command that checks it.
func TestValidateBounds(t *testing.T) {
	home := map[string]string{"HOME": "/h"}
	worker := map[string]string{"HOME": "/h", "SCANNER_WORKER_TOKEN": "wt", "SCANNER_SERVER": "http://scanner:8080"}
	for _, tc := range []struct {
		name    string
		cmd     Command
		env     map[string]string
		args    []string
		wantErr string // "" = accepted
	}{
		{"serve --limit 1", CmdServe, home, []string{"--limit", "1"}, ""},
		{"serve --limit 0", CmdServe, home, []string{"--limit", "0"}, "--limit 0"},
		{"scan --limit 100000", CmdScan, home, []string{"--limit", "100000"}, ""},
		{"scan --limit 100001", CmdScan, home, []string{"--limit", "100001"}, "--limit 100001"},
		{"serve --devices 64", CmdServe, home, []string{"--devices", "64"}, ""},
		{"serve --devices 65", CmdServe, home, []string{"--devices", "65"}, "--devices 65"},
		{"probe --devices 64", CmdProbe, home, []string{"--devices", "64"}, ""},
		{"probe --devices 65", CmdProbe, home, []string{"--devices", "65"}, "--devices 65"},
		{"probe --devices 0", CmdProbe, home, []string{"--devices", "0"}, "--devices 0"},
		{"worker --devices 64", CmdWorker, worker, []string{"--devices", "64"}, ""},
		{"worker --devices 1", CmdWorker, worker, []string{"--devices", "1"}, ""},
		{"worker --devices 65", CmdWorker, worker, []string{"--devices", "65"}, "--devices 65"},
		{"serve --timeout 0", CmdServe, home, []string{"--timeout", "0s"}, "--timeout must be positive"},
		{"probe --timeout 0", CmdProbe, home, []string{"--timeout", "0s"}, "--timeout must be positive"},
		{"serve with a hub endpoint without a host", CmdServe, home, []string{"--hub-endpoint", "https://"}, "--hub-endpoint"},
		{"probe with a hub endpoint of another scheme", CmdProbe, home, []string{"--hub-endpoint", "ftp://hub"}, "--hub-endpoint"},
		{"worker --timeout 0", CmdWorker, worker, []string{"--timeout", "0s"}, "--timeout and --probe-grace must be positive"},
		{"worker --probe-grace 0", CmdWorker, worker, []string{"--probe-grace", "0s"}, "--timeout and --probe-grace must be positive"},
		{"worker on a plain-http hub mirror", CmdWorker, worker, []string{"--hub-endpoint", "http://mirror:1"}, ""},
		{"serve --lease-ttl at its least", CmdServe, home, []string{"--lease-ttl", "2s"}, ""},
		{"serve --lease-ttl under it", CmdServe, home, []string{"--lease-ttl", "1999ms"}, "--lease-ttl"},
		{"serve --request-rate 0 (no limit)", CmdServe, home, []string{"--request-rate", "0"}, ""},
		{"serve --request-queue 0 (requests off)", CmdServe, home, []string{"--request-queue", "0"}, ""},
		{"serve --request-queue at its most", CmdServe, home, []string{"--request-queue", "100000"}, ""},
		{"serve --request-queue over it", CmdServe, home, []string{"--request-queue", "100001"}, "--request-queue 100001"},
		{"serve --request-share at its most (no bound)", CmdServe, home, []string{"--request-share", "1"}, ""},
		{"serve --request-share a tenth", CmdServe, home, []string{"--request-share", "0.1"}, ""},
		{"serve --request-share 0", CmdServe, home, []string{"--request-share", "0"}, "--request-share 0"},
		{"serve --request-share over 1", CmdServe, home, []string{"--request-share", "1.5"}, "--request-share 1.5"},
		{"serve --request-share NaN", CmdServe, home, []string{"--request-share", "NaN"}, "--request-share NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse(tc.cmd, tc.args, envOf(tc.env), io.Discard)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}

// TestSizeBounds: a size is at least one byte and at most 1 PiB, both ends
// included.
func TestSizeBounds(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "1B": 1, "1024TiB": 1 << 50} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"2048TiB", "1024.001TiB", "0.99"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestHomeWithoutHOME: with HOME unset in the scanner's environment, the
// Hub cache is under the user's home directory as the system knows it.
func TestHomeWithoutHOME(t *testing.T) {
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		t.Fatalf("this process has no home directory to compare with: %v", err)
	}
	c, _, err := Parse(CmdServe, nil, envOf(map[string]string{}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(h, ".cache", "huggingface", "hub"); c.CacheDir != want {
		t.Errorf("cache dir %q, want %q", c.CacheDir, want)
	}
}

// TestReadCapped: a file of exactly the cap is read; one byte more is refused.
func TestReadCapped(t *testing.T) {
	dir := t.TempDir()
	at, over := filepath.Join(dir, "at"), filepath.Join(dir, "over")
	if err := os.WriteFile(at, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(over, []byte("0123456789a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readCapped(at, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("at the cap: %q, %v", b, err)
	}
	if _, err := readCapped(over, 10); err == nil || !strings.Contains(err.Error(), "over the 10-byte cap") {
		t.Errorf("over the cap: %v", err)
	}
}
