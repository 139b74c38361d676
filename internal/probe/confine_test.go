package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// requireLandlock skips, loudly (on stderr, which `go test` shows even
// without -v), where the kernel has no Landlock: confinement cannot be
// tested there, and the scanner runs the harness unconfined.
func requireLandlock(t *testing.T) int {
	t.Helper()
	abi := landlockABI()
	if abi <= 0 {
		msg := "LANDLOCK UNSUPPORTED by this kernel: the harness's confinement is NOT tested here (and a scan runs it unconfined)"
		fmt.Fprintf(os.Stderr, "\n*** %s: %s ***\n\n", t.Name(), msg)
		t.Skip(msg)
	}
	return abi
}

// hubCache lays out one model in the Hub cache layout under a new folder,
// with a file next to the cache (what a token file would be) and returns
// the snapshot folder and the cache root.
func hubCache(t *testing.T) (snapshot, cache string) {
	t.Helper()
	cache = filepath.Join(t.TempDir(), "hub")
	repo := filepath.Join(cache, "models--standin--escape")
	snapshot = filepath.Join(repo, "snapshots", strings.Repeat("a", 40))
	for _, d := range []string{filepath.Join(repo, "blobs"), snapshot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	blob := filepath.Join(repo, "blobs", strings.Repeat("b", 40))
	if err := os.WriteFile(blob, []byte(`{"model_type": "llama"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "blobs", filepath.Base(blob)), filepath.Join(snapshot, "config.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "token"), []byte("hf_secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return snapshot, cache
}

// TestHarnessIsConfined runs a stand-in harness that tries to write into
// the model's snapshot, its blobs and the cache around them, to plant a
// file in /tmp, to read a file next to the cache and to signal the
// scanner: each is refused, while its own folders stay writable and the
// snapshot readable.
func TestHarnessIsConfined(t *testing.T) {
	abi := requireLandlock(t)
	t.Parallel()
	r := standinRunner(t, nil)
	snapshot, cache := hubCache(t)
	req := standinRequest(t, "escape")
	req.SnapshotDir = snapshot
	res := r.Probe(context.Background(), req)
	var got map[string]string
	if err := json.Unmarshal([]byte(str(res.Message)), &got); err != nil {
		t.Fatalf("status %s, message %q: %v", res.Status, str(res.Message), err)
	}
	want := map[string]string{
		"read_snapshot_file":   "ok",
		"append_snapshot_file": "EACCES",
		"create_in_snapshot":   "EACCES",
		"create_in_blobs":      "EACCES",
		"create_in_cache":      "EACCES",
		"read_next_to_cache":   "EACCES",
		"create_in_tmp":        "EACCES",
		"create_in_TMPDIR":     "ok",
		"create_in_HOME":       "ok",
		"write_dev_null":       "ok",
		"signal_scanner":       "EPERM",
	}
	if abi < 6 { // signals are scoped from ABI 6 on
		want["signal_scanner"] = "ok"
	}
	if len(got) != len(want) {
		t.Errorf("the stand-in reported %d attempts, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	// And nothing was changed, whatever the stand-in believes.
	if b, _ := os.ReadFile(filepath.Join(snapshot, "config.json")); string(b) != `{"model_type": "llama"}` {
		t.Errorf("the blob was changed: %q", b)
	}
	planted, _ := filepath.Glob(filepath.Join(cache, "*", "*", "planted*"))
	more, _ := filepath.Glob(filepath.Join(snapshot, "planted*"))
	tmp, _ := filepath.Glob("/tmp/standin-planted-*")
	if files := slices.Concat(planted, more, tmp); len(files) > 0 {
		t.Errorf("the stand-in planted %v", files)
		for _, f := range tmp {
			os.Remove(f)
		}
	}
}

// TestPolicy: what one run may touch, independently of the kernel.
func TestPolicy(t *testing.T) {
	inductor := filepath.Join(t.TempDir(), "inductor")
	c := &confiner{python: python3, codeDir: "/code", log: quietLogger(), exe: python3, interp: []string{"/venv"}}
	c.once.Do(func() {}) // the interpreter's paths are given
	wd := workDir{root: "/run/probe-1"}
	snapshot := "/cache/models--a--b/snapshots/0123"
	p := c.policy(context.Background(), wd, snapshot, []string{"PATH=/usr/bin:relative", "TORCHINDUCTOR_CACHE_DIR=" + inductor})
	for _, tc := range []struct {
		list []string
		path string
		in   bool
	}{
		{p.rw, "/run/probe-1", true},
		{p.rw, "/dev/shm", true},
		{p.rw, inductor, true},
		{p.ro, snapshot, true},
		{p.ro, "/cache/models--a--b/blobs", true},
		{p.ro, "/code", true},
		{p.ro, "/venv", true},
		{p.ro, "/usr", true},
		{p.ro, "/proc", true},
		{p.ro, "relative", false},
		{p.ro, "/cache", false},
		{p.rw, "/cache/models--a--b/blobs", false},
		{p.rw, snapshot, false},
		{p.rw, "/tmp", false},
		{p.devices, "/dev/null", true},
	} {
		if slices.Contains(tc.list, tc.path) != tc.in {
			t.Errorf("%s in the list: %v, want %v", tc.path, !tc.in, tc.in)
		}
	}
	if fi, err := os.Stat(inductor); err != nil || !fi.IsDir() {
		t.Errorf("the inductor cache folder was not created (a rule needs it): %v", err)
	}
}

// TestInterpreterPaths: the confiner asks the interpreter itself for its
// executable and the folders it reads (its standard library is one), and
// falls back to the interpreter and its installation folder when the
// answer is unusable (not JSON, or a relative executable).
func TestInterpreterPaths(t *testing.T) {
	if python3 == "" {
		testenv.Missing(t, "no python3 on this host")
	}
	out, err := exec.Command(python3, "-I", "-c", `import sys, sysconfig; print(sys.executable); print(sysconfig.get_paths()["stdlib"])`).Output()
	if err != nil {
		t.Fatal(err)
	}
	exe, stdlib, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	c := &confiner{python: python3, log: quietLogger()}
	gotExe, paths := c.interpreter(context.Background())
	if gotExe != exe || !slices.Contains(paths, stdlib) {
		t.Errorf("interpreter() = %q, %v; want %q and its standard library %q", gotExe, paths, exe, stdlib)
	}

	dir := t.TempDir()
	for name, answer := range map[string]string{
		"relative": `{"exe": "python", "paths": ["/from-the-answer"]}`,
		"garbage":  `not json`,
	} {
		fake := filepath.Join(dir, name, "bin", "python")
		if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '"+answer+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		c := &confiner{python: fake, log: quietLogger()}
		gotExe, paths := c.interpreter(context.Background())
		if gotExe != fake || slices.Contains(paths, "/from-the-answer") || !slices.Contains(paths, filepath.Join(dir, name)) {
			t.Errorf("%s answer: interpreter() = %q, %v; want %q and its installation folder", name, gotExe, paths, fake)
		}
	}
}

// TestLogConfinement: the start-up line says whether harnesses run
// confined, and whether signals are scoped (Landlock ABI 6 and later).
func TestLogConfinement(t *testing.T) {
	logged := func(off bool) string {
		var buf bytes.Buffer
		logConfinement(slog.New(slog.NewTextHandler(&buf, nil)), off)
		return buf.String()
	}
	if got := logged(true); !strings.Contains(got, "Landlock is off") {
		t.Errorf("off: logged %q", got)
	}
	var want string
	switch abi := landlockABI(); {
	case abi == 0:
		want = "this kernel has no Landlock"
	case abi < 6:
		want = fmt.Sprintf("confined by Landlock ABI %d: writes only to its run folder; signals are not scoped", abi)
	default:
		want = fmt.Sprintf("confined by Landlock ABI %d: writes only to its run folder; signals outside the run are refused", abi)
	}
	if got := logged(false); !strings.Contains(got, want) {
		t.Errorf("on: logged %q, want %q", got, want)
	}
}

// TestLandlockABI: the ABI the runner reports is the kernel's, 0 where the
// kernel has none.
func TestLandlockABI(t *testing.T) {
	want, err := ll.LandlockGetABIVersion()
	if err != nil {
		want = 0
	}
	if got := landlockABI(); got != want {
		t.Errorf("landlockABI() = %d, want the kernel's %d", got, want)
	}
}

// TestTPUHost: a TPU host is known by its accelerator nodes (/dev/accel*,
// /dev/vfio), not by any device node.
func TestTPUHost(t *testing.T) {
	for _, tt := range []struct {
		devices []string
		want    bool
	}{
		{devRW, false},
		{append(slices.Clone(devRW), "/dev/nvidia0", "/dev/nvidia-caps"), false},
		{append(slices.Clone(devRW), "/dev/accel0"), true},
		{[]string{"/dev/vfio"}, true},
		{[]string{"/dev/vfio/0"}, false},
		{nil, false},
	} {
		if got := tpuHost(tt.devices); got != tt.want {
			t.Errorf("tpuHost(%v) = %v, want %v", tt.devices, got, tt.want)
		}
	}
}

// TestConfinedStartsCloseTheRuleset: each confined start closes its
// Landlock ruleset; a scanner that runs thousands of probes leaks no file
// descriptors. Not parallel: it counts this process's descriptors.
func TestConfinedStartsCloseTheRuleset(t *testing.T) {
	requireLandlock(t)
	fds := func() int {
		d, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(d)
	}
	spec := procSpec{python: "/bin/true", dir: t.TempDir(), grace: time.Second, policy: &policy{ro: systemRO, devices: devRW}}
	runProc(context.Background(), spec) // the first start may open what stays open (the Go runtime's own)
	before := fds()
	for range 3 {
		if out := runProc(context.Background(), spec); out.startErr != nil || !out.state.Success() {
			t.Fatalf("confined /bin/true: %v, %v", out.startErr, out.state)
		}
	}
	if after := fds(); after != before {
		t.Errorf("%d open descriptors after three confined starts, %d before", after, before)
	}
}
