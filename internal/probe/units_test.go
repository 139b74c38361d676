package probe

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestScrubEnv(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin", "HOME=/root", "HF_TOKEN=x", "HF_HOME=/root/.cache/hf", "TPU_NAME=t",
		"PJRT_DEVICE=TPU", "LIBTPU_INIT_ARGS=a", "XLA_FLAGS=f", "CUDA_VISIBLE_DEVICES=1",
		"TPU_ACCESS_TOKEN=x", "GITHUB_TOKEN=x", "SCANNER_ADMIN_TOKEN=x", "AWS_ACCESS_KEY_ID=x",
		"PYTHONPATH=/x", "LD_PRELOAD=/x.so", "OMP_NUM_THREADS=64", "SSH_AUTH_SOCK=/x", "LANG=de_DE",
		"HARNESS_TEST_INJECT=load:MemoryError", "TORCH_DEVICE_BACKEND_AUTOLOAD=1",
	}
	extra := []string{"OMP_NUM_THREADS=2", "HF_HUB_OFFLINE=0", "API_KEY=x", "XLA_FLAGS=g", "bogus",
		"HARNESS_TEST_INJECT=tpu:simulate", "TORCH_DEVICE_BACKEND_AUTOLOAD=1"}
	env, dropped := scrubEnv(parent, extra, "/h", "/t", "")
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = v
	}
	want := map[string]string{
		"PATH": "/usr/bin", "HOME": "/h", "TMPDIR": "/t", "TPU_NAME": "t", "PJRT_DEVICE": "TPU",
		"LIBTPU_INIT_ARGS": "a", "XLA_FLAGS": "g", "CUDA_VISIBLE_DEVICES": "1", "OMP_NUM_THREADS": "2",
		"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
		"TOKENIZERS_PARALLELISM": "false", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
		"TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"HF_TOKEN", "HF_HOME", "TPU_ACCESS_TOKEN", "GITHUB_TOKEN", "SCANNER_ADMIN_TOKEN",
		"AWS_ACCESS_KEY_ID", "PYTHONPATH", "LD_PRELOAD", "SSH_AUTH_SOCK", "API_KEY", "HARNESS_TEST_INJECT"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s passed through", k)
		}
	}
	if !slices.Equal(dropped, []string{"HF_HUB_OFFLINE", "API_KEY", "bogus", "HARNESS_TEST_INJECT", "TORCH_DEVICE_BACKEND_AUTOLOAD"}) {
		t.Errorf("dropped %v", dropped)
	}
	env, _ = scrubEnv(nil, nil, "/h", "/t", "")
	if !slices.Contains(env, "PATH=/usr/local/bin:/usr/bin:/bin") || !slices.Contains(env, "OMP_NUM_THREADS="+defaultThreads()) {
		t.Errorf("defaults missing: %v", env)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(10)
	var all []byte
	for _, s := range []string{"abc", "defghij", "k", "lmnopqrstuvwxyz0123", "45", ""} {
		tb.Write([]byte(s))
		all = append(all, s...)
		want := all[max(0, len(all)-10):]
		if !bytes.Equal(tb.Bytes(), want) {
			t.Fatalf("after %q: %q, want %q", s, tb.Bytes(), want)
		}
		if cap(tb.buf) > 20 {
			t.Fatalf("buffer grew to %d", cap(tb.buf))
		}
	}
	if tb.total != int64(len(all)) {
		t.Errorf("total %d", tb.total)
	}
}

func TestStageTracker(t *testing.T) {
	tests := []struct {
		in   string
		want compat.Stage
	}{
		{"", ""},
		{"loading weights\n", ""},
		{"[harness] stage=load\nnoise\n", "load"},
		{"stage: forward\n", "forward"},
		{`{"event": "start", "stage": "compile"}` + "\n", "compile"},
		{"[numerics] comparing\n", "numerics"},
		{"stage=load\nstage=generate", "generate"}, // unterminated last line
		{"stage=warmup\n", ""},
		{"the stages of the backstage=load are\n", ""},
		{"STAGE=CONFIG\n", "config"},
	}
	for _, tc := range tests {
		var s stageTracker
		// Feed byte by byte: lines split across reads must still match.
		for i := range len(tc.in) {
			s.Write([]byte{tc.in[i]})
		}
		if got := s.Stage(); got != tc.want {
			t.Errorf("%q: stage %q, want %q", tc.in, got, tc.want)
		}
	}
	// Written at once, lines are still matched one by one: a blank line
	// does not join the next ones into one, so "stage" and "load" on two
	// lines name no stage.
	for in, want := range map[string]compat.Stage{
		"x\n\nstage\nload\n":         "",
		"x\n\n[load] go\n\nwarmup\n": "load",
		"\nstage=forward\n":          "forward",
	} {
		var s stageTracker
		s.Write([]byte(in))
		if got := s.Stage(); got != want {
			t.Errorf("%q in one write: stage %q, want %q", in, got, want)
		}
	}
	var s stageTracker
	s.Write([]byte("stage=load " + strings.Repeat("x", 10000) + " stage=forward\n"))
	if s.Stage() != "load" || cap(s.line) > 2*stageLineMax {
		t.Errorf("long line: stage %q, line buffer %d", s.Stage(), cap(s.line))
	}
}

func TestNanToNull(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{`{"a": NaN, "b": Infinity, "c": -Infinity}`, `{"a": null, "b": null, "c": null}`},
		{`{"m": "NaN and Infinity \" NaN", "x": [NaN]}`, `{"m": "NaN and Infinity \" NaN", "x": [null]}`},
	}
	for _, tc := range tests {
		if got := string(nanToNull([]byte(tc.in))); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestCleanTail(t *testing.T) {
	s := cleanTail([]byte("ab\xe2\x82\xacc"), 3) // the euro sign is cut: drop its tail bytes
	if s != "c" {
		t.Errorf("%q", s)
	}
	bad := bytes.Repeat([]byte{0xff}, 100)
	s = cleanTail(bad, 50)
	if !utf8.ValidString(s) || len(s) > 50 {
		t.Errorf("invalid bytes: %d bytes, valid %v", len(s), utf8.ValidString(s))
	}
	if lastLine([]byte("a\nlast one \n\n")) != "last one" {
		t.Errorf("lastLine %q", lastLine([]byte("a\nlast one \n\n")))
	}
}

func TestMergeLogTail(t *testing.T) {
	big := strings.Repeat("e", 2*LogTailMax)
	tests := []struct {
		name, harness, stderr string
		want                  []string
		maxLen                int
	}{
		{"only stderr", "", "err line\n", []string{"err line"}, 0},
		{"only harness", "tb\n", "", []string{"tb"}, 0},
		{"harness inside stderr", "boom", "x\nboom\ny\n", []string{"x\nboom\ny"}, 0},
		{"both", "harness tb", "stderr line", []string{"harness tb", "--- harness stderr (scanner) ---", "stderr line"}, 0},
		{"capped", big, big, []string{"e"}, LogTailMax},
	}
	for _, tc := range tests {
		got := mergeLogTail(tc.harness, []byte(tc.stderr))
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, tail(got), w)
			}
		}
		if tc.maxLen > 0 && len(got) > tc.maxLen {
			t.Errorf("%s: %d bytes", tc.name, len(got))
		}
	}
}

// TestRequestArgs: the runner hands the plan's mode, budget and note to
// the harness as they are; it decides none of them again.
func TestRequestArgs(t *testing.T) {
	req := Request{ModelID: "org/m", Revision: "abc", SnapshotDir: "/snap", Target: compat.TargetCPU,
		Mode: compat.ModeArch, MemoryBudgetBytes: 5 << 30, PlanNote: "untested on cpu; arch asked"}
	got := strings.Join(req.args("/r.json"), " ")
	for _, want := range []string{"--mode arch", "--target cpu", "--memory-budget-bytes 5368709120",
		"--plan-note untested on cpu; arch asked"} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	req.MemoryBudgetBytes, req.PlanNote = 0, ""
	if got := strings.Join(req.args("/r.json"), " "); strings.Contains(got, "--memory-budget-bytes") || strings.Contains(got, "--plan-note") {
		t.Errorf("an unknown budget or no note still passed: %q", got)
	}
	// issue 41: the probe's limit bounds the harness's compile stage; without compile there is nothing to bound
	req.Timeout = 90 * time.Second
	if got := strings.Join(req.args("/r.json"), " "); !strings.Contains(got, "--deadline-s 90") {
		t.Errorf("args %q lack the probe's limit", got)
	}
	req.NoCompile = true
	if got := strings.Join(req.args("/r.json"), " "); strings.Contains(got, "--deadline-s") {
		t.Errorf("a probe without compile still passed a deadline: %q", got)
	}
}
