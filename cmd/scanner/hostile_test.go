package main

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// hugeConfigBytes is the config.json the hostile Hub serves: 2 GB,
// generated as it is sent.
const hugeConfigBytes = 2 << 30

// TestScanAgainstHostileHubProcess runs a real `scanner scan` process
// against a Hub that serves a 2 GB config.json (once with its size
// announced, once streamed without one) and ids that are terminal escapes:
// the process's peak RSS stays under 300 MB, both models end as
// error/config_error with nothing in the cache, and neither the database
// nor the process's output holds an invalid id or a raw control character.
func TestScanAgainstHostileHubProcess(t *testing.T) {
	repos := llamaRepos("ok/model", "huge/announced", "huge/streamed")
	for _, id := range []string{"evil/\x1b]0;pwned\x07", "evil/\x1b[2J", "../../etc/passwd", "<script>alert(1)</script>"} {
		r := llamaRepos(id)[0]
		r.Downloads = 5000
		repos = append(repos, r)
	}
	h := hubtest.New(t, repos...)
	h.SetHugeFile("huge/announced", "config.json", hugeConfigBytes, true)
	h.SetHugeFile("huge/streamed", "config.json", hugeConfigBytes, false)
	dir := t.TempDir()
	db, cache := filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub")
	args := standinArgs(t, h, db, cache)
	args = append(args[:len(args)-2], "--log-format", "text") // what a person reads

	cmd, out := scannerProcess(t, args...)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("scanner scan: %v\n%s", err, out.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("scanner scan still running after 3 minutes:\n%s", out.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	peak := ru.Maxrss << 10 // KiB on Linux
	t.Logf("peak RSS %d MiB", peak>>20)
	if peak > 300<<20 {
		t.Errorf("peak RSS %d MiB, want under 300 MiB", peak>>20)
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for _, id := range []string{"huge/announced", "huge/streamed"} {
		r, err := st.LatestResult(ctx, id, compat.TargetCPU)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if r.Status != compat.StatusError || r.FailureClass == nil || *r.FailureClass != compat.ClassConfigError ||
			r.Message == nil || !strings.Contains(*r.Message, "config.json") {
			t.Errorf("%s: %s %v %q, want error/config_error about config.json", id, r.Status, r.FailureClass, str(r.Message))
		}
		if files := regularFilesUnder(hub.RepoDir(cache, id)); len(files) > 0 {
			t.Errorf("%s: stored %v", id, files)
		}
	}
	if r, err := st.LatestResult(ctx, "ok/model", compat.TargetCPU); err != nil || r.Status != compat.StatusPass {
		t.Errorf("ok/model: %v %v", r.Status, err)
	}
	models, _, err := st.ListModels(ctx, store.ModelQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(models) != 3 {
		var ids []string
		for _, m := range models {
			ids = append(ids, m.ID)
		}
		t.Errorf("stored models %q, want the 3 valid ones", ids)
	}
	if i := strings.IndexAny(out.String(), "\x1b\x07\x00"); i >= 0 {
		t.Errorf("the output holds a raw control character at %d:\n%q", i, out.String())
	}
	if n := strings.Count(out.String(), "dropped a model whose id is not a Hub id"); n != 4 {
		t.Errorf("%d warnings about invalid ids, want 4:\n%s", n, out.String())
	}
}

// regularFilesUnder lists the regular files under dir.
func regularFilesUnder(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}
