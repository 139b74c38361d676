package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

func TestUsageAndVersion(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 2, "Usage:"},
		{[]string{"help"}, 0, "scanner serve"},
		{[]string{"version"}, 0, "scanner dev"},
		{[]string{"version", ""}, 0, "scanner dev"}, // an empty argument is not a flag
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"scan", "--limit", "0"}, 2, "--limit"},
		{[]string{"probe"}, 2, "exactly one MODEL"},
		{[]string{"check", "gpt2"}, 2, "--server is required"},
		{[]string{"scan", "-h"}, 0, "-hub-endpoint"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String()+errOut.String(), tt.contains) {
				t.Errorf("output lacks %q:\n%s%s", tt.contains, out.String(), errOut.String())
			}
		})
	}
}

// probeArgs makes a stand-in scan's arguments (standinArgs) those of
// `scanner probe id`, then extra: probe takes no --limit.
func probeArgs(scan []string, id string, extra ...string) []string {
	out := []string{"probe", id}
	for i := 1; i < len(scan); i++ {
		if scan[i] == "--limit" {
			i++
			continue
		}
		out = append(out, scan[i])
	}
	return append(out, extra...)
}

// TestProbeCommand runs `scanner probe MODEL --json` against the fake Hub:
// one probe, printed, and no database left behind.
func TestProbeCommand(t *testing.T) {
	h := hubtest.New(t, llamaRepos("probe/model")...)
	dir := t.TempDir()
	kept := probeArgs(standinArgs(t, h, filepath.Join(dir, "never.db"), filepath.Join(dir, "hub")), "probe/model", "--json")
	var out, errOut bytes.Buffer
	if code := runWithEnv(t, kept, &out, &errOut); code != 0 {
		t.Fatalf("probe exited %d:\n%s", code, errOut.String())
	}
	var r compat.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("not a Result: %v\n%s", err, out.String())
	}
	if r.Status != compat.StatusPass || r.Target != compat.TargetCPU || r.Revision != h.SHA("probe/model") ||
		!strings.HasPrefix(r.Repro, "scanner probe probe/model --revision ") {
		t.Errorf("result %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "never.db")); err == nil {
		t.Error("probe created a database")
	}

	// --revision pins the commit; an unknown one is a clear skip.
	out.Reset()
	errOut.Reset()
	code := runWithEnv(t, append(kept, "--revision", "0123456789abcdef0123456789abcdef01234567"), &out, &errOut)
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || code != 1 || r.Status != compat.StatusSkipped || str(r.Reason) != "not_found" {
		t.Errorf("unknown revision: exit %d, %+v %v\n%s", code, r, err, errOut.String())
	}
}

// TestBackupCommand copies a database and checks the copy is whole.
func TestBackupCommand(t *testing.T) {
	h := hubtest.New(t, llamaRepos("backup/a", "backup/b")...)
	dir := t.TempDir()
	db := filepath.Join(dir, "scanner.db")
	var out, errOut bytes.Buffer
	if code := runWithEnv(t, standinArgs(t, h, db, filepath.Join(dir, "hub")), &out, &errOut); code != 0 {
		t.Fatalf("scan: %d\n%s", code, errOut.String())
	}
	copyPath := filepath.Join(dir, "copy.db")
	if code := run([]string{"backup", copyPath, "--db", db}, &out, &errOut); code != 0 {
		t.Fatalf("backup exited %d:\n%s", code, errOut.String())
	}
	st, err := store.Open(context.Background(), copyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ok, err := st.IntegrityCheck(context.Background()); ok != "ok" || err != nil {
		t.Errorf("copy integrity %q %v", ok, err)
	}
	if r, err := st.LatestResult(context.Background(), "backup/b", compat.TargetCPU); err != nil || r.Status != compat.StatusPass {
		t.Errorf("copy lacks results: %v %v", r.Status, err)
	}
}

// TestNewLogger: the configured level and format, an unknown level read
// as info; on a terminal only warnings unless -v.
func TestNewLogger(t *testing.T) {
	for _, tc := range []struct {
		level, format string
		tty, verbose  bool
		want          string // the levels logged, of debug, info, warn
	}{
		{"debug", "text", false, false, "DEBUG INFO WARN"},
		{"info", "text", false, false, "INFO WARN"},
		{"warn", "text", false, false, "WARN"},
		{"bogus", "text", false, false, "INFO WARN"},
		{"debug", "json", false, false, "DEBUG INFO WARN"},
		{"warn", "json", false, false, "WARN"},
		{"info", "text", true, false, "WARN"},
		{"debug", "text", true, true, "DEBUG INFO WARN"},
	} {
		var b bytes.Buffer
		l := newLogger(config.Config{LogLevel: tc.level, LogFormat: tc.format, Verbose: tc.verbose}, &b, tc.tty)
		l.Debug("d", "model", "org/\x1bm")
		l.Info("i")
		l.Warn("w")
		var got []string
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			if tc.format == "json" {
				var rec struct{ Level string }
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Errorf("%+v: not a JSON line: %q", tc, line)
				}
				got = append(got, rec.Level)
			} else if _, lv, ok := strings.Cut(line, " level="); ok {
				got = append(got, strings.Fields(lv)[0])
			} else {
				t.Errorf("%+v: not a text line: %q", tc, line)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%+v: logged %q, want %q", tc, got, tc.want)
		}
		if strings.Contains(b.String(), "\x1b") {
			t.Errorf("%+v: an escape on the terminal: %q", tc, b.String())
		}
	}
}

// TestWorkerArguments: `scanner worker` takes flags only; with flags only
// it runs (here it stops at once: its health listener's port is invalid).
func TestWorkerArguments(t *testing.T) {
	t.Setenv("SCANNER_WORKER_TOKEN", "t")
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		// The invalid port ends a worker that would run by mistake.
		{[]string{"worker", "extra", "--server", "http://127.0.0.1:1", "--addr", "127.0.0.1:99999"}, 2, "scanner worker: takes no arguments"},
		{[]string{"worker", "--server", "http://127.0.0.1:1", "--addr", "127.0.0.1:99999"}, 1, "scanner: worker health listener 127.0.0.1:99999"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.contains) {
			t.Errorf("%q: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.contains, errOut.String())
		}
	}
}
