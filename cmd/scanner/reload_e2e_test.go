package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestSIGHUPReloadsKnownIssuesAndWebhooks: SIGHUP to a real `serve` no
// longer kills it: it reads the known-issues and webhooks files again (the
// API shows the new issue at once, and the next change goes to the new
// webhook, none to the old); a bad file of each (a signature given twice,
// no JSON) is refused, logged, and the ones in use kept; SIGTERM still
// stops it gracefully. The series of a webhook the reload took away leave
// /metrics; those of one kept stay.
func TestSIGHUPReloadsKnownIssuesAndWebhooks(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "scanner.db")
	record := func(id string, status compat.Status, at time.Time) {
		t.Helper()
		st, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.UpsertModels(context.Background(), []store.ModelUpsert{{ID: id, SHA: "s"}}); err != nil {
			t.Fatal(err)
		}
		r := compat.Result{Target: compat.TargetCPU, Status: status, Revision: "s", TestedAt: at, Mode: compat.Ptr(compat.ModeArch),
			Runtime: compat.Runtime{Torch: "2.9.0", Harness: "1"}}
		if status == compat.StatusFail {
			sig := "unsupported_op:aten::_fft_r2c"
			r.Stage, r.FailureClass, r.Op, r.Signature = compat.Ptr(compat.StageForward), compat.Ptr(compat.ClassUnsupportedOp), compat.Ptr("aten::_fft_r2c"), &sig
			r.Message = compat.Ptr("NotImplementedError")
		}
		if _, err := st.RecordResult(context.Background(), id, r); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	record("org/a", compat.StatusFail, t0)
	record("org/b", compat.StatusFail, t0) // changed while serving

	var mu sync.Mutex
	got := map[string]int{} // POSTs by path
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path]++
		mu.Unlock()
	}))
	defer rcv.Close()
	posts := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return got[path]
	}
	known, hooks := filepath.Join(dir, "known.json"), filepath.Join(dir, "hooks.json")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	issue := func(url string) string {
		return fmt.Sprintf(`{"unsupported_op:aten::_fft*": {"title": "FFT", "url": %q, "state": "open"}}`, url)
	}
	hook := func(path string) string {
		return fmt.Sprintf(`[{"name": "ci", "url": "%s%s", "secret": "0123456789abcdef0123"}]`, rcv.URL, path)
	}
	write(known, issue("https://tracker.example/1"))
	// A second webhook the reload takes away: its series leave /metrics.
	write(hooks, strings.Replace(hook("/old"), "[", fmt.Sprintf(`[{"name": "gone", "url": "%s/gone", "secret": "0123456789abcdef0123"}, `, rcv.URL), 1))

	cmd, out := fleetProcess(t, nil, "serve", "--no-schedule", "--addr", "127.0.0.1:0", "--db", db, "--cache-dir", filepath.Join(dir, "hub"),
		"--hub-endpoint", "http://127.0.0.1:9", "--rate-limit", "0", "--log-format", "json", "--known-issues", known, "--webhooks", hooks)
	base := servingAt(t, out)
	issueURL := func() string {
		var m struct {
			Results []struct {
				KnownIssue *compat.KnownIssue `json:"known_issue"`
			} `json:"results"`
		}
		getJSON(t, base+"/api/v1/models/org/a", &m)
		if len(m.Results) == 0 || m.Results[0].KnownIssue == nil {
			return ""
		}
		return m.Results[0].KnownIssue.URL
	}
	if u := issueURL(); u != "https://tracker.example/1" {
		t.Fatalf("before the reload the known issue is %q", u)
	}
	series := func(label string) []string {
		var out []string
		for _, l := range strings.Split(get(t, base+"/metrics", http.StatusOK), "\n") {
			if strings.HasPrefix(l, "scanner_webhook_") && strings.Contains(l, `{webhook="`+label+`"}`) {
				out = append(out, strings.Fields(l)[0])
			}
		}
		return out
	}
	allSeries := []string{`scanner_webhook_deliveries_total{webhook="%s"}`, `scanner_webhook_expired_total{webhook="%s"}`,
		`scanner_webhook_failures_total{webhook="%s"}`, `scanner_webhook_pending{webhook="%s"}`, `scanner_webhook_refused_total{webhook="%s"}`}
	want := func(label string) []string {
		var out []string
		for _, f := range allSeries {
			out = append(out, fmt.Sprintf(f, label))
		}
		return out
	}
	for _, l := range []string{"ci", "gone"} {
		if got := series(l); !slices.Equal(got, want(l)) {
			t.Fatalf("before the reload webhook %s has the series %q, want %q", l, got, want(l))
		}
	}

	// 1. Both files changed, then SIGHUP.
	write(known, issue("https://tracker.example/2"))
	write(hooks, hook("/new"))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFleet(t, 30*time.Second, "the reload", out, func() bool {
		return len(out.logLines("reload: known issues read again")) == 1 && len(out.logLines("reload: webhooks read again")) == 1
	})
	if cmd.ProcessState != nil {
		t.Fatalf("SIGHUP ended serve:\n%s", lastLines(out.String(), 20))
	}
	if u := issueURL(); u != "https://tracker.example/2" {
		t.Errorf("after the reload the known issue is %q", u)
	}
	if got := series("gone"); len(got) != 0 {
		t.Errorf("the webhook the reload took away still has the series %q on /metrics", got)
	}
	if got := series("ci"); !slices.Equal(got, want("ci")) {
		t.Errorf("the webhook kept has the series %q, want %q", got, want("ci"))
	}
	record("org/b", compat.StatusPass, t0.Add(time.Minute)) // a change: to the new webhook only
	waitFleet(t, 60*time.Second, "a delivery to the new webhook", out, func() bool { return posts("/new") > 0 })

	// 2. Bad files: each refused, the ones in use kept.
	write(known, `{"oom": {"title": "A", "url": "https://tracker.example/a", "state": "open"},
 "oom": {"title": "B", "url": "https://tracker.example/b", "state": "open"}}`)
	write(hooks, `[{"url": `)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFleet(t, 30*time.Second, "the refusals", out, func() bool {
		return len(out.logLines("reload: known issues refused, the ones in use are kept")) == 1 &&
			len(out.logLines("reload: webhooks refused, the ones in use are kept")) == 1
	})
	for _, l := range out.logLines("reload: known issues refused, the ones in use are kept") {
		if e := fmt.Sprint(l["err"]); !strings.Contains(e, known) || !strings.Contains(e, `"oom" is given twice`) {
			t.Errorf("the refusal says %q; want the file and the signature given twice", e)
		}
	}
	if u := issueURL(); u != "https://tracker.example/2" {
		t.Errorf("after a refused reload the known issue is %q", u)
	}
	before := posts("/new")
	record("org/b", compat.StatusFail, t0.Add(2*time.Minute))
	waitFleet(t, 60*time.Second, "a delivery to the webhook kept", out, func() bool { return posts("/new") > before })
	if n := posts("/old"); n != 0 {
		t.Errorf("the webhook replaced by the reload got %d POSTs", n)
	}
	stopGracefully(t, "serve", cmd)
	if len(out.logLines("shutting down: stopping scans and webhooks")) != 1 {
		t.Errorf("no graceful shutdown:\n%s", lastLines(out.String(), 20))
	}
}
