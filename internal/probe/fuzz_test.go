package probe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// The words an accepted result may carry, written out from
// shared/CONTRACT.md rather than taken from compat (whose Valid methods the
// runner itself calls): a result status is never "untested", which means
// "no result yet".
var (
	contractResultStatuses = words("pass", "fail", "oom", "timeout", "crash", "skipped", "error")
	contractStages         = words("env", "config", "load", "forward", "numerics", "compile", "generate")
	contractClasses        = words("unsupported_op", "unsupported_dtype", "compile_error", "recompile",
		"numerics_mismatch", "oom", "timeout", "crash", "load_error", "config_error", "import_error",
		"device_unavailable", "other")
	contractReasons = words("remote_code", "gated", "no_safetensors", "too_large", "unsupported_library",
		"unsupported_task", "disabled", "not_found")
)

func words(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// inContract reports whether an optional word is absent or in the set.
func inContract[T ~string](set map[string]bool, p *T) bool { return p == nil || set[string(*p)] }

// FuzzResultFile feeds arbitrary result files through the runner's
// validation: whatever the harness writes, an accepted result carries
// contract words only, a cpu request is never labelled tpu, and the
// completed result marshals.
func FuzzResultFile(f *testing.F) {
	for _, seed := range []string{
		`{"target": "cpu", "status": "pass", "stage": "generate", "mode": "arch"}`,
		`{"target": "tpu", "status": "pass"}`,
		`{"status": "fail", "stage": "forward", "failure_class": "unsupported_op", "op": "aten::x", "metrics": {"max_abs_diff": NaN}}`,
		`{"status": "skipped", "reason": "remote_code", "tested_at": ""}`,
		`{"status": "untested"}`, `{"status": "oom", "stages": [{"stage": "warmup"}]}`, `[]`, `null`, `{`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	r := &Runner{digest: "sha256:000000000000"}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "result.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := readResult(path)
		if err != nil {
			return
		}
		p := &probeRun{r: r, req: Request{ModelID: "m", Revision: "r", Target: compat.TargetCPU, Mode: compat.ModeAuto}, start: time.Now(), target: compat.TargetCPU}
		res, err = p.accept(res, procOutcome{stderrTail: data})
		if err != nil {
			return
		}
		if !contractResultStatuses[string(res.Status)] || res.Target != compat.TargetCPU ||
			!inContract(contractStages, res.Stage) || !inContract(contractClasses, res.FailureClass) ||
			!inContract(contractReasons, res.Reason) || len(res.LogTail) > LogTailMax {
			t.Fatalf("accepted an invalid result: %+v", res)
		}
		for _, st := range res.Stages {
			if !contractStages[string(st.Stage)] {
				t.Fatalf("accepted stages with %q: %+v", st.Stage, res)
			}
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	})
}
