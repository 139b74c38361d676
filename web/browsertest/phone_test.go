//go:build browser

package browsertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// phoneModel is a model whose page has everything that can be wide: a
// long id, the readiness block's device table, current results on two
// targets with a long message and the matrix, and a history of results.
const phoneModel = "org37/model-00117-instruct-preview"

// phoneSite serves phoneModel and returns the base URL.
func phoneSite(t *testing.T) string {
	t.Helper()
	db := storetest.MustOpen(t)
	ctx := context.Background()
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: phoneModel, Task: "text-generation", Library: "transformers",
		Downloads: 123_456_789, Likes: 4321, SHA: strings.Repeat("d", 40)}}); err != nil {
		t.Fatal(err)
	}
	rd := readiness.Readiness{Params: compat.Ptr(int64(70_553_706_496)), ParamsSource: compat.Ptr("safetensors"),
		WeightsBytesBF16: compat.Ptr(int64(141_107_412_992)), KVBytesPerToken: compat.Ptr(int64(327_680)),
		MinDevices: map[string]int{"v5e": 12, "v5p": 2, "v6e": 6, "v7x": 1}}
	if err := db.SetReadiness(ctx, store.ReadinessUpdate{ModelID: phoneModel, SHA: "x", Version: readiness.Version, Readiness: rd}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	rt := compat.Runtime{Python: "3.12.8", Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1.4.0",
		Device: "TPU v6e", DeviceCount: 8}
	msg := "NotImplementedError: Could not run 'aten::_fft_r2c' with arguments from the 'TPU' backend. " +
		strings.Repeat("This could be because the operator doesn't exist for this backend, or was omitted during the selective build process. ", 3)
	for i := range 12 {
		r := compat.Result{Target: compat.TargetTPU, Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate),
			Mode: compat.Ptr(compat.ModeFull), Revision: strings.Repeat("d", 40), Runtime: rt, DevicesUsed: 1,
			TestedAt: t0.Add(time.Duration(i) * 24 * time.Hour), Metrics: compat.Metrics{TokensPerS: compat.Ptr(float64(100 + i))},
			Repro: compat.Repro(phoneModel, strings.Repeat("d", 40), compat.TargetTPU, compat.ModeFull)}
		if i%3 == 2 {
			r.Status, r.Stage = compat.StatusFail, compat.Ptr(compat.StageForward)
			r.FailureClass, r.Op = compat.Ptr(compat.ClassUnsupportedOp), compat.Ptr("aten::_fft_r2c")
			r.Signature, r.Message = compat.Ptr("unsupported_op:aten::_fft_r2c"), &msg
			r.Metrics.TokensPerS = nil
		}
		if _, err := db.RecordResult(ctx, phoneModel, r); err != nil {
			t.Fatal(err)
		}
	}
	cpu := compat.Result{Target: compat.TargetCPU, Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate),
		Mode: compat.Ptr(compat.ModeFull), Revision: strings.Repeat("d", 40), DevicesUsed: 1, TestedAt: t0.Add(13 * 24 * time.Hour),
		Runtime: compat.Runtime{Python: "3.12.8", Torch: "2.15.0+cpu", Transformers: "5.23.0", Harness: "1.4.0", Device: "cpu", DeviceCount: 1},
		Modes: map[string]compat.Verdict{compat.ModeTrain: {Status: compat.StatusPass, Stage: compat.Ptr("numerics"),
			Metrics: compat.ModeMetrics{StepMS: compat.Ptr(812.5), TokensPerS: compat.Ptr(157.5)}}},
		Repro: compat.Repro(phoneModel, strings.Repeat("d", 40), compat.TargetCPU, compat.ModeFull)}
	if _, err := db.RecordResult(ctx, phoneModel, cpu); err != nil {
		t.Fatal(err)
	}
	return serveStore(t, db)
}

// The JavaScript that finds what a keyboard cannot scroll: every element
// that scrolls (its overflow is auto or scroll and its content is larger
// than its box) must take the focus itself or hold something that does
// (axe-core's scrollable-region-focusable, written out).
const unreachableScrollers = `(() => {
  const focusable = "a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])";
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const cs = getComputedStyle(el);
    const sx = /(auto|scroll)/.test(cs.overflowX) && el.scrollWidth > el.clientWidth + 1;
    const sy = /(auto|scroll)/.test(cs.overflowY) && el.scrollHeight > el.clientHeight + 1;
    if (!sx && !sy) continue;
    if (el.offsetParent === null && cs.position !== "fixed") continue; // not rendered (a closed <details>)
    if (el.matches(focusable) || el.querySelector(focusable)) continue;
    out.push(el.tagName.toLowerCase() + "." + el.className + " " + el.scrollWidth + "x" + el.scrollHeight);
  }
  return out;
})()`

// midWordBreaks lists where the h1's text wraps to a new line other than
// right after "/" or "-".
const midWordBreaks = `(() => {
  const h = document.querySelector("h1.model-id");
  const out = [];
  let prevTop = null, prevChar = "";
  const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    for (let i = 0; i < n.data.length; i++) {
      const r = document.createRange();
      r.setStart(n, i); r.setEnd(n, i + 1);
      const rect = r.getClientRects()[0];
      if (!rect) continue;
      if (prevTop !== null && rect.top > prevTop + 2 && prevChar !== "/" && prevChar !== "-") out.push(prevChar + "|" + n.data[i]);
      prevTop = rect.top; prevChar = n.data[i];
    }
  }
  return out;
})()`

// TestModelPageOnAPhone: the model page fits a 390 px screen (its devices
// table no longer overflows to 549 px), breaks the model id only at its
// parts, and every region that scrolls can be reached, and scrolled, by
// keyboard (the History table could not be).
func TestModelPageOnAPhone(t *testing.T) {
	ctx := newBrowser(t)
	base := phoneSite(t)
	seen := watch(t, ctx)
	defer seen.check(t)

	page := base + "/models/" + phoneModel
	step(t, ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("h1.model-id")))
	if h := eval[string](t, ctx, `document.querySelector("h1").textContent`); h != phoneModel {
		t.Errorf("h1 = %q", h)
	}
	for _, sel := range []string{"table.devices", "#history", "table.metrics", "table.matrix"} {
		if !eval[bool](t, ctx, `!!document.querySelector("`+sel+`")`) {
			t.Errorf("the page lacks %s: the test would prove nothing of it", sel)
		}
	}
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		wide := eval[[]string](t, ctx, `[...document.querySelectorAll("main *")].filter(e => e.getBoundingClientRect().right > 391).slice(0, 8).map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`)
		t.Errorf("the model page is %d px wide on a 390 px screen; too wide: %v", w, wide)
	}
	if w := eval[float64](t, ctx, `document.querySelector("table.devices").getBoundingClientRect().right`); w > 390 {
		t.Errorf("the devices table ends at %.0f px", w)
	}
	if lines := eval[float64](t, ctx, `document.querySelector("h1.model-id").getBoundingClientRect().height / parseFloat(getComputedStyle(document.querySelector("h1.model-id")).lineHeight || 30)`); lines < 1.5 {
		t.Logf("the id fits one line (%.1f): the break test below proves little", lines)
	}
	if bad := eval[[]string](t, ctx, midWordBreaks); len(bad) > 0 {
		t.Errorf("the model id breaks inside a word at %v", bad)
	}
	if bad := eval[[]string](t, ctx, unreachableScrollers); len(bad) > 0 {
		t.Errorf("regions that scroll and that a keyboard cannot reach: %v", bad)
	}
	screenshot(t, ctx, "model-phone.png", true)

	// The keyboard: Tab reaches the History table's region, and the arrow
	// keys scroll it sideways.
	if !eval[bool](t, ctx, `(() => { const w = document.querySelector('[aria-labelledby="history"]'); return w.scrollWidth > w.clientWidth; })()`) {
		t.Fatal("the History table does not scroll at 390 px: the keyboard test would prove nothing")
	}
	step(t, ctx, "focus the top", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.scrollTo(0, 0)`))
	reached := false
	for range 400 {
		step(t, ctx, "tab", chromedp.KeyEvent(kb.Tab))
		if eval[bool](t, ctx, `document.activeElement.matches('[aria-labelledby="history"]')`) {
			reached = true
			break
		}
	}
	if !reached {
		t.Fatal("Tab never reaches the History table")
	}
	if name := eval[string](t, ctx, `(() => { const w = document.activeElement; return w.getAttribute("role") + ":" + document.getElementById(w.getAttribute("aria-labelledby")).textContent; })()`); name != "region:History" {
		t.Errorf("the focused region is %q", name)
	}
	step(t, ctx, "arrow right", chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight))
	step(t, ctx, "scrolled", chromedp.Poll[chromedp.Void](`document.activeElement.scrollLeft > 0`))

	// Desktop: the same page, nothing unreachable either.
	step(t, ctx, "desktop", chromedp.EmulateViewport(1440, 900), chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("h1.model-id")))
	if bad := eval[[]string](t, ctx, unreachableScrollers); len(bad) > 0 {
		t.Errorf("desktop: regions that scroll and that a keyboard cannot reach: %v", bad)
	}
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 1440 {
		t.Errorf("the model page is %d px wide on a 1440 px screen", w)
	}
}

// TestHeadlineWithoutTPU: on a host without a chip (every result a CPU
// run) the table's headline says there is no TPU result and names the CPU
// reference's figures as such, on a phone as on a desktop, and the page
// fits the phone.
func TestHeadlineWithoutTPU(t *testing.T) {
	ctx := newBrowser(t)
	db := storetest.MustOpen(t)
	bg := context.Background()
	var ups []store.ModelUpsert
	for _, id := range []string{"org37/model-00117-instruct-preview", "org1/small-model", "org2/other"} {
		ups = append(ups, store.ModelUpsert{ID: id, Task: "text-generation", Library: "transformers", Downloads: 1000})
	}
	if err := db.UpsertModels(bg, ups); err != nil {
		t.Fatal(err)
	}
	for i, u := range ups[:2] {
		r := compat.Result{Target: compat.TargetCPU, Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate),
			Mode: compat.Ptr(compat.ModeFull), Revision: "r", DevicesUsed: 1, TestedAt: time.Date(2026, 11, 30, 12, i, 0, 0, time.UTC),
			Runtime: compat.Runtime{Torch: "2.15.0+cpu", Transformers: "5.23.0", Harness: "1.4.0", Device: "cpu", DeviceCount: 1}}
		if i == 1 {
			r.Status, r.Stage = compat.StatusFail, compat.Ptr(compat.StageForward)
		}
		if _, err := db.RecordResult(bg, u.ID, r); err != nil {
			t.Fatal(err)
		}
	}
	base := serveStore(t, db)
	seen := watch(t, ctx)
	defer seen.check(t)
	for _, vp := range []struct {
		name string
		act  chromedp.Action[chromedp.Void]
		w    int
	}{
		{"desktop", chromedp.EmulateViewport(1440, 900), 1440},
		{"phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)), 390},
	} {
		step(t, ctx, vp.name, vp.act, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("section.headline")))
		head := eval[string](t, ctx, `document.querySelector("section.headline").innerText`)
		for _, want := range []string{"No TPU results on this instance yet.", "CPU reference, measured on CPU (not TorchTPU)", "50.0 %"} {
			if !strings.Contains(head, want) {
				t.Errorf("%s: the headline lacks %q:\n%s", vp.name, want, head)
			}
		}
		if strings.Contains(head, "TorchTPU, measured on TPU") {
			t.Errorf("%s: TPU figures without a TPU run:\n%s", vp.name, head)
		}
		if ev := eval[[]string](t, ctx, `[...document.querySelectorAll("td[data-label=Status] .ev")].map(e => e.textContent)`); len(ev) != 3 {
			t.Errorf("%s: the rows' evidence: %v", vp.name, ev)
		}
		if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > vp.w {
			t.Errorf("%s: the table page is %d px wide", vp.name, w)
		}
		screenshot(t, ctx, "table-cpu-only-"+vp.name+".png", false)
	}
}
