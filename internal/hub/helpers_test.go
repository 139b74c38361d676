package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
)

// waits records the waits a client asked for, without spending them.
type waits struct {
	mu sync.Mutex
	ds []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.ds = append(w.ds, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ds)
}

// syncBuffer is a process's or a logger's output, safe to read while it is written.
type syncBuffer = proctest.Buffer

type env struct {
	hub   *hubtest.Hub
	c     *Client
	cache string
	waits *waits
	logs  *syncBuffer
}

// newEnv starts a fake Hub with repos and a client for it whose waits are
// recorded, not spent, and whose logs are captured.
func newEnv(t *testing.T, opts func(*Options), repos ...hubtest.Repo) *env {
	t.Helper()
	h := hubtest.New(t, repos...)
	e := &env{hub: h, cache: t.TempDir(), waits: &waits{}, logs: &syncBuffer{}}
	o := Options{
		Endpoint: h.URL(),
		CacheDir: e.cache,
		Backoff:  func(attempt int) time.Duration { return time.Duration(attempt) * time.Millisecond },
		Sleep:    e.waits.sleep,
		Logger:   slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if opts != nil {
		opts(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

// requests returns the logged requests of server ("hub", "cdn" or "" for
// both) whose path starts with prefix.
func (e *env) requests(server, prefix string) []hubtest.Request {
	var out []hubtest.Request
	for _, r := range e.hub.Requests() {
		if (server == "" || r.Server == server) && strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// manyRepos returns n repos "org/model-0000"… with descending downloads,
// ascending likes, and trending scores in another order.
func manyRepos(n int) []hubtest.Repo {
	repos := make([]hubtest.Repo, n)
	for i := range repos {
		repos[i] = hubtest.Repo{
			ID:            fmt.Sprintf("org/model-%04d", i),
			PipelineTag:   []string{"text-generation", "fill-mask", "image-classification"}[i%3],
			Library:       []string{"transformers", "timm"}[i%2],
			Downloads:     int64(1_000_000 - i),
			Likes:         int64(i),
			TrendingScore: float64((i * 7) % n),
			Config:        map[string]any{"model_type": "bert"},
			Files:         map[string][]byte{"config.json": []byte(`{"model_type":"bert"}`)},
		}
	}
	return repos
}

// smallModel is a repo with git and LFS files, a nested file, and files
// outside the allowlist.
func smallModel(id string) hubtest.Repo {
	weights := bytes.Repeat([]byte("safetensors-weights-"), 5000) // 100 000 bytes
	return hubtest.Repo{
		ID:          id,
		PipelineTag: "text-generation",
		Library:     "transformers",
		Downloads:   1000,
		Config:      map[string]any{"architectures": []any{"GPT2LMHeadModel"}, "model_type": "gpt2"},
		Files: map[string][]byte{
			"config.json":           []byte(`{"architectures":["GPT2LMHeadModel"],"model_type":"gpt2"}`),
			"tokenizer.json":        []byte(`{"version":"1.0"}`),
			"1_Pooling/config.json": []byte(`{"pooling_mode_mean_tokens":true}`),
			"model.safetensors":     weights,
			"pytorch_model.bin":     []byte("pickle!"),
			"modeling_evil.py":      []byte("import os"),
		},
		LFS: map[string]bool{"model.safetensors": true, "pytorch_model.bin": true},
	}
}

// reasonOf is the skip reason carried by err (an *Error anywhere in its
// chain), or "" when err says nothing about the model.
func reasonOf(err error) compat.Reason {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Reason()
	}
	return ""
}
