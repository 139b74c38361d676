package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// python3 is the real path of the system's python3 (not a pyenv shim,
// which needs a HOME the scrubbed environment does not have); "" if none.
var python3 string

func TestMain(m *testing.M) {
	if out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output(); err == nil {
		python3 = strings.TrimSpace(string(out))
	}
	if os.Getenv(subreaperVar) != "" {
		os.Exit(subreaperProcess())
	}
	if tag := os.Getenv(scannerTagVar); tag != "" {
		os.Exit(miniScanner(tag, os.Getenv(scannerDirVar)))
	}
	os.Exit(m.Run())
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// standinRunner is a Runner that runs testdata/standin.py with python3.
func standinRunner(t *testing.T, mod func(*Config)) *Runner {
	t.Helper()
	if python3 == "" {
		testenv.Missing(t, "no python3 on this host: the runner tests need one to run the stand-in harness")
	}
	cfg := Config{
		Python:        python3,
		Script:        filepath.Join("testdata", "standin.py"),
		Timeout:       30 * time.Second,
		Grace:         300 * time.Millisecond,
		MemLimitBytes: 256 << 20,
		TempDir:       t.TempDir(),
		Logger:        quietLogger(),
	}
	if mod != nil {
		mod(&cfg)
	}
	r, err := NewRunner(cfg)
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func standinRequest(t *testing.T, behaviour string) Request {
	return Request{
		ModelID:     "standin/" + behaviour,
		Revision:    "0123456789abcdef0123456789abcdef01234567",
		SnapshotDir: t.TempDir(),
		Task:        "text-generation",
		Target:      compat.TargetCPU,
		Mode:        compat.ModeArch,
	}
}

func str[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func TestProbeStandins(t *testing.T) {
	tests := []struct {
		behaviour string
		target    compat.Target
		status    compat.Status
		stage     compat.Stage
		class     compat.FailureClass
		msg       string // substring of the message
		check     func(t *testing.T, res compat.Result)
	}{
		{behaviour: "pass", status: compat.StatusPass, stage: compat.StageGenerate, check: func(t *testing.T, res compat.Result) {
			var m struct {
				Argv  []string
				Cwd   string
				Path0 string
			}
			if err := json.Unmarshal([]byte(str(res.Message)), &m); err != nil {
				t.Fatalf("message: %v", err)
			}
			argv := strings.Join(m.Argv, " ")
			for _, want := range []string{"--model-id standin/pass", "--target cpu", "--mode arch", "--task text-generation",
				"--revision 0123456789abcdef0123456789abcdef01234567", "--seq-len 64", "--no-compile"} {
				if !strings.Contains(argv, want) {
					t.Errorf("argv %q lacks %q", argv, want)
				}
			}
			if strings.Contains(argv, "--layers") {
				t.Errorf("argv %q passes --layers though the request left it zero", argv)
			}
			if !strings.HasSuffix(m.Cwd, "/cwd") || !strings.HasSuffix(m.Path0, "testdata") {
				t.Errorf("cwd %q, sys.path[0] %q: want a fresh cwd and the script's directory first", m.Cwd, m.Path0)
			}
			if res.Revision != "0123456789abcdef0123456789abcdef01234567" {
				t.Errorf("revision %q: the runner's, not the harness's, must win", res.Revision)
			}
			if res.TestedAt.IsZero() || res.TestedAt.Location() != time.UTC || res.DurationS <= 0 {
				t.Errorf("tested_at %v, duration_s %v: want set, UTC", res.TestedAt, res.DurationS)
			}
			if want := "scanner probe standin/pass --revision 0123456789abcdef0123456789abcdef01234567 --target cpu --mode arch"; res.Repro != want {
				t.Errorf("repro %q, want %q", res.Repro, want)
			}
			if res.Mode == nil || *res.Mode != compat.ModeArch || res.Task != "text-generation" {
				t.Errorf("mode %v task %q", res.Mode, res.Task)
			}
			if !strings.HasPrefix(res.Runtime.Harness, "sha256:") || res.Runtime.Torch != "0.0-standin" {
				t.Errorf("runtime %+v: want the harness's versions and the script's digest", res.Runtime)
			}
			if res.Metrics.LoadS == nil || res.Metrics.ForwardMS != nil {
				t.Errorf("metrics %+v: measured ones set, unmeasured ones null", res.Metrics)
			}
		}},
		{behaviour: "segv", status: compat.StatusCrash, stage: compat.StageForward, class: compat.ClassCrash, msg: "SIGSEGV"},
		{behaviour: "abort", status: compat.StatusCrash, stage: compat.StageCompile, class: compat.ClassCrash, msg: "SIGABRT"},
		{behaviour: "sigkill", status: compat.StatusCrash, stage: compat.StageLoad, class: compat.ClassCrash, msg: "out-of-memory killer"},
		{behaviour: "oom", status: compat.StatusOOM, stage: compat.StageLoad, class: compat.ClassOOM, msg: "MemoryError"},
		{behaviour: "oom-noresult", status: compat.StatusOOM, stage: compat.StageLoad, class: compat.ClassOOM, msg: "data limit was 256 MiB"},
		{behaviour: "exit0", status: compat.StatusError, stage: compat.StageEnv, class: compat.ClassOther, msg: "harness wrote no result (exit status 0)"},
		{behaviour: "badstatus", status: compat.StatusError, class: compat.ClassOther, msg: `status: "passed"`},
		{behaviour: "untested", status: compat.StatusError, class: compat.ClassOther, msg: `status: "untested" is not a result status`},
		{behaviour: "badstage", status: compat.StatusError, class: compat.ClassOther, msg: `stage: "warmup"`},
		{behaviour: "claimtpu", status: compat.StatusError, class: compat.ClassOther, msg: "target tpu on a cpu request", check: func(t *testing.T, res compat.Result) {
			if res.Target != compat.TargetCPU {
				t.Errorf("target %q: a cpu request's result is never labelled tpu", res.Target)
			}
		}},
		{behaviour: "wrongmode", status: compat.StatusError, class: compat.ClassOther, msg: "mode full on a arch request"},
		{behaviour: "huge", status: compat.StatusError, class: compat.ClassOther, msg: "larger than"},
		{behaviour: "notjson", status: compat.StatusError, class: compat.ClassOther, msg: "invalid result: parse"},
		{behaviour: "nan", status: compat.StatusFail, stage: compat.StageNumerics, class: compat.ClassNumericsMismatch, check: func(t *testing.T, res compat.Result) {
			if res.Metrics.MaxAbsDiff != nil || res.Metrics.ForwardMS != nil || res.Metrics.LoadS == nil {
				t.Errorf("metrics %+v: NaN and Infinity must become null, the rest kept", res.Metrics)
			}
		}},
		{behaviour: "segv-after", status: compat.StatusPass, stage: compat.StageGenerate},
		{behaviour: "tpu", target: compat.TargetTPU, status: compat.StatusError, stage: compat.StageEnv, class: compat.ClassDeviceUnavail, msg: "no TPU", check: func(t *testing.T, res compat.Result) {
			if res.Target != compat.TargetTPU || res.Status.HeldAgainstModel() {
				t.Errorf("target %q status %q", res.Target, res.Status)
			}
		}},
		// A death in the env stage is the environment's (a TPU runtime that CHECK-fails while
		// starting), never the model's: error, on tpu device_unavailable.
		{behaviour: "abort-env", target: compat.TargetTPU, status: compat.StatusError, stage: compat.StageEnv, class: compat.ClassDeviceUnavail, msg: "SIGABRT during stage env", check: func(t *testing.T, res compat.Result) {
			if res.Status.HeldAgainstModel() || str(res.Signature) != "device_unavailable:SIGABRT" {
				t.Errorf("status %q signature %q", res.Status, str(res.Signature))
			}
		}},
		{behaviour: "abort-env", status: compat.StatusError, stage: compat.StageEnv, class: compat.ClassOther, msg: "before any model was loaded"},
		{behaviour: "continuation", status: compat.StatusPass, stage: compat.StageGenerate, check: func(t *testing.T, res compat.Result) {
			c := res.Continuation
			if c == nil {
				t.Fatal("continuation dropped")
			}
			wantHead := "<script>alert(1)</script>[31m\uFFFD ok\n"
			if !strings.HasPrefix(c.Text, wantHead) || len(c.Text) > ContinuationTextMax || len(c.Text) < ContinuationTextMax-1 ||
				!utf8.ValidString(c.Text) || !strings.HasSuffix(c.Text, "é") {
				t.Errorf("text %q (%d bytes): want its head kept without control characters, cut whole at %d bytes", tail(c.Text), len(c.Text), ContinuationTextMax)
			}
			if c.Prompt != "P"+strings.Repeat("p", ContinuationPromptMax-1) {
				t.Errorf("prompt %q", c.Prompt)
			}
		}},
		{behaviour: "logtail", status: compat.StatusFail, stage: compat.StageForward, class: compat.ClassUnsupportedOp, check: func(t *testing.T, res compat.Result) {
			if !strings.Contains(res.LogTail, "Traceback (harness's own)") || !strings.Contains(res.LogTail, "scanner-visible stderr line") {
				t.Errorf("log tail %q: want the harness's own and the stderr tail", res.LogTail)
			}
			if str(res.Op) != "aten::_fft_r2c" {
				t.Errorf("op %q", str(res.Op))
			}
		}},
	}
	r := standinRunner(t, nil)
	for _, tc := range tests {
		t.Run(tc.behaviour, func(t *testing.T) {
			t.Parallel()
			req := standinRequest(t, tc.behaviour)
			req.SeqLen, req.NoCompile = 64, true
			if tc.target != "" {
				req.Target = tc.target
			}
			res := r.Probe(context.Background(), req)
			if res.Status != tc.status || str(res.Stage) != string(tc.stage) || str(res.FailureClass) != string(tc.class) {
				t.Errorf("got %s/%s/%s, want %s/%s/%s (message %q, log tail %q)", res.Status, str(res.Stage), str(res.FailureClass),
					tc.status, tc.stage, tc.class, str(res.Message), tail(res.LogTail))
			}
			if !strings.Contains(str(res.Message), tc.msg) {
				t.Errorf("message %q lacks %q", str(res.Message), tc.msg)
			}
			if res.Target != req.Target || res.Revision != req.Revision || res.Repro == "" || res.TestedAt.IsZero() {
				t.Errorf("runner fields: target %q revision %q repro %q tested_at %v", res.Target, res.Revision, res.Repro, res.TestedAt)
			}
			if _, err := json.Marshal(res); err != nil {
				t.Errorf("marshal: %v", err)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func tail(s string) string {
	if len(s) > 300 {
		return "…" + s[len(s)-300:]
	}
	return s
}

// waitGone waits until pid is gone (or a zombie nobody reaps yet).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d outlived the probe", pid)
}

func TestProbeTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, nil)
	tag := uniqueTag()
	req := standinRequest(t, "hang."+tag)
	req.Timeout = 1500 * time.Millisecond
	start := time.Now()
	res := r.Probe(context.Background(), req)
	took := time.Since(start)
	if res.Status != compat.StatusTimeout || str(res.FailureClass) != "timeout" || str(res.Stage) != "load" {
		t.Errorf("got %s/%s/%s (%q), want timeout/load/timeout", res.Status, str(res.Stage), str(res.FailureClass), str(res.Message))
	}
	if !strings.Contains(str(res.Message), "1.5s limit during stage load") {
		t.Errorf("message %q", str(res.Message))
	}
	if took > 5*time.Second {
		t.Errorf("probe took %s for a 1.5s limit and a 300ms grace", took)
	}
	if !strings.Contains(res.LogTail, "stage=load") {
		t.Errorf("log tail %q lacks the harness's stderr", res.LogTail)
	}
	for _, pid := range childPids(t, res.LogTail, 1) {
		waitGone(t, pid)
	}
	waitNoProcs(t, tag)
}

func TestProbeResultThenHang(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, nil)
	req := standinRequest(t, "hang-after-result")
	// Long enough for the interpreter to start and write its result on a
	// loaded 2-core machine; the hang after it is endless either way.
	req.Timeout = 5 * time.Second
	res := r.Probe(context.Background(), req)
	if res.Status != compat.StatusPass || str(res.Stage) != "generate" {
		t.Errorf("got %s/%s (%s): a result written before the hang stands", res.Status, str(res.Stage), str(res.Message))
	}
}

func TestProbeRelativePaths(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, func(c *Config) { c.Script = "testdata/standin.py" })
	req := standinRequest(t, "pass")
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, req.SnapshotDir)
	if err != nil {
		t.Fatal(err)
	}
	req.SnapshotDir = rel
	res := r.Probe(context.Background(), req)
	var m struct{ Argv []string }
	json.Unmarshal([]byte(str(res.Message)), &m)
	if res.Status != compat.StatusPass || len(m.Argv) < 3 || m.Argv[1] != "--model-dir" || !filepath.IsAbs(m.Argv[2]) {
		t.Errorf("status %s argv %q: the harness runs elsewhere and needs an absolute --model-dir", res.Status, m.Argv)
	}
}

func TestProbeCancelIsNotHeldAgainstModel(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, nil)
	tag := uniqueTag()
	req := standinRequest(t, "hang."+tag)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the harness is well under way: the keeper, the
		// harness and its child are running.
		for range 500 {
			if len(procsWith(tag)) >= 3 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	res := r.Probe(ctx, req)
	if res.Status != compat.StatusError || str(res.Message) != InterruptedMessage || res.Status.HeldAgainstModel() {
		t.Errorf("got %s %q, want error %q", res.Status, str(res.Message), InterruptedMessage)
	}
	if res.Signature != nil || res.FailureClass != nil {
		t.Errorf("signature %q class %q: an interruption is no failure", str(res.Signature), str(res.FailureClass))
	}
	waitNoProcs(t, tag)
}

// TestProbeGarbage runs alone (no t.Parallel) so that the allocation
// count is the probe's.
func TestProbeGarbage(t *testing.T) {
	r := standinRunner(t, nil)
	req := standinRequest(t, "garbage")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := r.Probe(context.Background(), req)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("the probe allocated %d bytes for 16 MiB of output: not bounded", alloc)
	}
	if res.Status != compat.StatusError || str(res.FailureClass) != "other" {
		t.Errorf("got %s/%s, want error/other", res.Status, str(res.FailureClass))
	}
	msg := str(res.Message)
	if !strings.HasPrefix(msg, "harness wrote no result (exit status 1); last stderr: last words of the garbage harness") ||
		!strings.Contains(msg, "8 MiB to stdout") {
		t.Errorf("message %q", msg)
	}
	if len(res.LogTail) > LogTailMax || len(res.LogTail) < LogTailMax/2 {
		t.Errorf("log tail is %d bytes, want about %d", len(res.LogTail), LogTailMax)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("marshal: %v", err)
	}
}

func TestProbeEnvironmentAndLimits(t *testing.T) {
	t.Setenv("HF_TOKEN", "hf_leak")
	t.Setenv("HUGGING_FACE_HUB_TOKEN", "hf_leak")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "leak")
	t.Setenv("TPU_API_KEY", "leak")
	t.Setenv("SOME_UNRELATED_VAR", "leak")
	t.Setenv("PYTHONPATH", "/leak")
	t.Setenv("TPU_NAME", "local-tpu")
	t.Setenv("PJRT_DEVICE", "TPU")
	t.Setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
	t.Setenv("CUDA_VISIBLE_DEVICES", "0")
	t.Setenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")
	r := standinRunner(t, func(c *Config) {
		c.MaxOpenFiles = 256
		c.ExtraEnv = []string{"OMP_NUM_THREADS=3", "MY_SECRET=leak", "HOME=/leak", "LIBTPU_INIT_ARGS=--x"}
	})
	res := r.Probe(context.Background(), standinRequest(t, "env"))
	if res.Status != compat.StatusPass {
		t.Fatalf("status %s: %s %s", res.Status, str(res.Message), res.LogTail)
	}
	var got struct {
		Env    map[string]string
		Rlimit map[string][2]uint64
	}
	if err := json.Unmarshal([]byte(str(res.Message)), &got); err != nil {
		t.Fatalf("message: %v", err)
	}
	for k, v := range got.Env {
		if strings.Contains(v, "leak") || isSecretName(k) {
			t.Errorf("%s=%s reached the harness", k, v)
		}
	}
	want := map[string]string{
		"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
		"TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
		"OMP_NUM_THREADS": "3", "TPU_NAME": "local-tpu", "PJRT_DEVICE": "TPU", "XLA_FLAGS": "--xla_dump_to=/tmp/x",
		"CUDA_VISIBLE_DEVICES": "0", "LIBTPU_INIT_ARGS": "--x", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
		"TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
	}
	for k, v := range want {
		if got.Env[k] != v {
			t.Errorf("%s=%q, want %q", k, got.Env[k], v)
		}
	}
	for _, k := range []string{"HOME", "TMPDIR"} {
		if !strings.Contains(got.Env[k], "torchtpu-probe-") {
			t.Errorf("%s=%q, want the probe's private directory", k, got.Env[k])
		}
	}
	if got.Env["PATH"] == "" {
		t.Error("PATH not passed")
	}
	if d := got.Rlimit["DATA"]; d[0] != 256<<20 || d[1] != 256<<20 {
		t.Errorf("RLIMIT_DATA %v, want 256 MiB soft and hard", d)
	}
	if n := got.Rlimit["NOFILE"]; n[0] != 256 || n[1] != 256 {
		t.Errorf("RLIMIT_NOFILE %v, want 256", n)
	}
	if c := got.Rlimit["CORE"]; c[0] != 0 || c[1] != 0 {
		t.Errorf("RLIMIT_CORE %v, want 0", c)
	}
}

func TestEnvStandin(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, nil)
	ctx := context.Background()
	target, rt, err := r.Env(ctx, compat.TargetAuto)
	if err != nil || target != compat.TargetCPU || rt.Torch != "0.0-standin" || rt.Harness != r.HarnessDigest() {
		t.Fatalf("Env(auto) = %q, %+v, %v", target, rt, err)
	}
	target, rt, err = r.Env(ctx, compat.TargetTPU)
	if !errors.Is(err, ErrDeviceUnavailable) || target != compat.TargetTPU || rt.Device != "" || rt.Torch == "" ||
		!strings.Contains(err.Error(), "not usable on this host") {
		t.Errorf("Env(tpu) on a cpu host = %q, %+v, %v; want ErrDeviceUnavailable and the versions", target, rt, err)
	}
	// An auto probe labels results it makes up itself with the detected target.
	req := standinRequest(t, "segv")
	req.Target = compat.TargetAuto
	req.Mode = compat.ModeAuto
	res := r.Probe(ctx, req)
	if res.Target != compat.TargetCPU || res.Status != compat.StatusCrash || res.Runtime.Torch != "0.0-standin" {
		t.Errorf("auto crash: target %q status %q runtime %+v", res.Target, res.Status, res.Runtime)
	}
	if !strings.HasSuffix(res.Repro, "--target cpu --mode auto") {
		t.Errorf("repro %q", res.Repro)
	}
}

func TestProbeAutoResolvesWithoutCachedEnv(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, nil)
	req := standinRequest(t, "pass")
	req.Target = compat.TargetAuto
	req.Mode = compat.ModeAuto
	res := r.Probe(context.Background(), req)
	if res.Status != compat.StatusPass || res.Target != compat.TargetCPU {
		t.Errorf("auto pass: %s on %q (%s)", res.Status, res.Target, str(res.Message))
	}
	if res.Mode == nil || *res.Mode != compat.ModeArch {
		t.Errorf("mode %v: want the harness's resolved mode", res.Mode)
	}
	// A result the runner makes up itself (a crash) on a fresh runner: auto
	// is resolved first, so the result names the real target.
	req = standinRequest(t, "segv")
	req.Target, req.Mode = compat.TargetAuto, compat.ModeAuto
	res = standinRunner(t, nil).Probe(context.Background(), req)
	if res.Status != compat.StatusCrash || res.Target != compat.TargetCPU {
		t.Errorf("auto crash on a fresh runner: %s on %q, want crash on cpu", res.Status, res.Target)
	}
}

func TestProbeScannerErrors(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, nil)
	for name, mod := range map[string]func(*Request){
		"no snapshot": func(q *Request) { q.SnapshotDir = filepath.Join(q.SnapshotDir, "missing") },
		"bad target":  func(q *Request) { q.Target = "gpu" },
		"bad mode":    func(q *Request) { q.Mode = "half" },
		"no model id": func(q *Request) { q.ModelID = "" },
	} {
		t.Run(name, func(t *testing.T) {
			req := standinRequest(t, "pass")
			mod(&req)
			res := r.Probe(context.Background(), req)
			if res.Status != compat.StatusError || res.Status.HeldAgainstModel() || res.Message == nil {
				t.Errorf("got %s %q, want error", res.Status, str(res.Message))
			}
		})
	}
	t.Run("interpreter vanished", func(t *testing.T) {
		dir := t.TempDir()
		py := filepath.Join(dir, "python")
		if err := os.Symlink(python3, py); err != nil {
			t.Fatal(err)
		}
		r2 := standinRunner(t, func(c *Config) { c.Python = py })
		os.Remove(py)
		res := r2.Probe(context.Background(), standinRequest(t, "pass"))
		if res.Status != compat.StatusError || !strings.Contains(str(res.Message), "cannot start") {
			t.Errorf("got %s %q", res.Status, str(res.Message))
		}
	})
}

func TestNewRunner(t *testing.T) {
	if _, err := NewRunner(Config{}); err == nil {
		t.Error("no python: want an error")
	}
	if _, err := NewRunner(Config{Python: "/nonexistent/python"}); err == nil {
		t.Error("missing python: want an error")
	}
	if python3 == "" {
		testenv.Missing(t, "no python3 on this host")
	}
	if _, err := NewRunner(Config{Python: python3, Script: "testdata/missing.py"}); err == nil {
		t.Error("missing script: want an error")
	}
	tmp := t.TempDir()
	if _, err := NewRunner(Config{Python: python3, TempDir: tmp, Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("no memory limit: %v, want an error (the scanner's plan sets it)", err)
	}
	r, err := NewRunner(Config{Python: python3, TempDir: tmp, Logger: quietLogger(), MemLimitBytes: 3 << 30})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(r.harnessDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("harness dir %v %v: want 0700", fi, err)
	}
	if _, err := os.Stat(r.script); err != nil {
		t.Errorf("entry script: %v", err)
	}
	// The harness reads the fit table next to itself.
	if _, err := os.Stat(filepath.Join(r.harnessDir, "fit.json")); err != nil {
		t.Errorf("fit table not extracted with the harness: %v", err)
	}
	if r.memLimit != 3<<30 || r.nofile != DefaultMaxOpenFiles || r.cfg.Timeout != config.DefaultTimeout {
		t.Errorf("defaults: mem %d nofile %d timeout %s", r.memLimit, r.nofile, r.cfg.Timeout)
	}
	if r.cfg.EnvTimeout != DefaultEnvTimeout || r.cfg.Grace != config.DefaultProbeGrace {
		t.Errorf("defaults: env timeout %s grace %s", r.cfg.EnvTimeout, r.cfg.Grace)
	}
	given, err := NewRunner(Config{Python: python3, TempDir: tmp, Logger: quietLogger(), MemLimitBytes: 3 << 30,
		Timeout: time.Minute, EnvTimeout: 2 * time.Minute, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if given.cfg.Timeout != time.Minute || given.cfg.EnvTimeout != 2*time.Minute || given.cfg.Grace != time.Second {
		t.Errorf("given limits not kept: timeout %s env timeout %s grace %s", given.cfg.Timeout, given.cfg.EnvTimeout, given.cfg.Grace)
	}
	given.Close()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.harnessDir); !os.IsNotExist(err) {
		t.Errorf("Close left %s", r.harnessDir)
	}
}

// TestEnvNamesLandlockWhenItBreaksTheDevice: a device the harness sees only
// without Landlock (CUDA on the H200 VM of the first device run: cuInit
// error 304 under the confinement) is reported as such, with the switch
// that helps; with --landlock=false the same host probes on it.
func TestEnvNamesLandlockWhenItBreaksTheDevice(t *testing.T) {
	t.Parallel()
	if landlockABI() <= 0 {
		t.Skip("this kernel has no Landlock")
	}
	env := append(os.Environ(), "TPU_STANDIN_CUDA_OUTSIDE_LANDLOCK=1")
	r := standinRunner(t, func(c *Config) { c.Environ = env })
	ctx := context.Background()
	target, _, err := r.Env(ctx, compat.TargetCUDA)
	if !errors.Is(err, ErrDeviceUnavailable) || !errors.Is(err, ErrConfinedDevice) || target != compat.TargetCUDA ||
		!strings.Contains(err.Error(), "--landlock=false") {
		t.Fatalf("Env(cuda) confined = %q, %v; want ErrConfinedDevice naming --landlock=false", target, err)
	}
	// A device missing with or without Landlock is plainly unavailable.
	if _, _, err := r.Env(ctx, compat.TargetTPU); !errors.Is(err, ErrDeviceUnavailable) || errors.Is(err, ErrConfinedDevice) {
		t.Errorf("Env(tpu) = %v; want ErrDeviceUnavailable alone", err)
	}
	off := standinRunner(t, func(c *Config) { c.Environ = env; c.NoLandlock = true })
	target, rt, err := off.Env(ctx, compat.TargetCUDA)
	if err != nil || target != compat.TargetCUDA || rt.Device != "standin GPU that Landlock breaks" {
		t.Errorf("Env(cuda) with NoLandlock = %q, %+v, %v; want the device", target, rt, err)
	}
}

// TestNewRunnerLogsAndFolders: the runner logs to the configured logger
// (and warns there only when ExtraEnv entries were refused), and extracts
// the harness under the configured temporary folder.
func TestNewRunnerLogsAndFolders(t *testing.T) {
	if python3 == "" {
		testenv.Missing(t, "no python3 on this host")
	}
	for _, tt := range []struct {
		extra []string
		warn  bool
	}{{nil, false}, {[]string{"OMP_NUM_THREADS=2"}, false}, {[]string{"OMP_NUM_THREADS=2", "HF_TOKEN=x"}, true}} {
		var buf bytes.Buffer
		tmp := t.TempDir()
		r, err := NewRunner(Config{Python: python3, TempDir: tmp, MemLimitBytes: NoLimit, ExtraEnv: tt.extra,
			Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if !strings.HasPrefix(r.harnessDir, tmp+string(filepath.Separator)) {
			t.Errorf("harness extracted to %q, want it under the configured %q", r.harnessDir, tmp)
		}
		logged := buf.String()
		if !strings.Contains(logged, "probe: harness confined by Landlock") && !strings.Contains(logged, "probe: this kernel has no Landlock") {
			t.Errorf("ExtraEnv %v: the configured logger got %q, want the confinement line", tt.extra, logged)
		}
		if refused := strings.Contains(logged, "ExtraEnv entries refused"); refused != tt.warn || (tt.warn && !strings.Contains(logged, "names=HF_TOKEN")) {
			t.Errorf("ExtraEnv %v: logged %q, want a refusal warning %v", tt.extra, logged, tt.warn)
		}
	}
}

// TestProbeTimeoutTermsTheHarness: on a timeout the runner sends SIGTERM to
// the harness's process group first, so a harness that SIGTERM ends is gone
// at once, without waiting out the grace period before SIGKILL.
func TestProbeTimeoutTermsTheHarness(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, func(c *Config) { c.Grace = 30 * time.Second })
	req := standinRequest(t, "sleep")
	req.Timeout = 2 * time.Second
	start := time.Now()
	res := r.Probe(context.Background(), req)
	if res.Status != compat.StatusTimeout {
		t.Errorf("status %s (%s), want timeout", res.Status, str(res.Message))
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the probe took %s: the harness did not get SIGTERM, or did not die of it", took)
	}
}

// TestEnvRemembersOnlyAuto: what Env(auto) resolved to is what later auto
// probes use; an Env for a named target does not change it.
func TestEnvRemembersOnlyAuto(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, nil)
	ctx := context.Background()
	if _, _, err := r.Env(ctx, compat.TargetCPU); err != nil || r.autoTarget() != "" {
		t.Fatalf("after Env(cpu): %v, auto resolved to %q, want nothing yet", err, r.autoTarget())
	}
	if _, _, err := r.Env(ctx, compat.TargetAuto); err != nil || r.autoTarget() != compat.TargetCPU {
		t.Fatalf("after Env(auto): %v, auto resolved to %q, want cpu", err, r.autoTarget())
	}
}

// TestEnvAutoSaysWhenLandlockHidesTheTPU: auto falls back to cpu when no
// TPU is usable, but a TPU the harness sees only without Landlock (Google's
// torch_tpu installed, its runtime needing files the confinement does not
// name) is named in a warning with the switch that helps, not lost quietly.
// A host without torch_tpu costs no second run and gets no warning.
func TestEnvAutoSaysWhenLandlockHidesTheTPU(t *testing.T) {
	t.Parallel()
	if landlockABI() <= 0 {
		t.Skip("this kernel has no Landlock")
	}
	for _, tc := range []struct {
		name        string
		hidden, off bool
		want        compat.Target
		warn        bool
	}{
		{"confined", true, false, compat.TargetCPU, true},
		{"landlock off", true, true, compat.TargetTPU, false},
		{"no torch_tpu", false, false, compat.TargetCPU, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := os.Environ()
			if tc.hidden {
				env = append(env, "TPU_STANDIN_TPU_OUTSIDE_LANDLOCK=1")
			}
			var logged bytes.Buffer
			r := standinRunner(t, func(c *Config) {
				c.Environ, c.NoLandlock = env, tc.off
				c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			})
			got, _, err := r.Env(context.Background(), compat.TargetAuto)
			if err != nil || got != tc.want {
				t.Fatalf("Env(auto) = %q, %v; want %q", got, err, tc.want)
			}
			warned := strings.Contains(logged.String(), `level=WARN msg="probe: target auto resolved to cpu, but the harness sees the TPU without Landlock`) &&
				strings.Contains(logged.String(), "run with --landlock=false")
			if warned != tc.warn {
				t.Errorf("warned %v, want %v; log:\n%s", warned, tc.warn, logged.String())
			}
		})
	}
}

// TestEnvThatNeverAnswers: an --env-only run that hangs is ended at
// EnvTimeout with an error that says so; cancelled by its caller first, its
// error wraps the context's, so a shutdown is not mistaken for a slow host.
func TestEnvThatNeverAnswers(t *testing.T) {
	t.Parallel()
	env := append(os.Environ(), "TPU_STANDIN_ENV_HANG=1")
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		r := standinRunner(t, func(c *Config) { c.Environ, c.EnvTimeout = env, 300*time.Millisecond })
		_, _, err := r.Env(context.Background(), compat.TargetCPU)
		if err == nil || !strings.Contains(err.Error(), "ran past 300ms") || errors.Is(err, context.Canceled) {
			t.Fatalf("Env = %v; want an error saying it ran past 300ms", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		r := standinRunner(t, func(c *Config) { c.Environ, c.EnvTimeout = env, time.Minute })
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, _, err := r.Env(ctx, compat.TargetCPU)
		if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "ran past") {
			t.Fatalf("Env = %v; want the caller's context error", err)
		}
	})
}
