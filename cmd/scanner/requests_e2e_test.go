package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestAnAdminScanDoesNotWaitForRequestedProbes: while a batch of five
// requested models that take 2 s each is being probed (the stand-in
// harness), a scan the admin asks for starts within about one probe's
// time, not after the batch; the requests not probed yet are tested after
// it.
func TestAnAdminScanDoesNotWaitForRequestedProbes(t *testing.T) {
	const probe = 2 * time.Second
	asked := sleepRepos("asked", int(probe/time.Millisecond), 6)
	h := hubtest.New(t, append(llamaRepos("top/model-a"), asked...)...)
	dir := t.TempDir()
	args := append(standinArgs(t, h, filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub"))[1:],
		"--addr", "127.0.0.1:0", "--no-schedule", "--limit", "1", "--request-queue", "10", "--request-rate", "20", "--request-share", "1", "--rate-limit", "0")
	base, _ := runServer(t, args, map[string]string{"SCANNER_ADMIN_TOKEN": "admin-secret"})
	var ids []int64
	ask := func(model string) {
		code, body := postJSON(t, base+"/api/v1/requests", map[string]string{"model": model}, nil)
		if code != http.StatusAccepted {
			t.Fatalf("request %s: %d %v", model, code, body)
		}
		ids = append(ids, int64(body["id"].(float64)))
	}
	state := func(id int64) string {
		var req map[string]any
		getJSON(t, fmt.Sprintf("%s/api/v1/requests/%d", base, id), &req)
		return fmt.Sprint(req["state"])
	}
	// The first request runs alone; the five asked meanwhile are the next
	// batch, one scan of five probes.
	ask(asked[0].ID)
	testenv.Eventually(t, "the first request to run", 60*time.Second, func() bool { return state(ids[0]) == "running" })
	for _, r := range asked[1:] {
		ask(r.ID)
	}
	testenv.Eventually(t, "the batch of five to run", 60*time.Second, func() bool { return state(ids[1]) == "running" })
	time.Sleep(probe / 2) // its first probe is in flight
	asking := time.Now()
	if code, body := postJSON(t, base+"/api/v1/scans", nil, map[string]string{"Authorization": "Bearer admin-secret"}); code != http.StatusAccepted {
		t.Fatalf("admin scan: %d %v", code, body)
	}
	type scanRow struct {
		Trigger string `json:"trigger"`
		Status  string `json:"status"`
	}
	manualScan := func() *scanRow {
		var scans struct {
			Scans []scanRow `json:"scans"`
		}
		getJSON(t, base+"/api/v1/scans", &scans)
		for _, sc := range scans.Scans {
			if sc.Trigger == "manual" {
				return &sc
			}
		}
		return nil
	}
	testenv.Eventually(t, "the admin scan to start", 60*time.Second, func() bool { return manualScan() != nil })
	// The probe in flight (2 s, begun before the ask) finishes first;
	// then the scan starts. Before, it waited for the whole batch (5 × 2 s).
	if waited := time.Since(asking); waited > 2*probe {
		t.Errorf("the admin scan started %v after it was asked for, with requested probes of %v each; want within about one", waited, probe)
	}
	testenv.Eventually(t, "every request to be tested", 120*time.Second, func() bool {
		for _, id := range ids {
			if state(id) != "done" {
				return false
			}
		}
		return true
	})
	if sc := manualScan(); sc == nil || sc.Status != "done" {
		t.Errorf("the admin scan: %+v", sc)
	}
}
