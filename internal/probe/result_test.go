package probe

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestFormatBytes: each unit starts at exactly its size, and a GiB figure
// keeps one decimal.
func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    uint64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1<<20 - 1, "1023 KiB"},
		{1 << 20, "1 MiB"},
		{256 << 20, "256 MiB"},
		{1<<30 - 1, "1023 MiB"},
		{1 << 30, "1.0 GiB"},
		{3 << 29, "1.5 GiB"},
		{80 << 30, "80.0 GiB"},
	}
	for _, tt := range tests {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestCleanHead: a continuation keeps printable text, spaces, newlines and
// tabs; C0 and C1 control characters and DEL go, whatever their neighbours
// (U+001F and U+00A0 sit just outside the removed ranges).
func TestCleanHead(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"a b\tc\nd", 100, "a b\tc\nd"},
		{"x\x00\x1fy\x7fz", 100, "xyz"},
		{"\u0080a\u009fb", 100, "ab"},
		{"\u007e\u00a0\u00ff", 100, "\u007e\u00a0\u00ff"},
		{" \x20", 100, "  "},
		{"abcdef", 3, "abc"},
		{"ab\u20ac", 4, "ab"}, // the euro sign (3 bytes) does not fit whole
		{"ab\xffc", 100, "ab\uFFFDc"},
	}
	for _, tt := range tests {
		if got := cleanHead(tt.in, tt.max); got != tt.want {
			t.Errorf("cleanHead(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// TestCleanTailCutRune: a rune cut at the start leaves at most three
// continuation bytes, which are dropped; a run of five cannot be one cut
// rune, so what is left of it shows as U+FFFD rather than vanish.
func TestCleanTailCutRune(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"\x80\x80\x80abc", 10, "abc"},
		{"\x80\x80\x80\x80\x80abc", 10, "\uFFFDabc"},
		{"\xf0\x9f\x98\x80ok", 5, "ok"}, // an emoji cut after its first byte
		{"plain", 5, "plain"},
	}
	for _, tt := range tests {
		if got := cleanTail([]byte(tt.in), tt.max); got != tt.want {
			t.Errorf("cleanTail(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// TestMergeLogTailBothLong: when the harness's tail and stderr differ and
// both are long, the harness's part is at most half, the scanner's stderr
// fills the rest, and the whole stays within LogTailMax.
func TestMergeLogTailBothLong(t *testing.T) {
	harness := "H" + strings.Repeat("h", LogTailMax)
	stderr := strings.Repeat("s", LogTailMax) + "S"
	got := mergeLogTail(harness, []byte(stderr))
	const sep = "\n--- harness stderr (scanner) ---\n"
	hp, sp, ok := strings.Cut(got, sep)
	if !ok {
		t.Fatalf("no separator in %q", tail(got))
	}
	if len(got) != LogTailMax {
		t.Errorf("%d bytes, want the whole budget, %d", len(got), LogTailMax)
	}
	if len(hp) != LogTailMax/2 || strings.Trim(hp, "h") != "" {
		t.Errorf("harness part: %d bytes, want the last %d of the harness's tail", len(hp), LogTailMax/2)
	}
	if want := LogTailMax - LogTailMax/2 - len(sep); len(sp) != want || !strings.HasSuffix(sp, "sS") {
		t.Errorf("stderr part: %d bytes ending %q, want the last %d of stderr", len(sp), sp[max(0, len(sp)-2):], want)
	}
}

// TestReadResultSizeCap: a result file of exactly MaxResultBytes is read;
// one byte more is refused, whatever it holds.
func TestReadResultSizeCap(t *testing.T) {
	body := `{"status": "pass", "task": "fill-mask"}`
	for _, tt := range []struct {
		size int
		ok   bool
	}{{MaxResultBytes, true}, {MaxResultBytes + 1, false}} {
		path := filepath.Join(t.TempDir(), "result.json")
		if err := os.WriteFile(path, []byte(body+strings.Repeat(" ", tt.size-len(body))), 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := readResult(path)
		if tt.ok && (err != nil || res.Status != compat.StatusPass || res.Task != "fill-mask") {
			t.Errorf("%d bytes: %+v, %v; want the result", tt.size, res, err)
		}
		if !tt.ok && (err == nil || !strings.Contains(err.Error(), "larger than")) {
			t.Errorf("%d bytes: error %v, want the size cap", tt.size, err)
		}
	}
}

// exitState runs a shell that ends with script (an exit, or a signal it
// sends itself) and returns how it ended.
func exitState(t *testing.T, script string) *os.ProcessState {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	_ = cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("sh -c %q did not run", script)
	}
	return cmd.ProcessState
}

// TestNoResultMessages: what the runner says of a harness that wrote no
// result names the data limit only when there is one, the peak memory of a
// SIGKILLed harness in its own unit, and a flood of stdout only beyond 1 MiB.
func TestNoResultMessages(t *testing.T) {
	run := func(memLimit uint64) *probeRun {
		r := &Runner{found: &envCache{}, digest: "sha256:000000000000", memLimit: memLimit}
		return &probeRun{r: r, req: Request{ModelID: "org/m", Revision: "abc", Target: compat.TargetCPU, Mode: compat.ModeArch},
			start: time.Now(), target: compat.TargetCPU}
	}
	oom := procOutcome{state: exitState(t, "exit 1"), stderrTail: []byte("stage=load\nMemoryError\n"), lastStage: compat.StageLoad}
	if msg := str(run(0).noResult(oom).Message); !strings.Contains(msg, "out of memory") || strings.Contains(msg, "data limit") {
		t.Errorf("no data limit: message %q names one", msg)
	}
	if msg := str(run(3 << 30).noResult(oom).Message); !strings.Contains(msg, "its data limit was 3.0 GiB") {
		t.Errorf("a 3 GiB data limit: message %q", msg)
	}

	killed := procOutcome{state: exitState(t, "kill -KILL $$"), rusage: &syscall.Rusage{Maxrss: 3 << 20}, lastStage: compat.StageLoad}
	res := run(0).noResult(killed)
	if msg := str(res.Message); res.Status != compat.StatusCrash || !strings.Contains(msg, "peak RSS 3.0 GiB") {
		t.Errorf("SIGKILL with a 3 GiB peak (getrusage counts KiB): %s, message %q", res.Status, msg)
	}

	for _, tt := range []struct {
		stdout int64
		want   string
	}{{1 << 20, ""}, {1<<20 + 1, "; it printed 1 MiB to stdout"}, {5 << 20, "; it printed 5 MiB to stdout"}} {
		out := procOutcome{state: exitState(t, "exit 3"), stdoutBytes: tt.stdout}
		msg := str(run(0).noResult(out).Message)
		if !strings.HasPrefix(msg, "harness wrote no result (exit status 3)") || strings.Contains(msg, "printed") != (tt.want != "") ||
			!strings.HasSuffix(msg, tt.want) {
			t.Errorf("%d bytes of stdout: message %q, want it to end %q", tt.stdout, msg, tt.want)
		}
	}
}

// TestNoResultCrashMessages: a harness killed by a signal is described with
// its signal, its stage and its last stderr line; one that exited is
// described by its exit status alone when it left no stderr; a death in the
// env stage is the environment's, with the same details.
func TestNoResultCrashMessages(t *testing.T) {
	run := func(target compat.Target) *probeRun {
		r := &Runner{found: &envCache{}, digest: "sha256:000000000000"}
		return &probeRun{r: r, req: Request{ModelID: "org/m", Revision: "abc", Target: target, Mode: compat.ModeArch},
			start: time.Now(), target: target}
	}
	segv := exitState(t, "kill -SEGV $$")
	tests := []struct {
		name string
		p    *probeRun
		out  procOutcome
		msg  string
		sig  string
	}{
		{"crash in a stage, with stderr", run(compat.TargetCPU),
			procOutcome{state: segv, lastStage: compat.StageForward, stderrTail: []byte("stage=forward\nFatal Python error\n\n")},
			"harness died of SIGSEGV during stage forward; last stderr: Fatal Python error", "crash:SIGSEGV"},
		{"crash before any stage, no stderr", run(compat.TargetCPU), procOutcome{state: segv},
			"harness died of SIGSEGV", "crash:SIGSEGV"},
		{"exit without stderr", run(compat.TargetCPU), procOutcome{state: exitState(t, "exit 2")},
			"harness wrote no result (exit status 2)", ""},
		{"exit with stderr", run(compat.TargetCPU), procOutcome{state: exitState(t, "exit 2"), stderrTail: []byte("ImportError: no torch\n")},
			"harness wrote no result (exit status 2); last stderr: ImportError: no torch", ""},
		{"env death on tpu, with stderr", run(compat.TargetTPU),
			procOutcome{state: exitState(t, "kill -ABRT $$"), lastStage: compat.StageEnv, stderrTail: []byte("F0000 pjrt_state.cc check failed\n")},
			"harness died of SIGABRT during stage env, before any model was loaded; last stderr: F0000 pjrt_state.cc check failed",
			"device_unavailable:SIGABRT"},
		{"env death on cpu, no stderr", run(compat.TargetCPU),
			procOutcome{state: exitState(t, "kill -ABRT $$"), lastStage: compat.StageEnv},
			"harness died of SIGABRT during stage env, before any model was loaded", "other:SIGABRT"},
	}
	for _, tt := range tests {
		res := tt.p.noResult(tt.out)
		if str(res.Message) != tt.msg || str(res.Signature) != tt.sig {
			t.Errorf("%s: message %q signature %q, want %q and %q", tt.name, str(res.Message), str(res.Signature), tt.msg, tt.sig)
		}
	}
}

// TestSignature: a signature names the stage when there is one.
func TestSignature(t *testing.T) {
	if got := signature("timeout", ""); got != "timeout" {
		t.Errorf("no stage: %q", got)
	}
	if got := signature("oom", "load"); got != "oom:load" {
		t.Errorf("stage load: %q", got)
	}
}

// TestCleanTailManyInvalidBytes: invalid bytes become U+FFFD, three bytes
// each, and the result is cut again to fit.
func TestCleanTailManyInvalidBytes(t *testing.T) {
	s := cleanTail(bytes.Repeat([]byte("\xffa"), 50), 100)
	if len(s) > 100 || !utf8.ValidString(s) || !strings.HasSuffix(s, "\uFFFDa") {
		t.Errorf("%d bytes, valid %v: %q", len(s), utf8.ValidString(s), s)
	}
}

// TestCompleteAndBase: of a harness's result the runner fills only what the
// harness left out (target, mode, task, a failure's class), and never
// relabels what it reported; a result the runner makes up names the mode
// only when the request resolved it.
func TestCompleteAndBase(t *testing.T) {
	run := func(target compat.Target, mode compat.Mode) *probeRun {
		r := &Runner{found: &envCache{}, digest: "sha256:000000000000"}
		return &probeRun{r: r, req: Request{ModelID: "org/m", Revision: "abc", Task: "text-generation", Target: compat.TargetAuto, Mode: mode},
			start: time.Now(), target: target}
	}
	// The cached auto resolution said tpu, but the harness ran on cpu: cpu it is.
	res := run(compat.TargetTPU, compat.ModeAuto).complete(compat.Result{Status: compat.StatusPass, Target: compat.TargetCPU, Task: "fill-mask"}, procOutcome{})
	if res.Target != compat.TargetCPU || res.Task != "fill-mask" || res.Mode != nil || res.FailureClass != nil {
		t.Errorf("harness said cpu, fill-mask, no mode: got %q, %q, mode %q, class %q", res.Target, res.Task, str(res.Mode), str(res.FailureClass))
	}
	if !strings.HasSuffix(res.Repro, "--target cpu --mode auto") {
		t.Errorf("repro %q", res.Repro)
	}
	res = run(compat.TargetTPU, compat.ModeArch).complete(compat.Result{Status: compat.StatusFail}, procOutcome{})
	if res.Target != compat.TargetTPU || res.Task != "text-generation" || str(res.Mode) != "arch" || str(res.FailureClass) != "other" {
		t.Errorf("harness left all out: got %q, %q, mode %q, class %q", res.Target, res.Task, str(res.Mode), str(res.FailureClass))
	}
	numerics := compat.ClassNumericsMismatch
	res = run(compat.TargetCPU, compat.ModeArch).complete(compat.Result{Status: compat.StatusFail, FailureClass: &numerics, Target: compat.TargetAuto}, procOutcome{})
	if str(res.FailureClass) != "numerics_mismatch" || res.Target != compat.TargetCPU {
		t.Errorf("a failure with its class, target unresolved: class %q target %q", str(res.FailureClass), res.Target)
	}

	for mode, want := range map[compat.Mode]string{compat.ModeAuto: "", compat.ModeArch: "arch", compat.ModeFull: "full"} {
		res := run(compat.TargetCPU, mode).scannerError(compat.StageEnv, "boom", nil)
		if str(res.Mode) != want || res.Target != compat.TargetCPU || str(res.Message) != "boom" {
			t.Errorf("runner's own result on a %s request: mode %q target %q message %q, want mode %q", mode, str(res.Mode), res.Target, str(res.Message), want)
		}
	}
}

// TestCheckSkippedAndUnresolved: a skipped result needs a reason (the
// runner accepts a result only when compat.Result.Validate does, once it
// filled in its part); an unresolved target or mode (auto) from the
// harness is dropped for the runner's own.
func TestCheckSkippedAndUnresolved(t *testing.T) {
	p := &probeRun{req: Request{Target: compat.TargetAuto, Mode: compat.ModeAuto}}
	accepting := &probeRun{r: &Runner{digest: "sha256:000000000000"}, req: p.req, start: time.Now(), target: compat.TargetCPU}
	gated := compat.ReasonGated
	if _, err := accepting.accept(compat.Result{Status: compat.StatusSkipped, Reason: &gated}, procOutcome{}); err != nil {
		t.Errorf("skipped with a reason: %v", err)
	}
	if _, err := accepting.accept(compat.Result{Status: compat.StatusSkipped}, procOutcome{}); err == nil {
		t.Error("skipped without a reason: accepted")
	}
	auto := compat.ModeAuto
	res := compat.Result{Status: compat.StatusPass, Target: compat.TargetAuto, Mode: &auto}
	if err := p.check(&res); err != nil || res.Target != "" || res.Mode != nil {
		t.Errorf("unresolved target and mode: %v, target %q mode %q, want both dropped", err, res.Target, str(res.Mode))
	}
	res = compat.Result{Status: compat.StatusPass, Target: compat.TargetCPU}
	if err := p.check(&res); err != nil || res.Target != compat.TargetCPU {
		t.Errorf("target cpu: %v, target %q, want it kept", err, res.Target)
	}
}

// The runner keeps a harness's MFU/MBU only for a passing accelerator run
// and a share in (0, 1].
func TestEfficiencyShare(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	pass := func(target compat.Target) compat.Result {
		return compat.Result{Status: compat.StatusPass, Target: target}
	}
	tests := []struct {
		res  compat.Result
		in   *float64
		want *float64
	}{
		{pass(compat.TargetTPU), v(0.42), v(0.42)},
		{pass(compat.TargetCUDA), v(1), v(1)},
		{pass(compat.TargetCPU), v(0.42), nil},
		{compat.Result{Status: compat.StatusFail, Target: compat.TargetTPU}, v(0.42), nil},
		{pass(compat.TargetTPU), v(1.5), nil},
		{pass(compat.TargetTPU), v(0), nil},
		{pass(compat.TargetTPU), v(-0.1), nil},
		{pass(compat.TargetTPU), v(math.NaN()), nil},
		{pass(compat.TargetTPU), nil, nil},
	}
	for _, tt := range tests {
		got := efficiencyShare(tt.res, tt.in)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%s %s %v: got %v, want %v", tt.res.Status, tt.res.Target, tt.in, got, tt.want)
		}
	}
}
