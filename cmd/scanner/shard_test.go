package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// minuteLlama needs one device of 64 KiB: about 860 parameters (2 bytes
// each) and a 256-byte KV cache of 16 tokens.
var minuteLlama = map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": 8,
	"intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1, "vocab_size": 16,
	"max_position_embeddings": 16}

func repoWith(id string, cfg map[string]any, downloads int64) hubtest.Repo {
	b, _ := json.Marshal(cfg)
	return hubtest.Repo{ID: id, PipelineTag: "text-generation", Library: "transformers", Downloads: downloads,
		Tags: []string{"transformers"}, Config: cfg, Files: map[string][]byte{"config.json": b}}
}

// shardedRun is when one stand-in probe ran and on which devices.
type shardedRun struct {
	ID    string
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	TPU   string  `json:"tpu_visible_devices"`
	chips []string
}

// TestShardedAndOneDeviceProbesShareTheHost: `scan --devices 2
// --device-memory 64KiB` on a host of two devices: the tiny Llama (86,336
// bytes of bf16 weights and KV cache, × 1.1 over 64 KiB: two devices) runs
// as two ranks on devices 0 and 1, the minute ones on one device each, side
// by side; the stand-in records when each ran and on which devices, and no
// device is ever held by two probes at once (so never more than two held).
func TestShardedAndOneDeviceProbesShareTheHost(t *testing.T) {
	repos := []hubtest.Repo{repoWith("dev/timed-big", tinyConfigs["llama"], 1000)}
	for i := range 6 {
		repos = append(repos, repoWith(fmt.Sprintf("dev/timed-%d", i), minuteLlama, int64(900-i)))
	}
	h := hubtest.New(t, repos...)
	dir := t.TempDir()
	db := filepath.Join(dir, "scanner.db")
	var out, errOut bytes.Buffer
	args := append(standinArgs(t, h, db, filepath.Join(dir, "hub")), "--devices", "2", "--device-memory", "64KiB")
	if code := runWithEnv(t, args, &out, &errOut); code != 0 {
		t.Fatalf("scan exited %d:\n%s", code, errOut.String())
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var runs []shardedRun
	for _, r := range repos {
		res, err := st.LatestResult(context.Background(), r.ID, compat.TargetCPU)
		if err != nil || res.Status != compat.StatusPass || res.Message == nil {
			t.Fatalf("%s: %v %v", r.ID, res.Status, err)
		}
		run := shardedRun{ID: r.ID}
		if err := json.Unmarshal([]byte(*res.Message), &run); err != nil {
			t.Fatalf("%s: message %q: %v", r.ID, *res.Message, err)
		}
		run.chips = strings.Split(run.TPU, ",")
		want, sharding := []string{"0"}, (*compat.Sharding)(nil)
		if r.ID == "dev/timed-big" {
			want, sharding = []string{"0", "1"}, compat.Ptr(compat.ShardingTP)
		}
		if len(run.chips) != len(want) || (len(want) == 2 && run.TPU != "0,1") || res.DevicesUsed != len(want) ||
			(sharding == nil) != (res.Sharding == nil) {
			t.Errorf("%s: ran on devices %q, devices_used %d, sharding %v; want %d devices", r.ID, run.TPU, res.DevicesUsed,
				res.Sharding, len(want))
		}
		runs = append(runs, run)
	}
	sideBySide := 0
	for i, a := range runs {
		for _, b := range runs[i+1:] {
			if a.Start >= b.End || b.Start >= a.End {
				continue
			}
			for _, c := range a.chips {
				for _, d := range b.chips {
					if c == d {
						t.Errorf("device %s held by %s (%.2f-%.2f) and %s (%.2f-%.2f) at once", c, a.ID, a.Start, a.End, b.ID, b.Start, b.End)
					}
				}
			}
			if len(a.chips) == 1 && len(b.chips) == 1 {
				sideBySide++
			}
		}
	}
	if sideBySide == 0 {
		t.Errorf("no two one-device probes ran side by side: %+v", runs)
	}
}

// TestShardedScan runs the real harness from the plan on: `scan --devices 2
// --device-memory 80KiB` on cpu, where the tiny Llama (86,336 bytes × 1.1)
// and the tiny GPT-2 (141,056 bytes × 1.1) each need two devices of 80 KiB.
// Llama has transformers' tensor-parallel plan: two gloo ranks, sharding
// tp; GPT-2 has none: FSDP2. Both pass, their bfloat16 logits within
// tolerance of the unsharded float32 reference (which both ranks' seeded
// weights equal).
func TestShardedScan(t *testing.T) {
	py := needPython(t)
	h := hubtest.New(t, configRepo("tiny/llama", "llama", "text-generation", 1000), configRepo("tiny/gpt2", "gpt2", "text-generation", 900))
	dir := t.TempDir()
	db := filepath.Join(dir, "scanner.db")
	t.Setenv("HOME", dir)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("SCANNER_PYTHON", py)
	args := []string{"scan", "--hub-endpoint", h.URL(), "--db", db, "--cache-dir", filepath.Join(dir, "hub"), "--target", "cpu",
		"--mode", "arch", "--timeout", "10m", "--devices", "2", "--device-memory", "80KiB"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("scan exited %d\n%s", code, stderr.String())
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, want := range map[string]compat.Sharding{"tiny/llama": compat.ShardingTP, "tiny/gpt2": compat.ShardingFSDP} {
		r, err := st.LatestResult(context.Background(), id, compat.TargetCPU)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if r.Status != compat.StatusPass || r.DevicesUsed != 2 || r.Sharding == nil || *r.Sharding != want {
			t.Errorf("%s: %s on %d devices, sharding %v; want pass on 2, %s: %s\n%s", id, r.Status, r.DevicesUsed, r.Sharding,
				want, str(r.Message), tail(r.LogTail))
			continue
		}
		m := r.Metrics
		// bfloat16 on cpu: within its tolerance (float32 to 1e-5 is
		// tests/test_sharding.py's, in the harness).
		if m.MaxAbsDiff == nil || m.Tolerance == nil || *m.MaxAbsDiff > *m.Tolerance {
			t.Errorf("%s: max_abs_diff %s, tolerance %s: the sharded logits must match the unsharded reference", id, fptr(m.MaxAbsDiff), fptr(m.Tolerance))
		}
		if m.ForwardMS == nil || m.TokensPerS == nil || m.CollectiveMS == nil || !strings.HasSuffix(r.Repro, "--devices 2") {
			t.Errorf("%s: metrics %+v repro %q", id, m, r.Repro)
		}
		if note := stageNote(r, compat.StageConfig); !strings.Contains(note, "sharded over 2") {
			t.Errorf("%s: config note %q does not say the plan sharded it", id, note)
		}
	}
}

func stageNote(r compat.Result, s compat.Stage) string {
	for _, st := range r.Stages {
		if st.Stage == s {
			return st.Note
		}
	}
	return ""
}

func fptr(p *float64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatFloat(*p, 'g', 4, 64)
}
