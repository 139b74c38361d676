package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestServeUnderLoadWhileScanning starts the real server, asks it for a
// scan through the admin API, and loads the website and API from several
// clients on loopback while the scan writes: every answer must be a
// success (no "database is locked", no 5xx), and the scan's progress and
// the metrics must show up.
func TestServeUnderLoadWhileScanning(t *testing.T) {
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("load/model-%02d", i))
	}
	h := hubtest.New(t, llamaRepos(ids...)...)
	dir := t.TempDir()
	args := standinArgs(t, h, filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub"))[1:] // drop "scan"
	args = append(args, "--no-schedule", "--addr", "127.0.0.1:0", "--rate-limit", "0")
	base := startServer(t, args, map[string]string{"SCANNER_ADMIN_TOKEN": "admin-secret"})

	// Without the token the write route refuses; with it the scan is queued.
	if resp, err := http.Post(base+"/api/v1/scans", "application/json", nil); err != nil || resp.StatusCode/100 != 4 {
		t.Fatalf("POST without token: %v %v", resp.StatusCode, err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/scans", nil)
	req.Header.Set("Authorization", "Bearer admin-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST with token: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()

	// Load starts once the scan has listed the models (ids 404 before that).
	testenv.Eventually(t, "the condition", 30*time.Second, func() bool {
		var s struct {
			Scans []struct {
				Planned int `json:"planned"`
			} `json:"scans"`
		}
		getJSON(t, base+"/api/v1/scans", &s)
		return len(s.Scans) == 1 && s.Scans[0].Planned > 0
	})

	// The load window must overlap the scan's writes: models recorded
	// before and after it show the scan advanced while the clients read.
	doneBefore := scanDoneCount(t, base)
	paths := []string{"/", "/api/v1/models?limit=50", "/api/v1/summary", "/badge/load/model-03.svg?target=cpu",
		"/api/v1/models/load/model-01", "/feed.json", "/api/v1/failures", "/export.csv", "/models/load/model-02"}
	var ok, bad atomic.Int64
	var firstErr atomic.Value
	stop := time.Now().Add(8 * time.Second)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; time.Now().Before(stop) && i < 5000; i++ {
				resp, err := client.Get(base + paths[i%len(paths)])
				if err != nil {
					bad.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: %d %s", paths[i%len(paths)], resp.StatusCode, body))
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	doneAfter := scanDoneCount(t, base)
	if doneAfter <= doneBefore || doneBefore >= len(ids) {
		t.Fatalf("the scan recorded %d models before the load and %d after: it did not write during the load window", doneBefore, doneAfter)
	}
	t.Logf("the scan recorded models %d to %d during the load window", doneBefore, doneAfter)
	if bad.Load() > 0 {
		t.Fatalf("%d of %d requests failed under load while scanning; first: %v", bad.Load(), bad.Load()+ok.Load(), firstErr.Load())
	}
	t.Logf("%d requests, all 200, while the scan wrote", ok.Load())

	// The scan finishes and its progress is visible through the API.
	var scans struct {
		Scans []struct {
			ID      int64  `json:"id"`
			Status  string `json:"status"`
			Planned int    `json:"planned"`
			Done    int    `json:"done"`
		} `json:"scans"`
	}
	testenv.EventuallyShowing(t, "the scan to be done", 60*time.Second, func() bool {
		getJSON(t, base+"/api/v1/scans", &scans)
		return len(scans.Scans) == 1 && scans.Scans[0].Status == "done"
	}, func() string { return fmt.Sprintf("scans %+v", scans) })
	if s := scans.Scans[0]; s.Planned != len(ids) || s.Done != len(ids) {
		t.Errorf("scan progress %+v", s)
	}
	var one map[string]any
	getJSON(t, fmt.Sprintf("%s/api/v1/scans/%d", base, scans.Scans[0].ID), &one)
	if b, _ := json.Marshal(one); !strings.Contains(string(b), `"done"`) {
		t.Errorf("scan by id: %s", b)
	}
	metrics := get(t, base+"/metrics", http.StatusOK)
	for _, want := range []string{`scanner_probes_total{status="pass"} 12`, `scanner_scans_total{status="done"} 1`,
		"scanner_device_busy_fraction", `scanner_hub_requests_total{code="200"}`, "scanner_probe_duration_seconds_bucket"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// scanDoneCount is how many models the one scan has recorded so far.
func scanDoneCount(t *testing.T, base string) int {
	t.Helper()
	var s struct {
		Scans []struct {
			Done int `json:"done"`
		} `json:"scans"`
	}
	getJSON(t, base+"/api/v1/scans", &s)
	if len(s.Scans) != 1 {
		t.Fatalf("%d scans, want 1", len(s.Scans))
	}
	return s.Scans[0].Done
}
