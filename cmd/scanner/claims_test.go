package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// timedRun is when and where one stand-in probe ran (its result's message).
type timedRun struct {
	ID    string
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	TPU   *string `json:"tpu_visible_devices"`
	CUDA  *string `json:"cuda_visible_devices"`
}

func (r timedRun) overlaps(o timedRun) bool { return r.Start < o.End && o.Start < r.End }

func (r timedRun) String() string {
	return fmt.Sprintf("%s %.2f-%.2f", r.ID, r.Start, r.End)
}

// TestDevicesProbeAtOnce: `scan --devices 2` runs two harness processes at
// once, each pinned to its own device: the stand-in records when it ran and
// the pinning it saw, and the runs on device 0 and device 1 overlap in
// time, while no device ever runs two at once.
func TestDevicesProbeAtOnce(t *testing.T) {
	var ids []string
	for i := range 6 {
		ids = append(ids, fmt.Sprintf("dev/timed-%d", i))
	}
	h := hubtest.New(t, llamaRepos(ids...)...)
	dir := t.TempDir()
	db := filepath.Join(dir, "scanner.db")
	var out, errOut bytes.Buffer
	if code := runWithEnv(t, append(standinArgs(t, h, db, filepath.Join(dir, "hub")), "--devices", "2"), &out, &errOut); code != 0 {
		t.Fatalf("scan --devices 2 exited %d:\n%s", code, errOut.String())
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	byDevice := map[string][]timedRun{}
	for _, id := range ids {
		r, err := st.LatestResult(context.Background(), id, compat.TargetCPU)
		if err != nil || r.Status != compat.StatusPass || r.Message == nil {
			t.Fatalf("%s: %v %v", id, r.Status, err)
		}
		run := timedRun{ID: id}
		if err := json.Unmarshal([]byte(*r.Message), &run); err != nil {
			t.Fatalf("%s: message %q: %v", id, *r.Message, err)
		}
		if run.TPU == nil || run.CUDA == nil || *run.TPU != *run.CUDA {
			t.Fatalf("%s: pinned to TPU %v, CUDA %v: want one device, named the same for both", id, run.TPU, run.CUDA)
		}
		byDevice[*run.TPU] = append(byDevice[*run.TPU], run)
	}
	if devs := slices.Sorted(func(yield func(string) bool) {
		for d := range byDevice {
			if !yield(d) {
				return
			}
		}
	}); !slices.Equal(devs, []string{"0", "1"}) {
		t.Fatalf("probes ran pinned to devices %v, want 0 and 1", devs)
	}
	for d, runs := range byDevice {
		for i, a := range runs {
			for _, b := range runs[i+1:] {
				if a.overlaps(b) {
					t.Errorf("device %s ran %s and %s at once", d, a.ID, b.ID)
				}
			}
		}
	}
	overlapping := 0
	for _, a := range byDevice["0"] {
		for _, b := range byDevice["1"] {
			if a.overlaps(b) {
				overlapping++
			}
		}
	}
	if overlapping == 0 {
		t.Errorf("no probe on device 0 overlapped one on device 1: %v", byDevice)
	}
	t.Logf("%d pairs of probes ran at once on devices 0 and 1", overlapping)
}

// TestBackupWhileServing runs `scanner backup` as its own process, again
// and again, while a real scanner server process records a scan: every
// copy opens, passes integrity_check and holds a consistent prefix of the
// scan, the copies see the scan advance, and the server finishes its scan.
func TestBackupWhileServing(t *testing.T) {
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("backup/model-%02d", i))
	}
	h := hubtest.New(t, llamaRepos(ids...)...)
	dir := t.TempDir()
	db := filepath.Join(dir, "scanner.db")
	args := standinArgs(t, h, db, filepath.Join(dir, "hub"))[1:] // serve takes scan's flags
	// An empty database: the server's first scan starts at once.
	server, serverOut := scannerProcess(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--schedule", "@every 24h"}, args...)...)
	defer server.Process.Kill()

	deadline := time.Now().Add(90 * time.Second)
	var counts []int
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the scan did not finish in 90 s (copies held %v results):\n%s", counts, serverOut.String())
		}
		before, err := countResultsQuiet(db)
		if err != nil {
			time.Sleep(50 * time.Millisecond) // the server has not created the database yet
			continue
		}
		copyPath := filepath.Join(dir, fmt.Sprintf("copy-%03d.db", i))
		backup, backupOut := scannerProcess(t, "backup", copyPath, "--db", db)
		if err := backup.Wait(); err != nil {
			t.Fatalf("backup %d: %v\n%s", i, err, backupOut.String())
		}
		after, _ := countResultsQuiet(db)
		n := copyResults(t, copyPath)
		if n < before || n > after {
			t.Fatalf("copy %d holds %d results; the database held %d before the backup and %d after", i, n, before, after)
		}
		counts = append(counts, n)
		if n == len(ids) {
			break
		}
	}
	t.Logf("results in successive copies: %v", counts)
	if distinct := len(slices.Compact(slices.Clone(counts))); distinct < 3 || counts[0] == len(ids) {
		t.Errorf("copies held %v results: want copies taken while the scan wrote (at least 3 different counts)", counts)
	}
}

// copyResults opens a backup, checks its integrity, and counts its models
// with a result.
func copyResults(t *testing.T, path string) int {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open %s: %v", filepath.Base(path), err)
	}
	defer st.Close()
	if ok, err := st.IntegrityCheck(context.Background()); ok != "ok" || err != nil {
		t.Fatalf("%s: integrity %q %v", filepath.Base(path), ok, err)
	}
	n, err := countResultsQuiet(path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
