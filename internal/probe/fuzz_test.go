package probe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

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
		p := &probeRun{r: r, req: Request{ModelID: "m", Revision: "r", Target: compat.TargetCPU, Mode: compat.ModeAuto}, target: compat.TargetCPU}
		if err := p.check(&res); err != nil {
			return
		}
		res = p.complete(res, procOutcome{stderrTail: data})
		if !res.Status.Valid() || res.Target != compat.TargetCPU || (res.Stage != nil && !res.Stage.Valid()) ||
			(res.FailureClass != nil && !res.FailureClass.Valid()) || (res.Reason != nil && !res.Reason.Valid()) ||
			len(res.LogTail) > LogTailMax {
			t.Fatalf("accepted an invalid result: %+v", res)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	})
}
