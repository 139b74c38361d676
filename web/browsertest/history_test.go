//go:build browser

package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// historySite serves three torch_tpu releases on tpu: 30 models each,
// passing more often on each release; org00/model-00 passes with speeds
// measured on each. It returns the base URL.
func historySite(t *testing.T) string {
	t.Helper()
	db := storetest.MustOpen(t)
	ctx := context.Background()
	var ups []store.ModelUpsert
	for i := range 30 {
		ups = append(ups, store.ModelUpsert{ID: fmt.Sprintf("org%02d/model-%02d", i%4, i), Task: "text-generation",
			Library: "transformers", Downloads: int64(1_000_000 / (i + 1))})
	}
	if err := db.UpsertModels(ctx, ups); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 10, 1, 6, 0, 0, 0, time.UTC)
	for v, tt := range []string{"0.1.0", "0.2.0", "0.3.0"} {
		rt := compat.Runtime{Torch: "2.15.0", TorchTPU: tt, Transformers: "5.23.0", Harness: "1", Device: "TPU v6e", DeviceCount: 1}
		for i, u := range ups {
			r := compat.Result{Target: compat.TargetTPU, Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate),
				Mode: compat.Ptr(compat.ModeFull), Revision: "r", Runtime: rt,
				TestedAt: t0.Add(time.Duration(v*7*24+i) * time.Hour)}
			if (i+v)%3 == 0 && i != 0 {
				r.Status, r.Stage = compat.StatusFail, compat.Ptr(compat.StageForward)
				r.FailureClass = compat.Ptr(compat.ClassUnsupportedOp)
				r.Signature = compat.Ptr([]string{"unsupported_op:aten::_fft_r2c", "compile_error:dynamic_shape"}[i%2])
			} else {
				r.Metrics.TokensPerS = compat.Ptr(float64(100 + 20*v + i))
				r.Metrics.CompileS = compat.Ptr(float64(40 - 10*v))
			}
			if _, err := db.RecordResult(ctx, u.ID, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return serveStore(t, db)
}

// chartImages are the page's charts as a screen reader meets them: the
// accessible name and description of every node with the image role.
func chartImages(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Call(sctx, accessibility.Enable, struct{}{}); err != nil {
		t.Fatal(err)
	}
	tree, err := chromedp.Call(sctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatal(err)
	}
	text := func(v *accessibility.Value) string {
		if v == nil {
			return ""
		}
		var s string
		if err := json.Unmarshal(v.Value, &s); err != nil {
			return ""
		}
		return s
	}
	out := map[string]string{}
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		if role := text(n.Role); role == "image" || role == "img" {
			out[text(n.Name)] = text(n.Description)
		}
	}
	return out
}

// mode is one way of looking at the site.
type mode struct {
	name          string
	width, height int64
	mobile, dark  bool
}

var modes = []mode{{"light", 1280, 900, false, false}, {"dark", 1280, 900, false, true}, {"phone", 390, 844, true, false}}

func (m mode) apply(t *testing.T, ctx context.Context) {
	t.Helper()
	scheme := "light"
	if m.dark {
		scheme = "dark"
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.EmulateViewportOption{}
	if m.mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateScale(2))
	}
	step(t, ctx, "viewport "+m.name, chromedp.EmulateViewport(m.width, m.height, opts...))
}

// TestBrowserRuntimeCharts opens /runtimes, /compare and a model page in
// light, dark and phone layouts: each chart is an image with its text
// alternative, drawn in the mode's colours, with its data table, and the
// page does not scroll sideways; screenshots of each.
func TestBrowserRuntimeCharts(t *testing.T) {
	ctx := newBrowser(t)
	base := historySite(t)
	seen := watch(t, ctx)
	defer seen.check(t)

	pages := []struct {
		name, path string
		charts     map[string]string // accessible name → a part of its description
	}{
		{"runtimes", "/runtimes", map[string]string{
			"Pass rate by runtime on TPU (TorchTPU)": "3 points, from torch_tpu 0.1.0 to torch_tpu 0.3.0. Pass rate: ",
		}},
		{"compare", "/compare", nil},
		{"model-charts", "/models/org00/model-00", map[string]string{
			"Status on TPU (TorchTPU) over time":  "3 results from 2026-10-01 06:00 UTC to 2026-10-15 06:00 UTC: 3 pass.",
			"Tokens per second on TPU (TorchTPU)": "Tokens/s: 100.0 (2026-10-01 06:00) to 140.0 (2026-10-15 06:00)",
			"Compile time (s) on TPU (TorchTPU)":  "Compile (s): 40.00 (2026-10-01 06:00) to 20.00 (2026-10-15 06:00)",
		}},
		{"table-charts", "/", map[string]string{
			"Pass rate by runtime on TPU (TorchTPU)":            "3 points",
			"Top failure signatures by downloads on any target": "Fixing a signature's root cause unblocks",
		}},
	}
	for _, m := range modes {
		m.apply(t, ctx)
		for _, p := range pages {
			step(t, ctx, p.name+" "+m.name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS("main h1")))
			alts := chartImages(t, ctx)
			for title, desc := range p.charts {
				got, ok := alts[title]
				if !ok || !strings.Contains(got, desc) {
					t.Errorf("%s %s: chart %q: description %q (present %v), want it to contain %q; images: %q", m.name, p.path, title, got, ok, desc, alts)
				}
			}
			// Against the device's width: a mobile browser widens its layout
			// viewport (innerWidth) to fit what overflows.
			if w := eval[int64](t, ctx, `document.documentElement.scrollWidth`); w > m.width+1 {
				t.Errorf("%s %s scrolls sideways: %d px wide on a %d px screen; widest: %s", m.name, p.path, w, m.width,
					eval[string](t, ctx, `JSON.stringify([...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > `+strconv.FormatInt(m.width, 10)+`).slice(0, 8).map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)))`))
			}
			if p.charts != nil {
				checkChartsDrawn(t, ctx, m, p.path)
			}
			screenshot(t, ctx, p.name+"-"+m.name+".png", true)
		}
		checkComparePage(t, ctx, m)
	}
}

// checkChartsDrawn: every chart fits its column and has its data table;
// lines and status cells take the mode's palette colours.
func checkChartsDrawn(t *testing.T, ctx context.Context, m mode, path string) {
	t.Helper()
	n := eval[int](t, ctx, `document.querySelectorAll("figure.chart svg[role=img]").length`)
	tables := eval[int](t, ctx, `document.querySelectorAll("figure.chart details.chart-data table").length`)
	if n == 0 || tables != n {
		t.Errorf("%s %s: %d charts, %d data tables", m.name, path, n, tables)
	}
	if wide := eval[bool](t, ctx, `[...document.querySelectorAll("figure.chart svg")].some(s => s.getBoundingClientRect().right > document.documentElement.clientWidth + 1)`); wide {
		t.Errorf("%s %s: a chart is wider than the page: %s", m.name, path, eval[string](t, ctx,
			`JSON.stringify([...document.querySelectorAll("figure.chart svg")].map(s => [s.closest("figure").id, s.getBoundingClientRect().right]))`))
	}
	link := map[bool]string{false: "rgb(9, 105, 218)", true: "rgb(68, 147, 248)"}[m.dark]
	if got := eval[string](t, ctx, `(() => { const l = document.querySelector("figure.chart path.line.s0"); return l ? getComputedStyle(l).stroke : "none"; })()`); got != link && got != "none" {
		t.Errorf("%s %s: first series stroke %s, want %s", m.name, path, got, link)
	}
	pass := map[bool]string{false: "rgb(17, 99, 41)", true: "rgb(126, 231, 135)"}[m.dark]
	if got := eval[string](t, ctx, `(() => { const c = document.querySelector("figure.chart rect.cell.t-pass"); return c ? getComputedStyle(c).fill : "none"; })()`); got != pass && got != "none" {
		t.Errorf("%s %s: pass cell fill %s, want %s", m.name, path, got, pass)
	}
	if got := eval[string](t, ctx, `(() => { const x = document.querySelector("figure.chart text"); return x ? getComputedStyle(x).fill : ""; })()`); got != eval[string](t, ctx, `getComputedStyle(document.body).color`) {
		t.Errorf("%s %s: chart text fill %s is not the page's text colour", m.name, path, got)
	}
}

// checkComparePage: the default comparison (0.2.0 → 0.3.0) lists its
// models in the right sections, as the API does.
func checkComparePage(t *testing.T, ctx context.Context, m mode) {
	t.Helper()
	step(t, ctx, "compare "+m.name, chromedp.Navigate(strings.TrimSuffix(eval[string](t, ctx, `location.origin`), "/")+"/api/v1/compare"))
	var api struct {
		Fixed, Regressed []struct{ ID string }
		Headline         string
	}
	body := eval[string](t, ctx, `document.body.innerText`)
	if err := json.Unmarshal([]byte(body), &api); err != nil || len(api.Fixed)+len(api.Regressed) == 0 {
		t.Fatalf("compare API: %v %.200s", err, body)
	}
	step(t, ctx, "compare page "+m.name, chromedp.Navigate(strings.Replace(eval[string](t, ctx, `location.href`), "/api/v1/compare", "/compare", 1)),
		chromedp.WaitVisible(chromedp.CSS(".compare-headline")))
	if got := eval[string](t, ctx, `document.querySelector(".compare-headline").innerText`); got != api.Headline+"." {
		t.Errorf("%s: headline %q, API %q", m.name, got, api.Headline)
	}
	for list, items := range map[string][]struct{ ID string }{"fixed": api.Fixed, "regressed": api.Regressed} {
		ids := eval[[]string](t, ctx, `[...document.querySelectorAll("section[aria-labelledby=list-`+list+`] th.id a")].map(a => a.textContent)`)
		if len(ids) != len(items) {
			t.Errorf("%s: %s lists %d models on the page, %d in the API", m.name, list, len(ids), len(items))
			continue
		}
		for i := range ids {
			if ids[i] != items[i].ID {
				t.Errorf("%s: %s row %d is %s, the API's %s", m.name, list, i, ids[i], items[i].ID)
			}
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("select#c-base option[selected], select#c-head option[selected]").length`); n != 2 {
		t.Errorf("%s: %d runtimes selected in the form, want 2", m.name, n)
	}
}
