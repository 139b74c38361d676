package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

var rowRE = regexp.MustCompile(`<th scope="row" class="id" data-label="Model"><a href="([^"]+)">((?:[^<]|<wbr>)+)</a>`)

// rowIDs lists the model ids in the table of a page, in order (without
// their line-break opportunities, breakID's <wbr>).
func rowIDs(body string) []string {
	var ids []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		ids = append(ids, strings.ReplaceAll(m[2], "<wbr>", ""))
	}
	return ids
}

func TestTablePage(t *testing.T) {
	ts := newTestServer(t, 120, 400, Config{})
	r := ts.get(t, "/")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, want := range []string{
		"Models tested", "Pass rate", "Download-weighted pass rate", "Last scan", "torch 2.9.0",
		"Top failure causes", "unsupported_op:aten::_fft_r2c", "Models blocked", "Share of downloads",
		"Status words", "never held against the model",
		`<label for="f-q">Search</label>`, `<label for="f-status">Status</label>`, `<label for="f-task">Task</label>`,
		`<label for="f-org">Organisation</label>`, `<label for="f-target">Target</label>`, `<label for="f-sort">Sort by</label>`,
		`method="get"`, `rel="next"`, `aria-sort="descending"`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("table page lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`0x[0-9a-f]{6,}`).FindString(r.body); m != "" {
		t.Errorf("a pointer was printed: %s", m)
	}
	if !strings.Contains(r.body, `<span class="muted">(remote code)</span>`) {
		t.Error("skip reason not shown in words")
	}
	if ids := rowIDs(r.body); len(ids) != defaultLimit {
		t.Errorf("first page has %d rows, want %d", len(ids), defaultLimit)
	}
	if strings.Contains(r.body, "<script>") || strings.Contains(r.body, " style=") || strings.Contains(r.body, "onclick") {
		t.Error("page has inline script or style (CSP forbids them)")
	}
	if !regexp.MustCompile(`<script src="/static/app\.[0-9a-f]{10}\.js" defer></script>`).MatchString(r.body) {
		t.Error("no content-hashed script")
	}
}

func TestTablePagination(t *testing.T) {
	ts := newTestServer(t, 130, 300, Config{})
	seen := map[string]bool{}
	next := "/?sort=status"
	pages := 0
	for next != "" && pages < 10 {
		r := ts.get(t, next)
		if r.status != 200 {
			t.Fatalf("GET %s = %d", next, r.status)
		}
		for _, id := range rowIDs(r.body) {
			if seen[id] {
				t.Fatalf("%s shown twice", id)
			}
			seen[id] = true
		}
		pages++
		next = ""
		if m := regexp.MustCompile(`<a rel="next" href="([^"]+)"`).FindStringSubmatch(r.body); m != nil {
			next = htmlUnescape(m[1])
			if !strings.Contains(next, "sort=status") {
				t.Fatalf("next link lost the sort: %s", next)
			}
		}
	}
	if len(seen) != 130 || pages != 3 {
		t.Errorf("paged through %d models in %d pages, want 130 in 3", len(seen), pages)
	}
}

func htmlUnescape(s string) string { return strings.ReplaceAll(s, "&amp;", "&") }

func TestTableFilters(t *testing.T) {
	ts := newTestServer(t, 100, 300, Config{})
	for _, tc := range []struct {
		query string
		check func(id string) bool
	}{
		{"q=MODEL-0001", func(id string) bool { return strings.Contains(id, "model-0001") }},
		{"org=org03", func(id string) bool { return strings.HasPrefix(id, "org03/") }},
		{"task=fill-mask", nil},
		{"status=untested", nil},
		{"target=cpu", nil},
	} {
		r := ts.get(t, "/?"+tc.query)
		if r.status != 200 {
			t.Fatalf("%s: %d", tc.query, r.status)
		}
		ids := rowIDs(r.body)
		if len(ids) == 0 {
			t.Errorf("%s: no rows", tc.query)
		}
		for _, id := range ids {
			if tc.check != nil && !tc.check(id) {
				t.Errorf("%s: row %s does not match", tc.query, id)
			}
		}
		// The form shows the filter back.
		k, v, _ := strings.Cut(tc.query, "=")
		if k == "q" || k == "org" || k == "task" {
			if !strings.Contains(r.body, `value="`+v+`"`) {
				t.Errorf("%s: form does not keep the value", tc.query)
			}
		} else if !strings.Contains(r.body, `<option value="`+v+`" selected>`) {
			t.Errorf("%s: select does not keep the value", tc.query)
		}
	}
	// Status filter: every row shows that status.
	r := ts.get(t, "/?status=fail")
	if n := strings.Count(r.body, `<td data-label="Status"><span class="status st-fail">fail</span>`); n != len(rowIDs(r.body)) || n == 0 {
		t.Errorf("status=fail: %d fail chips for %d rows", n, len(rowIDs(r.body)))
	}
	// Sort by tokens/s: shown speeds descend.
	r = ts.get(t, "/?sort=tokens_per_s&status=pass")
	speeds := regexp.MustCompile(`data-label="Tokens/s" class="num">([0-9.]+)<`).FindAllStringSubmatch(r.body, -1)
	for i := 1; i < len(speeds); i++ {
		var a, b float64
		fmt.Sscan(speeds[i-1][1], &a)
		fmt.Sscan(speeds[i][1], &b)
		if a < b {
			t.Fatalf("tokens/s not descending: %v then %v", a, b)
		}
	}
	if len(speeds) < 2 {
		t.Error("too few speeds to check the sort")
	}
	// Bad values are a 400 page that explains.
	r = ts.get(t, "/?status=bogus")
	if r.status != 400 || !strings.Contains(r.body, "unknown status") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("bad status: %d %s", r.status, r.body)
	}
}

func TestTableStates(t *testing.T) {
	t.Run("empty, first scan running", func(t *testing.T) {
		ts := newTestServer(t, 0, 0, Config{})
		ts.scans.state = ScanState{Running: true}
		r := ts.get(t, "/")
		if !strings.Contains(r.body, "First scan in progress") || !strings.Contains(r.body, `<body data-refresh="20">`) ||
			strings.Contains(r.body, `http-equiv="refresh"`) {
			t.Errorf("no first-scan notice or refresh:\n%s", r.body)
		}
	})
	t.Run("models discovered, no result yet, scan running", func(t *testing.T) {
		ts := newTestServer(t, 7, 0, Config{})
		ts.scans.state = ScanState{Running: true}
		r := ts.get(t, "/")
		if !strings.Contains(r.body, "First scan in progress") || !strings.Contains(r.body, `data-refresh="20"`) || len(rowIDs(r.body)) != 7 {
			t.Errorf("first scan with discovered models:\n%s", r.body)
		}
	})
	t.Run("results, scan running: no refresh", func(t *testing.T) {
		ts := newTestServer(t, 7, 7, Config{})
		ts.scans.state = ScanState{Running: true}
		if r := ts.get(t, "/"); strings.Contains(r.body, "First scan") || strings.Contains(r.body, "data-refresh") {
			t.Error("a later scan is not the first")
		}
	})
	t.Run("empty, idle", func(t *testing.T) {
		ts := newTestServer(t, 0, 0, Config{})
		r := ts.get(t, "/")
		if r.status != 200 || strings.Contains(r.body, "http-equiv") || !strings.Contains(r.body, "the first scan has not run") {
			t.Errorf("empty idle page: %d\n%s", r.status, r.body)
		}
	})
	t.Run("empty, first scan failed", func(t *testing.T) {
		ts := newTestServer(t, 0, 0, Config{})
		ctx := context.Background()
		id, err := ts.db.StartScan(ctx, store.Scan{Trigger: "startup"})
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.db.FinishScan(ctx, id, store.ScanFinish{Status: store.ScanFailed, Error: "hub unreachable: <b>dial</b>"}); err != nil {
			t.Fatal(err)
		}
		r := ts.get(t, "/")
		if !strings.Contains(r.body, "failed: hub unreachable: &lt;b&gt;dial&lt;/b&gt;") || strings.Contains(r.body, "has not run") {
			t.Errorf("failed first scan not explained:\n%s", r.body)
		}
	})
	t.Run("hub down", func(t *testing.T) {
		ts := newTestServer(t, 5, 5, Config{})
		ts.scans.state = ScanState{HubError: `dial tcp: lookup huggingface.co: no such host <script>alert(1)</script>`, HubErrorAt: testTime}
		r := ts.get(t, "/")
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		if !strings.Contains(r.body, "The Hugging Face Hub could not be reached: dial tcp: lookup huggingface.co: no such host &lt;script&gt;") ||
			!strings.Contains(r.body, "— showing the last results") || !strings.Contains(r.body, `role="alert"`) {
			t.Errorf("no escaped Hub banner:\n%s", r.body)
		}
		if len(rowIDs(r.body)) != 5 {
			t.Error("the table should still show the last results")
		}
	})
	t.Run("scan running shows progress", func(t *testing.T) {
		ts := newTestServer(t, 5, 5, Config{})
		id, err := ts.db.StartScan(t.Context(), store.Scan{Trigger: "manual", Target: "tpu", StartedAt: testTime})
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.db.UpdateScanProgress(t.Context(), id, 10, 4, 3, 1); err != nil {
			t.Fatal(err)
		}
		ts.scans.state = ScanState{Running: true, ScanID: id}
		if r := ts.get(t, "/"); !strings.Contains(r.body, "4 of 10 models done") {
			t.Errorf("no progress shown")
		}
	})
}

func TestModelPage(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{HubEndpoint: "https://hub.example.org/", PublicURL: "https://compat.example.org"})
	ts.upsert(t, store.ModelUpsert{ID: "Qwen/Qwen3-0.6B", Task: "text-generation", Library: "transformers", Downloads: 1234567,
		SHA: strings.Repeat("c", 40), Aliases: []string{"Qwen/Old-Name"}},
		store.ModelUpsert{ID: "gpt2", Task: "text-generation", Downloads: 10})
	ts.record(t, "Qwen/Qwen3-0.6B", passOn(compat.TargetTPU, testTime.Add(-48*time.Hour), 312))
	ts.record(t, "Qwen/Qwen3-0.6B", failOn(compat.TargetTPU, testTime, "aten::_fft_r2c"))
	cpu := passOn(compat.TargetCPU, testTime, 12)
	cpu.Continuation = &compat.Continuation{Prompt: "The capital of France is", Text: " Paris, and Paris is"}
	ts.record(t, "Qwen/Qwen3-0.6B", cpu)

	r := ts.get(t, "/models/Qwen/Qwen3-0.6B")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	for _, want := range []string{
		"<h1 class=\"model-id\">Qwen/Qwen3-0.6B</h1>",
		"1,234,567 downloads",
		`href="https://hub.example.org/Qwen/Qwen3-0.6B"`,
		`href="https://hub.example.org/Qwen/Qwen3-0.6B/tree/` + strings.Repeat("b", 40) + `"`, // the failing result's revision
		`href="https://hub.example.org/Qwen/Qwen3-0.6B/tree/` + strings.Repeat("c", 40) + `"`, // the model's sha
		"TPU (TorchTPU): <span class=\"status st-fail\">fail</span>",
		"CPU: <span class=\"status st-pass\">pass</span>",
		"<pre class=\"evidence\" tabindex=\"0\">NotImplementedError: aten::_fft_r2c</pre>", "Log tail",
		"regression</span> on tpu", "new</span> on tpu",
		"scanner probe x --target cpu", `data-copy="repro-cpu"`,
		`[![TorchTPU compatibility of Qwen/Qwen3-0.6B](https://compat.example.org/badge/Qwen/Qwen3-0.6B.svg)](https://compat.example.org/models/Qwen/Qwen3-0.6B)`,
		`https://compat.example.org/badge/Qwen/Qwen3-0.6B.svg?target=cpu`,
		`Copy Markdown</button>`, `Copy HTML</button>`,
		"Also known as: Qwen/Old-Name", "torch_tpu 0.2.0",
	} {
		if body := strings.ReplaceAll(r.body, "<wbr>", ""); !strings.Contains(body, htmlEscapeForCheck(want)) && !strings.Contains(body, want) {
			t.Errorf("model page lacks %q", want)
		}
	}
	// The continuation is shown for the result that has one (cpu), after its prompt.
	if n := strings.Count(r.body, "<h4>Greedy continuation</h4>"); n != 1 ||
		!strings.Contains(r.body, `<pre class="evidence short continuation" tabindex="0"><span class="muted">The capital of France is</span> Paris, and Paris is</pre>`) {
		t.Errorf("continuation shown %d times, or not after its prompt", n)
	}
	// Unmeasured metrics are dashes, never 0.
	if !regexp.MustCompile(`<th scope="row">Compile</th><td class="num">—</td>`).MatchString(r.body) {
		t.Error("unmeasured compile time is not a dash")
	}
	if !strings.Contains(r.body, `<th scope="row">Tokens per second</th><td class="num">12.0 tok/s</td>`) {
		t.Error("measured tokens/s missing")
	}

	// One-part id.
	if r := ts.get(t, "/models/gpt2"); r.status != 200 || !strings.Contains(r.body, "untested") {
		t.Errorf("gpt2: %d", r.status)
	}
	// Alias and other letter case redirect to the canonical page.
	for _, p := range []string{"/models/Qwen/Old-Name", "/models/qwen/qwen3-0.6b"} {
		r := ts.get(t, p)
		if r.status != 301 || r.header.Get("Location") != "/models/Qwen/Qwen3-0.6B" {
			t.Errorf("%s: %d Location=%q", p, r.status, r.header.Get("Location"))
		}
	}
	// Percent-encoded slash works too.
	if r := ts.get(t, "/models/Qwen%2FQwen3-0.6B"); r.status != 200 {
		t.Errorf("encoded id: %d", r.status)
	}
	// Unknown: a 404 page.
	r = ts.get(t, "/models/nobody/nothing")
	if r.status != 404 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "does not know model") {
		t.Errorf("unknown model: %d %s", r.status, r.body)
	}
}

// htmlEscapeForCheck escapes what html/template escapes in text.
func htmlEscapeForCheck(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// TestMethodologyStatesThePassageRule: the full-mode bounds the page
// states are the harness's own (harness_real_inputs.py), so neither changes
// alone.
func TestMethodologyStatesThePassageRule(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "internal", "harness", "harness_real_inputs.py"))
	if err != nil {
		t.Fatal(err)
	}
	max := regexp.MustCompile(`(?m)^PASSAGE_PPL_MAX = ([0-9.]+)`).FindSubmatch(src)
	rtol := regexp.MustCompile(`(?m)^PASSAGE_PPL_RTOL = \{"float32": ([0-9.e-]+), "float16": ([0-9.e-]+), "bfloat16": ([0-9.e-]+)\}`).FindSubmatch(src)
	if max == nil || rtol == nil {
		t.Fatal("harness_real_inputs.py: PASSAGE_PPL_MAX or PASSAGE_PPL_RTOL not found in the expected form")
	}
	pct := func(b []byte) string {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatFloat(f*100, 'g', 6, 64) + " %"
	}
	bound, err := strconv.ParseFloat(string(max[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, 0, 0, Config{})
	body := strings.Join(strings.Fields(ts.get(t, "/methodology").body), " ")
	for _, want := range []string{
		"perplexity below " + strconv.FormatFloat(bound, 'g', -1, 64),
		"within " + pct(rtol[3]) + " of the float32 CPU reference's in bfloat16",
		"(" + pct(rtol[2]) + " in float16, " + pct(rtol[1]) + " in float32)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("methodology lacks %q", want)
		}
	}
}

func TestMethodologyPage(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	r := ts.get(t, "/methodology")
	if r.status != 200 {
		t.Fatal(r.status)
	}
	last := -1
	for _, st := range compat.Stages {
		i := strings.Index(r.body, "<li><code>"+string(st)+"</code>")
		if i < 0 || i < last {
			t.Errorf("stage %s missing or out of order", st)
		}
		last = i
	}
	for _, want := range []string{"tolerance", "<code>arch</code>", "<code>full</code>", "<code>auto</code>",
		"<code>tpu</code>", "<code>cpu</code>", "<code>cuda</code>", "skipped", "never held against the model", "--force", "retested",
		`id="tpu"`, "up to 20 more calls", "Precision.HIGHEST", "torch.accelerator.synchronize()", "peak of the whole probe process",
		// the numerics bounds of numerics.json, per dtype and kind
		"<td>bfloat16</td><td>0.05 &#43; 0.2 · max |reference|</td><td>0.9</td><td>0.1</td><td>0.99</td>",
		"<dt><code>embeddings</code></dt>", "<code>cosine</code>", "<code>rel_error</code>",
		// the task families of tasks.json, and the tags transformers has no class for
		`<td><code>contrastive</code></td><td><code>zero-shot-image-classification</code></td>`,
		"<code>image-text-to-text</code>", "<code>visual-document-retrieval</code>", "pred_boxes (boxes)",
		"<dt><code>text-to-image</code></dt><dd>diffusion pipelines", "names the missing field",
		// whose failure it is: the reference decides, and a cpu verdict compares bfloat16 with it
		`<p id="reference-rule">When a stage fails on the target, the same stage runs on the float32 CPU reference with the same inputs`,
		"<code>harness_inputs:…</code>", "<code>environment:missing_package:timm</code>",
		"a bfloat16 run compared with the float32 CPU reference"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("methodology lacks %q", want)
		}
	}
}

func TestStaticAssets(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	for _, name := range []string{"app.js", "style.css"} {
		u, err := ts.assets.url(name)
		if err != nil {
			t.Fatal(err)
		}
		r := ts.get(t, u)
		if r.status != 200 || !strings.Contains(r.header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: %d %q", u, r.status, r.header.Get("Cache-Control"))
		}
	}
	css, _ := ts.assets.url("style.css")
	if r := ts.get(t, css); !strings.Contains(r.body, "prefers-color-scheme: dark") || !strings.Contains(r.body, chipLight[tonePass].BG) {
		t.Error("style.css lacks the generated palette")
	}
	for _, p := range []string{"/static/app.js", "/static/app.0000000000.js", "/static/..%2fserver.go", "/static/"} {
		if r := ts.get(t, p); r.status != 404 {
			t.Errorf("%s: %d, want 404", p, r.status)
		}
	}
}

// The table page is cached whole, until the data or the scheduler's state
// changes: a scan that starts, moves on and ends shows at once.
func TestTablePageCacheFollowsStateAndData(t *testing.T) {
	ts := newTestServer(t, 5, 5, Config{})
	idle := ts.get(t, "/").body
	if again := ts.get(t, "/").body; again != idle {
		t.Fatal("the same page twice differs")
	}
	id, err := ts.db.StartScan(t.Context(), store.Scan{Trigger: "manual", Target: "tpu", StartedAt: testTime})
	if err != nil {
		t.Fatal(err)
	}
	ts.scans.state = ScanState{Running: true, ScanID: id}
	for _, done := range []int{2, 7} {
		if err := ts.db.UpdateScanProgress(t.Context(), id, 10, done, done, 0); err != nil {
			t.Fatal(err)
		}
		if r := ts.get(t, "/"); !strings.Contains(r.body, fmt.Sprintf("%d of 10 models done", done)) {
			t.Errorf("progress %d not shown", done)
		}
	}
	ts.scans.state = ScanState{}
	if r := ts.get(t, "/"); strings.Contains(r.body, "models done") {
		t.Error("the running scan's page outlived the scan")
	}
}
