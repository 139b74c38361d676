//go:build browser

// Package browsertest drives the site in Debian's headless Chromium: the
// table, filters, sorting, a model page, the copy button, phone and dark
// layouts, and the site without JavaScript. It lives apart from package web,
// behind the build tag "browser", so that `go test ./...` stays fast:
//
//	go test -tags browser ./web/browsertest
//
// $CHROMIUM names the browser (default /usr/bin/chromium). Screenshots go
// to $ARTIFACTS_DIR (default artifacts/ at the repository root).
package browsertest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// defaultChromium is where Debian's chromium package puts the browser.
const defaultChromium = "/usr/bin/chromium"

// site starts the web server on a loopback port over a seeded store and
// returns its base URL.
func site(t *testing.T) string {
	t.Helper()
	db := storetest.MustOpen(t)
	storetest.MustSeed(t, db, 120, 400)
	ctx := context.Background()
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: "Qwen/Qwen3-0.6B", Task: "text-generation", Library: "transformers",
		Downloads: 9_000_000, SHA: strings.Repeat("c", 40)}}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if _, err := db.RecordResult(ctx, "Qwen/Qwen3-0.6B", compat.Result{
		Target: compat.TargetTPU, Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate), Mode: compat.Ptr(compat.ModeFull),
		Revision: strings.Repeat("c", 40), TestedAt: at, DurationS: 42,
		Runtime: storetest.Runtime, Metrics: compat.Metrics{TokensPerS: compat.Ptr(312.0), LoadS: compat.Ptr(3.2)},
		Repro: compat.Repro("Qwen/Qwen3-0.6B", strings.Repeat("c", 40), compat.TargetTPU, compat.ModeFull),
	}); err != nil {
		t.Fatal(err)
	}
	return serveStore(t, db)
}

// serveStore starts the web server over db on a loopback port until the
// test ends and returns its base URL.
func serveStore(t *testing.T, db *store.SQLite) string {
	t.Helper()
	srv, err := web.New(web.Config{Store: db, Version: "browsertest", APIRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := srv.Listen(ln); err != nil {
			t.Errorf("listen: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// newBrowser starts headless Chromium with a fresh profile and returns a
// tab's context. Without Chromium the test is skipped (failed under make
// test: testenv.Missing).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	chromiumPath := os.Getenv("CHROMIUM")
	if chromiumPath == "" {
		chromiumPath = defaultChromium
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		testenv.Missing(t, "browser tests need Chromium at %s (Debian: apt-get install chromium; `make test` installs it): %v", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser now, without a deadline (a deadline on the first
	// run would bound the browser's whole life).
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return ctx
}

// artifactsDir is $ARTIFACTS_DIR, or artifacts/ at the repository root.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "artifacts")
				break
			}
			if filepath.Dir(d) == d {
				dir = filepath.Join(wd, "artifacts")
				break
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves the whole page, or only the viewport, as a PNG.
func screenshot(t *testing.T, ctx context.Context, name string, fullPage bool) {
	t.Helper()
	shot := chromedp.CaptureScreenshot()
	if fullPage {
		shot = chromedp.FullScreenshot(100)
	}
	buf, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifactsDir(t), name)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// step bounds one browser step.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		t.Fatalf("evaluate %q: %v", js, err)
	}
	return v
}

// waitURL waits until the page's URL contains want and the new document
// has loaded (after a form submit or a click). It reads the location
// through DevTools, so it works with JavaScript off, and retries while the
// old document goes away.
func waitURL(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		state, err := chromedp.Run(sctx, chromedp.EvaluateAsDevTools[string](`location.href + " " + document.readyState`))
		cancel()
		if err == nil && strings.Contains(state, want) && strings.HasSuffix(state, " complete") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %q: got %q, %v", want, state, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// problems collects JavaScript exceptions and console errors (CSP
// violations among them) for the whole test.
type problems struct {
	mu   sync.Mutex
	list []string
}

func watch(t *testing.T, ctx context.Context) *problems {
	t.Helper()
	p := &problems{}
	if _, err := chromedp.Call(ctx, cdplog.Enable, struct{}{}); err != nil {
		t.Fatal(err)
	}
	entries := chromedp.Events(ctx, cdplog.EntryAdded)
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			if ev.Entry != nil && ev.Entry.Level == cdplog.EntryLevelError && !strings.Contains(ev.Entry.Text, "favicon") {
				p.add("console: " + ev.Entry.Text)
			}
		}
	}()
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			if ev.ExceptionDetails != nil {
				p.add("exception: " + ev.ExceptionDetails.Text)
			}
		}
	}()
	return p
}

func (p *problems) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, s)
}

func (p *problems) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.list {
		t.Errorf("browser reported: %s", s)
	}
}

func TestBrowser(t *testing.T) {
	ctx := newBrowser(t)
	base := site(t)
	seen := watch(t, ctx)
	defer seen.check(t)

	// The table.
	step(t, ctx, "load the table", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.models tbody tr")))
	if n := eval[int](t, ctx, `document.querySelectorAll("table.models tbody tr").length`); n != 50 {
		t.Errorf("table rows = %d, want 50", n)
	}
	for _, want := range []string{"Pass rate", "Top failure causes", "Status words"} {
		if !eval[bool](t, ctx, `document.body.innerText.includes(`+strconv.Quote(want)+`)`) {
			t.Errorf("table page lacks %q", want)
		}
	}
	screenshot(t, ctx, "table.png", true)

	// Filter: changing the status select submits the form (app.js).
	step(t, ctx, "filter by status",
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("f-status"); s.value = "fail"; s.dispatchEvent(new Event("change")); })()`))
	waitURL(t, ctx, "status=fail")
	statuses := eval[[]string](t, ctx, `[...document.querySelectorAll("td[data-label=Status] .status")].map(e => e.textContent)`)
	if len(statuses) == 0 {
		t.Fatal("no rows after filtering by fail")
	}
	for _, s := range statuses {
		if s != "fail" {
			t.Fatalf("filtered table shows %q", s)
		}
	}

	// Sort: click the tokens/s header (keeps the filter), speeds descend.
	step(t, ctx, "reset and filter pass", chromedp.Navigate(base+"/?status=pass"), chromedp.WaitVisible(chromedp.CSS("table.models")))
	step(t, ctx, "sort by tokens/s", chromedp.Click(chromedp.CSS(`th[aria-sort] a[href*="sort=tokens_per_s"]`)))
	waitURL(t, ctx, "sort=tokens_per_s")
	speeds := eval[[]float64](t, ctx, `[...document.querySelectorAll("td[data-label='Tokens/s']")].map(e => parseFloat(e.textContent)).filter(x => !isNaN(x))`)
	if len(speeds) < 5 {
		t.Fatalf("too few speeds: %v", speeds)
	}
	for i := 1; i < len(speeds); i++ {
		if speeds[i] > speeds[i-1] {
			t.Fatalf("tokens/s not descending: %v", speeds)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector("th a[href*='sort=tokens_per_s']").closest("th").getAttribute("aria-sort")`); got != "descending" {
		t.Errorf("aria-sort = %q", got)
	}

	// Search with the keyboard, then open the model page.
	step(t, ctx, "search",
		chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("f-q")),
		chromedp.SendKeys(chromedp.ID("f-q"), "qwen3\r"))
	waitURL(t, ctx, "q=qwen3")
	step(t, ctx, "open the model page",
		chromedp.Click(chromedp.CSS(`a[href="/models/Qwen/Qwen3-0.6B"]`)),
		chromedp.WaitVisible(chromedp.CSS("h1.model-id")))
	if h := eval[string](t, ctx, `document.querySelector("h1").textContent`); h != "Qwen/Qwen3-0.6B" {
		t.Errorf("model page h1 = %q", h)
	}
	if !eval[bool](t, ctx, `document.body.innerText.includes("312.0 tok/s")`) {
		t.Error("model page lacks the speed")
	}
	// The badge image loads (a real SVG, same origin).
	step(t, ctx, "badge image loads", chromedp.Poll[chromedp.Void](`(() => { const i = document.querySelector(".badge-snippets img"); return i && i.complete && i.naturalWidth > 50; })()`))
	screenshot(t, ctx, "model.png", true)

	// Copy the Markdown snippet: the clipboard holds it, the button says so.
	if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-read"}, Setting: browser.PermissionSettingGranted, Origin: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-write", AllowWithoutSanitization: true}, Setting: browser.PermissionSettingGranted, Origin: base}); err != nil {
		t.Fatal(err)
	}
	want := eval[string](t, ctx, `document.getElementById("md-tpu").value`)
	if !strings.HasPrefix(want, "[![TorchTPU compatibility of Qwen/Qwen3-0.6B]("+base+"/badge/Qwen/Qwen3-0.6B.svg)]") {
		t.Errorf("markdown snippet = %q", want)
	}
	step(t, ctx, "click copy", chromedp.Click(chromedp.CSS(`button[data-copy="md-tpu"]`)))
	step(t, ctx, "copied state", chromedp.WaitVisible(chromedp.CSS(`button[data-copy="md-tpu"][data-copied="true"]`)))
	if label := eval[string](t, ctx, `document.querySelector('button[data-copy="md-tpu"]').textContent`); label != "Copied" {
		t.Errorf("button says %q after copying", label)
	}
	clip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Logf("reading the clipboard back is not possible here (%v); the copied state was checked", err)
	} else if clip != want {
		t.Errorf("clipboard = %q, want %q", clip, want)
	}

	// Phone: no horizontal scrolling, rows become cards.
	step(t, ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.models")))
	if overflow := eval[bool](t, ctx, `document.documentElement.scrollWidth > window.innerWidth + 1`); overflow {
		t.Error("the table page scrolls sideways on a phone")
	}
	step(t, ctx, "scroll to the table", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.querySelector("table.models").getBoundingClientRect().top + window.scrollY - 8)`))
	screenshot(t, ctx, "table-phone.png", false)

	// Dark mode follows prefers-color-scheme.
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "dark", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.models")))
	bg := eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`)
	if bg != "rgb(13, 17, 23)" {
		t.Errorf("dark background = %q", bg)
	}
	screenshot(t, ctx, "table-dark.png", false)
}

func TestBrowserWithoutJavaScript(t *testing.T) {
	ctx := newBrowser(t)
	base := site(t)
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "load", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.models")))
	// The select does nothing by itself; the Apply button submits the GET form.
	step(t, ctx, "choose org and apply",
		chromedp.SendKeys(chromedp.ID("f-org"), "org07"),
		chromedp.Click(chromedp.CSS(`.filters button[type=submit]`)))
	waitURL(t, ctx, "org=org07")
	step(t, ctx, "rows", chromedp.WaitVisible(chromedp.CSS("table.models tbody th.id a")))
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	nodes, err := chromedp.Run(sctx, chromedp.Nodes(chromedp.CSSAll("table.models tbody th.id a")))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) == 0 {
		t.Fatal("no rows without JavaScript")
	}
	for _, n := range nodes {
		if href := n.AttributeValue("href"); !strings.HasPrefix(href, "/models/org07/") {
			t.Errorf("row %s after filtering by org07", href)
		}
	}
}
