// Package measure is the measured serving probe (issue 40): vLLM-TorchTPU's
// offline LLM run on one model in its own interpreter (--vllm-python), its
// greedy tokens held to the transformers float32 CPU reference's by the
// serving table (internal/harness/vllm/serving.json), with its load time,
// time to first token and tokens per second. Failures take the project's
// classes (harness_failures.classify, run inside the probe).
package measure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

// Table is serving.json: see its "about".
type Table struct {
	MaxTokens    int `json:"max_tokens"`
	MaxModelLen  int `json:"max_model_len"`
	PrefixTokens int `json:"prefix_tokens"`
}

// parseTable reads a serving.json and checks its bounds.
func parseTable(data []byte) (Table, error) {
	var t Table
	if err := json.Unmarshal(data, &t); err != nil {
		return Table{}, fmt.Errorf("measure: serving.json: %w", err)
	}
	if t.MaxTokens < 1 || t.MaxModelLen < 1 || t.PrefixTokens < 1 || t.PrefixTokens > t.MaxTokens {
		return Table{}, fmt.Errorf("measure: serving.json: want 1 <= prefix_tokens <= max_tokens and max_model_len >= 1, got %+v", t)
	}
	return t, nil
}

// table is the embedded serving.json (a broken one panics at start-up and
// fails every test of the package).
var table = func() Table {
	data, err := harness.VLLM.ReadFile("vllm/serving.json")
	if err != nil {
		panic(err)
	}
	t, err := parseTable(data)
	if err != nil {
		panic(err)
	}
	return t
}()

// TableOf is the serving table.
func TableOf() Table { return table }

// Agree is the one rule of the serving probe's numerics: how many leading
// tokens of got agree with the reference's (agreed), and whether the first
// PrefixTokens do (pass). A reference that ended sooner (its end-of-text
// token) is held to as far as it goes; an empty one passes nothing.
func Agree(t Table, ref, got []int) (agreed int, pass bool) {
	for agreed < len(ref) && agreed < len(got) && ref[agreed] == got[agreed] {
		agreed++
	}
	need := min(t.PrefixTokens, len(ref))
	return agreed, need > 0 && agreed >= need
}

// Reference is the transformers CPU reference: the prompt's token ids and
// the greedy tokens after it.
type Reference struct {
	PromptTokenIDs []int  `json:"prompt_token_ids"`
	Tokens         []int  `json:"tokens"`
	Error          string `json:"error,omitempty"`
}

// Request is one serving probe.
type Request struct {
	VLLMPython string // the interpreter with vllm-torchtpu (--vllm-python)
	Python     string // the project's, for the reference (not used when Reference is set)
	ModelDir   string // the model's local snapshot
	// TensorParallel is LLM's tensor_parallel_size (serving.TensorParallel
	// of readiness's min_devices for the host's generation); 0 means 1.
	TensorParallel int
	Timeout        time.Duration // the whole probe's; 0 means 20 minutes
	Reference      *Reference    // nil: computed with Python (reference.py)
}

// Result, Runtime and Metrics are serving's (a model's serving cell
// carries the measured verdict).
type (
	Result  = compat.ServingMeasured
	Runtime = compat.ServingRuntime
	Metrics = compat.ServingMetrics
)

// EvidenceMeasured labels a Result: the probe ran.
const EvidenceMeasured = compat.ServingEvidenceMeasured

// probeOut is what serve.py writes.
type probeOut struct {
	Stage     string   `json:"stage"`
	OK        bool     `json:"ok"`
	Tokens    []int    `json:"tokens"`
	LoadS     *float64 `json:"load_s"`
	TTFTS     *float64 `json:"ttft_s"`
	GenerateS *float64 `json:"generate_s"`
	Versions  Runtime  `json:"versions"`
	Device    *string  `json:"device"`
	Failure   *struct {
		Status       compat.Status       `json:"status"`
		FailureClass compat.FailureClass `json:"failure_class"`
		Op           *string             `json:"op"`
		Signature    string              `json:"signature"`
		Message      string              `json:"message"`
		LogTail      string              `json:"log_tail"`
	} `json:"failure"`
}

// Run runs one serving probe. It never fails: what went wrong is the
// Result's status (error for the scanner's own failure; skipped with
// reason no_reference when the transformers CPU reference gave no greedy
// tokens, vLLM then not run: neither is held against vLLM-TorchTPU).
func Run(ctx context.Context, req Request) Result {
	res := Result{Evidence: EvidenceMeasured, TensorParallelSize: max(req.TensorParallel, 1), MaxModelLen: table.MaxModelLen}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "serving-probe-")
	if err != nil {
		return scannerError(res, "env", err)
	}
	defer os.RemoveAll(dir)
	hdir, err := writeFiles(dir)
	if err != nil {
		return scannerError(res, "env", err)
	}
	ref := req.Reference
	if ref == nil {
		if ref, err = reference(ctx, req, dir, hdir); err != nil {
			return notJudged(res, err.Error())
		}
	}
	if len(ref.Tokens) == 0 { // Agree would fail anything against nothing: vLLM is not started
		return notJudged(res, "the transformers CPU reference generated no tokens to hold vLLM's to")
	}
	res.ReferenceTokens = ref.Tokens

	args, _ := json.Marshal(map[string]any{"model": req.ModelDir, "tensor_parallel_size": res.TensorParallelSize,
		"prompt_token_ids": ref.PromptTokenIDs, "table": filepath.Join(hdir, "vllm", "serving.json"), "harness": hdir})
	argsPath, outPath := filepath.Join(dir, "args.json"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(argsPath, args, 0o600); err != nil {
		return scannerError(res, "env", err)
	}
	tail, runErr := run(ctx, dir, req.VLLMPython, filepath.Join(hdir, "vllm", "serve.py"), argsPath, outPath)
	var out probeOut
	data, readErr := os.ReadFile(outPath)
	if readErr == nil {
		readErr = json.Unmarshal(data, &out)
	}
	res.Runtime, res.Device, res.LogTail = out.Versions, out.Device, tail
	stage := out.Stage
	if stage == "" {
		stage = "env"
	}
	switch {
	case ctx.Err() != nil:
		return verdict(res, compat.StatusTimeout, stage, compat.ClassTimeout, nil, "timeout:"+stage,
			fmt.Sprintf("the serving probe ran past %s in its %s stage and was killed", timeout, stage))
	case readErr != nil || (runErr != nil && !out.OK && out.Failure == nil):
		if marker := harness.OOMMarker([]byte(tail)); marker != "" {
			return verdict(res, compat.StatusOOM, stage, compat.ClassOOM, nil, "oom:"+stage, marker)
		}
		return verdict(res, compat.StatusCrash, stage, compat.ClassCrash, nil, "crash:"+stage,
			fmt.Sprintf("the serving probe died in its %s stage without a result (%v)", stage, errors.Join(runErr, readErr)))
	case out.Failure != nil:
		f := out.Failure
		return verdict(res, f.Status, stage, f.FailureClass, f.Op, f.Signature, f.Message)
	}
	if out.LoadS != nil {
		res.Metrics.LoadS = out.LoadS
	}
	res.Metrics.TTFTS = out.TTFTS
	if out.GenerateS != nil && *out.GenerateS > 0 && len(out.Tokens) > 0 {
		tps := float64(len(out.Tokens)) / *out.GenerateS
		res.Metrics.TokensPerS = &tps
	}
	res.Tokens = out.Tokens
	agreed, pass := Agree(table, ref.Tokens, out.Tokens)
	res.Metrics.AgreedTokens = &agreed
	if !pass {
		return verdict(res, compat.StatusFail, string(compat.StageNumerics), compat.ClassNumericsMismatch, nil,
			"numerics_mismatch:serve_greedy_tokens",
			fmt.Sprintf("vLLM's greedy tokens agree with the transformers CPU reference's for %d tokens; the first %d must (serving.json)",
				agreed, min(table.PrefixTokens, len(ref.Tokens))))
	}
	res.Status, res.Stage = string(compat.StatusPass), compat.Ptr(string(compat.StageGenerate))
	res.MeasuredAt = time.Now().UTC()
	return res
}

// verdict fills res's outcome.
func verdict(res Result, st compat.Status, stage string, cls compat.FailureClass, op *string, sig, msg string) Result {
	c := string(cls)
	res.Status, res.Stage, res.FailureClass, res.Op, res.Signature, res.Message = string(st), &stage, &c, op, &sig, &msg
	res.MeasuredAt = time.Now().UTC()
	return res
}

// scannerError is the scanner's own failure (no temporary folder, files
// not written): status error.
func scannerError(res Result, stage string, err error) Result {
	return verdict(res, compat.StatusError, stage, compat.ClassOther, nil, "environment:serving_probe", err.Error())
}

// notJudged is a serving probe without the transformers CPU reference's
// greedy tokens (the reference failed or generated none): vLLM is not run,
// and the probe is status skipped with reason no_reference, never a pass
// or a fail (Agree has nothing to hold vLLM's tokens to).
func notJudged(res Result, why string) Result {
	res.Status, res.Reason = string(compat.StatusSkipped), compat.Ptr(compat.ServingReasonNoReference)
	res.Stage, res.FailureClass, res.Op, res.Signature = nil, nil, nil, nil
	res.Message = compat.Ptr("not judged: " + why)
	res.MeasuredAt = time.Now().UTC()
	return res
}

// WithoutReference says why the inference probe res leaves no CPU
// reference to hold vLLM to: its own float32 CPU reference failed the way
// the target did (an error the reference shares: res.Reproducible, a
// signature reference:, harness_load: or harness_inputs:), so the serving
// probe's reference would fail too. ok is false when the reference ran
// (whatever the target's verdict: vLLM-TorchTPU is another path than
// TorchTPU's eager one, and may serve a model the probe failed).
func WithoutReference(res compat.Result) (why string, ok bool) {
	if !res.Reproducible() {
		return "", false
	}
	return "the inference probe's float32 CPU reference failed (" + *res.Signature + ")", true
}

// NoReference is the serving probe's verdict where WithoutReference says
// why: not judged, vLLM not run, tensor_parallel_size tp (0 means 1).
func NoReference(tp int, why string) Result {
	return notJudged(Result{Evidence: EvidenceMeasured, TensorParallelSize: max(tp, 1), MaxModelLen: table.MaxModelLen}, why)
}

// writeFiles writes the harness (for harness_failures and
// harness_inputs) and the vllm programs into dir; it returns the folder
// holding them.
func writeFiles(dir string) (string, error) {
	hdir, _, err := harness.Extract(dir)
	if err != nil {
		return "", err
	}
	err = fs.WalkDir(harness.VLLM, "vllm", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(hdir, p), 0o700)
		}
		data, err := harness.VLLM.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(hdir, p), data, 0o600)
	})
	return hdir, err
}

// reference runs reference.py with the project's interpreter.
func reference(ctx context.Context, req Request, dir, hdir string) (*Reference, error) {
	out := filepath.Join(dir, "reference.json")
	tail, err := run(ctx, dir, req.Python, filepath.Join(hdir, "vllm", "reference.py"), req.ModelDir,
		filepath.Join(hdir, "vllm", "serving.json"), hdir, out)
	var ref Reference
	data, rerr := os.ReadFile(out)
	if rerr == nil {
		rerr = json.Unmarshal(data, &ref)
	}
	switch {
	case rerr == nil && ref.Error != "":
		return nil, fmt.Errorf("the transformers CPU reference failed: %s", ref.Error)
	case err != nil || rerr != nil:
		return nil, fmt.Errorf("the transformers CPU reference failed: %v: %s", errors.Join(err, rerr), lastLines(tail, 3))
	case len(ref.PromptTokenIDs) == 0:
		return nil, errors.New("the transformers CPU reference wrote no prompt")
	}
	return &ref, nil
}

// tailBytes bounds the output kept of a probe.
const tailBytes = 16 << 10

// run runs python script args in its own process group, killed whole when
// ctx ends; it returns the end of its stdout and stderr.
func run(ctx context.Context, dir, python, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, python, append([]string{"-u", script}, args...)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var buf tailWriter
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return string(buf.b), err
}

// tailWriter keeps the last tailBytes written to it.
type tailWriter struct{ b []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > tailBytes {
		w.b = append([]byte(nil), w.b[len(w.b)-tailBytes:]...)
	}
	return len(p), nil
}

// lastLines is the last n non-empty lines of s.
func lastLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], " | ")
}

// Version is the version of pkg (vllm-torchtpu: serving.Package) installed
// in the interpreter python, as its importlib.metadata says, without
// importing vLLM: what a fleet worker started with --vllm-python tells the
// server (fleet.WorkerServing). The error says why it could not be read.
func Version(ctx context.Context, python, pkg string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))", pkg)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("measure: %s version in %s: %w", pkg, python, err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" || strings.ContainsAny(v, " \n\t") || len(v) > compat.MaxVersionBytes {
		return "", fmt.Errorf("measure: %s version in %s: %q is not a version", pkg, python, lastLines(v, 1))
	}
	return v, nil
}

// versionWait bounds Version's interpreter (its start and one metadata read).
const versionWait = 30 * time.Second
