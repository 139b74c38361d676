//go:build browser

package browsertest

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// requestSite serves a store with org/known (in the table, untested) and
// test requests checked against a fake Hub that has it.
func requestSite(t *testing.T) string {
	t.Helper()
	llama := map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama"}
	h := hubtest.New(t, hubtest.Repo{ID: "org/known", PipelineTag: "text-generation", Library: "transformers", Config: llama,
		Files: map[string][]byte{"config.json": []byte(`{"model_type": "llama"}`)}})
	client, err := hub.New(hub.Options{Endpoint: h.URL(), CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.MustOpen(t)
	if err := db.UpsertModels(context.Background(), []store.ModelUpsert{{ID: "org/known", Task: "text-generation", Library: "transformers"}}); err != nil {
		t.Fatal(err)
	}
	desk, err := requests.New(requests.Config{Store: db, Hub: client, QueueCap: 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Store: db, Version: "browsertest", APIRate: -1, Requests: desk, RequestRate: 5})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Listen(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// TestRequestATestWithoutJavaScript: the "Request a test" button of an
// untested model is a plain form: with scripts off, a click queues the
// request (the browser's own Origin and Sec-Fetch-Site pass the checks)
// and lands on the request's page; the model's page then shows it.
func TestRequestATestWithoutJavaScript(t *testing.T) {
	ctx := newBrowser(t)
	base := requestSite(t)
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "open the untested model", chromedp.Navigate(base+"/models/org/known"),
		chromedp.WaitVisible(chromedp.CSS(`form.request-test button[type=submit]`)))
	screenshot(t, ctx, "request-form.png", true)
	step(t, ctx, "request a test", chromedp.Click(chromedp.CSS(`form.request-test button[type=submit]`)))
	waitURL(t, ctx, "/requests/")
	text := evalDevTools[string](t, ctx, `document.querySelector("p.request-state").textContent`)
	for _, want := range []string{"org/known", "queued", "number 1 in the queue"} {
		if !strings.Contains(text, want) {
			t.Errorf("the request's page says %q; want %q in it", text, want)
		}
	}
	screenshot(t, ctx, "request-page.png", true)
	step(t, ctx, "back to the model", chromedp.Navigate(base+"/models/org/known"), chromedp.WaitVisible(chromedp.CSS("p.request-state")))
	if n := evalDevTools[int](t, ctx, `document.querySelectorAll("form.request-test").length`); n != 0 {
		t.Errorf("the model's page still offers the form after the request")
	}
}

// evalDevTools evaluates js as DevTools does, which works with the
// page's scripts off.
func evalDevTools[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.EvaluateAsDevTools[T](js))
	if err != nil {
		t.Fatalf("evaluate %q: %v", js, err)
	}
	return v
}

// TestARequestPageReloadsUntilStopped: with scripts on, a queued request's
// page says it reloads every 30 seconds and offers a button that stops it
// (no meta refresh, which a reader cannot stop); a click stops the timer
// and says so.
func TestARequestPageReloadsUntilStopped(t *testing.T) {
	ctx := newBrowser(t)
	base := requestSite(t)
	step(t, ctx, "open the untested model", chromedp.Navigate(base+"/models/org/known"),
		chromedp.WaitVisible(chromedp.CSS(`form.request-test button[type=submit]`)))
	step(t, ctx, "request a test", chromedp.Click(chromedp.CSS(`form.request-test button[type=submit]`)))
	waitURL(t, ctx, "/requests/")
	step(t, ctx, "the stop button", chromedp.WaitVisible(chromedp.CSS(`button[data-stop-refresh]`)))
	if n := eval[int](t, ctx, `document.querySelectorAll('meta[http-equiv="refresh"]').length`); n != 0 {
		t.Errorf("the page has %d meta refresh", n)
	}
	if note := eval[string](t, ctx, `document.querySelector("[data-refresh-note]").textContent`); note != "this page reloads every 30 seconds." {
		t.Errorf("the note says %q", note)
	}
	step(t, ctx, "stop reloading", chromedp.Click(chromedp.CSS(`button[data-stop-refresh]`)))
	if note := eval[string](t, ctx, `document.querySelector("[data-refresh-note]").textContent`); !strings.HasPrefix(note, "reloading stopped") {
		t.Errorf("after the click the note says %q", note)
	}
	if hidden := eval[bool](t, ctx, `document.querySelector("button[data-stop-refresh]").hidden`); !hidden {
		t.Errorf("the stop button is still shown after the click")
	}
}
