package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/app"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/internal/webhook"
	"github.com/google-pytorch/torchtpu-scanner/internal/webhook/webhooktest"
)

// runServer runs the real App's Serve with serve's flags until stop,
// which waits for it to end (and is called when the test ends).
func runServer(t *testing.T, args []string, env map[string]string) (base string, stop func()) {
	t.Helper()
	cfg, _, err := config.Parse(config.CmdServe, args, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	serving := servingAddr{addr: make(chan string, 1)}
	a, err := app.New(ctx, cfg, slog.New(serving), "test")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("serve did not stop in 30 s")
			}
			a.Close()
		})
	}
	t.Cleanup(stop)
	select {
	case addr := <-serving.addr:
		return "http://" + addr, stop
	case err := <-done:
		t.Fatalf("serve ended before it served: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not say where it serves within 30s")
	}
	return "", stop
}

func postJSON(t *testing.T, url string, body any, header map[string]string) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestARequestedModelEndsWithAResultOnItsPage: a model outside the
// scanned listing is asked for through the API, checked with the (fake)
// Hub, tested when the server is idle by the stand-in harness, and joins
// the table with its result; requests for a gated, a missing and a
// non-transformers model are refused with the reason.
func TestARequestedModelEndsWithAResultOnItsPage(t *testing.T) {
	repos := llamaRepos("top/model-a", "top/model-b")
	asked := configRepo("asked/tiny-llama", "llama", "text-generation", 3)
	gated := configRepo("meta/gated-llama", "llama", "text-generation", 2)
	gated.Gated = "manual"
	timm := hubtest.Repo{ID: "timm/resnet-tiny", PipelineTag: "image-classification", Library: "timm", Downloads: 1,
		Files: map[string][]byte{"config.json": []byte(`{"architecture": "resnet18"}`)}}
	h := hubtest.New(t, append(repos, asked, gated, timm)...)
	dir := t.TempDir()
	args := append(standinArgs(t, h, filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub"))[1:],
		"--addr", "127.0.0.1:0", "--no-schedule", "--limit", "2", "--request-queue", "5", "--request-rate", "20")
	base, _ := runServer(t, args, nil)

	if code, body := postJSON(t, base+"/api/v1/requests", map[string]string{"model": "asked/tiny-llama"}, nil); code != http.StatusAccepted || body["state"] != "queued" {
		t.Fatalf("request: %d %v", code, body)
	}
	for _, tc := range []struct{ model, reason string }{
		{"meta/gated-llama", "gated"}, {"nobody/missing", "not_found"}, {"timm/resnet-tiny", "unsupported_library"},
	} {
		code, body := postJSON(t, base+"/api/v1/requests", map[string]string{"model": tc.model}, nil)
		if code != http.StatusUnprocessableEntity || body["reason"] != tc.reason || body["error"] == "" {
			t.Errorf("%s: %d %v, want 422 %s", tc.model, code, body, tc.reason)
		}
	}
	// Before its test the model's page is a 404 that says it was requested.
	_, body := postJSON(t, base+"/api/v1/requests", map[string]string{"model": "asked/tiny-llama"}, nil)
	id := int64(body["id"].(float64))
	var req map[string]any
	testenv.Eventually(t, "the request to be done", 60*time.Second, func() bool {
		getJSON(t, fmt.Sprintf("%s/api/v1/requests/%d", base, id), &req)
		return req["state"] == "done" || req["state"] == "failed"
	})
	if req["state"] != "done" || req["status"] != "pass" || req["scan_id"] == nil {
		t.Fatalf("request %v", req)
	}
	page := get(t, base+"/models/asked/tiny-llama", http.StatusOK)
	if !strings.Contains(page, `<span class="status st-pass">pass</span>`) || strings.Contains(page, "Request a test") {
		t.Errorf("the model's page after its test:\n%.2000s", page)
	}
	var list struct {
		Models []compat.Model `json:"models"`
	}
	getJSON(t, base+"/api/v1/models?target=cpu&limit=100", &list)
	found := false
	for _, m := range list.Models {
		found = found || m.ID == "asked/tiny-llama" && m.Result != nil && m.Result.Status == compat.StatusPass
	}
	if !found {
		t.Errorf("the tested model is not in the table: %+v", list.Models)
	}
	// The scan that ran it was a request's, after nothing else.
	var scans struct {
		Scans []struct {
			Trigger string `json:"trigger"`
			Status  string `json:"status"`
		} `json:"scans"`
	}
	getJSON(t, base+"/api/v1/scans", &scans)
	if len(scans.Scans) != 1 || scans.Scans[0].Trigger != "request" || scans.Scans[0].Status != "done" {
		t.Errorf("scans %+v", scans.Scans)
	}
}

// TestWebhooksDeliverEveryChangeOnce: a webhook endpoint that hangs while
// a scan runs does not slow the scan; it then is down across a restart of
// the server, comes back, and gets every change exactly once, signed.
func TestWebhooksDeliverEveryChangeOnce(t *testing.T) {
	const secret = "webhook-secret-0123456789"
	ids := []string{"hook/m-0", "hook/m-1", "hook/m-2", "hook/m-3", "hook/m-4"}
	h := hubtest.New(t, llamaRepos(ids...)...)
	dir := t.TempDir()
	rcv := webhooktest.New(t, secret)
	rcv.URLPrefix = "https://compat.example.org/models/"
	hooksFile := filepath.Join(dir, "hooks.json")
	hooks := fmt.Sprintf(`[{"name": "ci", "url": "http://%s/hooks/secretpath", "secret": %q}]`, rcv.Addr(), secret)
	if err := os.WriteFile(hooksFile, []byte(hooks), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(limit string) []string {
		return append(standinArgs(t, h, filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub"))[1:],
			"--addr", "127.0.0.1:0", "--no-schedule", "--limit", limit, "--webhooks", hooksFile, "--public-url", "https://compat.example.org")
	}
	env := map[string]string{"SCANNER_ADMIN_TOKEN": "admin-secret"}
	admin := map[string]string{"Authorization": "Bearer admin-secret"}
	scanDone := func(base string, n int) bool {
		var scans struct {
			Scans []struct {
				Status string `json:"status"`
			} `json:"scans"`
		}
		getJSON(t, base+"/api/v1/scans", &scans)
		return len(scans.Scans) == n && scans.Scans[0].Status == "done"
	}

	// 1. The endpoint hangs: the scan of three models ends all the same,
	// while the first POST is still held.
	rcv.Hang()
	base, stop := runServer(t, serve("3"), env)
	if code, body := postJSON(t, base+"/api/v1/scans", nil, admin); code != http.StatusAccepted {
		t.Fatalf("scan: %d %v", code, body)
	}
	testenv.Eventually(t, "the first scan", 60*time.Second, func() bool { return scanDone(base, 1) })
	// The first change was POSTed as soon as it was recorded, and hangs.
	if rcv.Tries() != 1 || len(rcv.Counts()) != 0 {
		t.Errorf("when the scan ended: %d tries, %v accepted; want the first POST hanging", rcv.Tries(), rcv.Counts())
	}
	// 2. Down, and the server restarts (shutdown does not wait for the hung POST).
	start := time.Now()
	stop()
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("shutdown took %v with a webhook hanging", d)
	}
	rcv.Down()
	rcv.Release()
	base, stop = runServer(t, serve("5"), env)
	if code, _ := postJSON(t, base+"/api/v1/scans", nil, admin); code != http.StatusAccepted {
		t.Fatalf("second scan: %d", code)
	}
	testenv.Eventually(t, "the second scan", 60*time.Second, func() bool { return scanDone(base, 2) })
	testenv.Eventually(t, "a failed try", 30*time.Second, func() bool {
		return strings.Contains(get(t, base+"/metrics", 200), `scanner_webhook_failures_total{webhook="ci"} `) &&
			!strings.Contains(get(t, base+"/metrics", 200), `scanner_webhook_failures_total{webhook="ci"} 0`)
	})
	// 3. Up again: every change arrives, once.
	rcv.Up()
	testenv.Eventually(t, "five changes", 90*time.Second, func() bool { return len(rcv.Counts()) == 5 })
	time.Sleep(time.Second) // room for a repeat to show
	metrics := get(t, base+"/metrics", 200)
	// The operator's view of the webhook agrees.
	var status struct {
		Webhooks []webhook.Status `json:"webhooks"`
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/webhooks", nil)
	req.Header.Set("Authorization", admin["Authorization"])
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		err := json.NewDecoder(resp.Body).Decode(&status)
		resp.Body.Close()
		if err != nil || len(status.Webhooks) != 1 || status.Webhooks[0].Webhook != "ci" || status.Webhooks[0].Delivered != 5 || status.Webhooks[0].Pending != 0 {
			t.Errorf("GET /api/v1/webhooks: %d %+v %v", resp.StatusCode, status, err)
		}
	}
	stop()
	for id, n := range rcv.Counts() {
		if n != 1 {
			t.Errorf("event %d delivered %d times", id, n)
		}
	}
	if bad := rcv.Bad(); len(bad) > 0 {
		t.Errorf("bad deliveries: %v", bad)
	}
	if !strings.Contains(metrics, `scanner_webhook_deliveries_total{webhook="ci"} 5`) {
		t.Errorf("metrics:\n%s", grepLines(metrics, "webhook"))
	}
	if strings.Contains(metrics, secret) || strings.Contains(metrics, "secretpath") {
		t.Error("metrics show the secret or the URL")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
