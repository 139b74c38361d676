package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

func ref(t compat.Target, torch, tt, tf, h string) compat.RuntimeRef {
	return compat.RuntimeRef{Target: t, Torch: torch, TorchTPU: tt, Transformers: tf, Harness: h}
}

func TestRuntimeLabel(t *testing.T) {
	v1 := ref("tpu", "2.15.0", "0.1.0", "5.23.0", "1")
	for _, c := range []struct {
		name string
		prev *compat.RuntimeRef
		cur  compat.RuntimeRef
		want string
	}{
		{"first on tpu", nil, v1, "torch_tpu 0.1.0"},
		{"first on cpu", nil, ref("cpu", "2.15.0", "", "5.23.0", "1"), "torch 2.15.0"},
		{"torch_tpu changed", &v1, ref("tpu", "2.15.0", "0.2.0", "5.23.0", "1"), "torch_tpu 0.2.0"},
		{"two changed", &v1, ref("tpu", "2.16.0", "0.1.0", "5.24.0", "1"), "torch 2.16.0, transformers 5.24.0"},
		{"harness dropped", &v1, ref("tpu", "2.15.0", "0.1.0", "5.23.0", ""), "harness none"},
		{"another target", &v1, ref("cpu", "2.15.0", "", "5.23.0", "1"), "torch 2.15.0 on cpu"},
		{"no versions at all", nil, compat.RuntimeRef{Target: "cpu"}, "no versions"},
	} {
		if got := runtimeLabel(c.prev, c.cur); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func stats(r compat.RuntimeRef, day int) store.RuntimeStats {
	at := testTime.Add(time.Duration(day) * 24 * time.Hour)
	return store.RuntimeStats{Ref: r, FirstSeen: at, LastSeen: at}
}

func TestPickPair(t *testing.T) {
	tpu1, tpu2, tpu3 := ref("tpu", "2", "0.1", "5", "1"), ref("tpu", "2", "0.2", "5", "1"), ref("tpu", "2", "0.3", "5", "1")
	cpu1, cpu2 := ref("cpu", "2", "", "5", "1"), ref("cpu", "2.1", "", "5", "1")
	// Newest first, targets interleaved as the store gives them.
	all := []store.RuntimeStats{stats(cpu2, 9), stats(tpu3, 8), stats(tpu2, 5), stats(cpu1, 2), stats(tpu1, 1)}
	for _, c := range []struct {
		name             string
		rts              []store.RuntimeStats
		base, head       string
		wantBase, wantHd compat.RuntimeRef
		wantErr          error
	}{
		{"default: tpu's two newest", all, "", "", tpu2, tpu3, nil},
		{"default without tpu: cpu", []store.RuntimeStats{stats(cpu2, 9), stats(cpu1, 2)}, "", "", cpu1, cpu2, nil},
		{"both given", all, tpu1.Key(), tpu3.Key(), tpu1, tpu3, nil},
		{"both given, reversed", all, tpu3.Key(), tpu1.Key(), tpu3, tpu1, nil},
		{"across targets", all, cpu1.Key(), tpu3.Key(), cpu1, tpu3, nil},
		{"head alone: the one before it", all, "", tpu2.Key(), tpu1, tpu2, nil},
		{"base alone: the newest on its target", all, cpu1.Key(), "", cpu1, cpu2, nil},
		{"head alone, the first", all, "", tpu1.Key(), compat.RuntimeRef{}, compat.RuntimeRef{}, ErrNotFound},
		{"base alone, the newest", all, tpu3.Key(), "", compat.RuntimeRef{}, compat.RuntimeRef{}, ErrBadRequest},
		{"same twice", all, tpu2.Key(), tpu2.Key(), compat.RuntimeRef{}, compat.RuntimeRef{}, ErrBadRequest},
		{"malformed", all, "tpu~<x>", tpu2.Key(), compat.RuntimeRef{}, compat.RuntimeRef{}, ErrBadRequest},
		{"unknown", all, ref("tpu", "9", "9", "9", "9").Key(), tpu2.Key(), compat.RuntimeRef{}, compat.RuntimeRef{}, ErrNotFound},
		{"one runtime only", []store.RuntimeStats{stats(tpu1, 1)}, "", "", compat.RuntimeRef{}, compat.RuntimeRef{}, errTooFewRuntimes},
		{"none", nil, "", "", compat.RuntimeRef{}, compat.RuntimeRef{}, errTooFewRuntimes},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, h, err := pickPair(c.rts, c.base, c.head)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("error %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil || b.Ref != c.wantBase || h.Ref != c.wantHd {
				t.Errorf("= %v, %v, %v; want %v, %v", b.Ref.Key(), h.Ref.Key(), err, c.wantBase.Key(), c.wantHd.Key())
			}
		})
	}
}

func TestHeadline(t *testing.T) {
	share := func(f float64) *float64 { return &f }
	for _, c := range []struct {
		h    compare.Headline
		want string
	}{
		{compare.Headline{Counts: map[compare.Kind]int{compare.Fixed: 14, compare.Regressed: 2}, FixedShare: share(0.09), RegressedShare: share(0.004)},
			"torch_tpu 0.2.0 fixes 14 models (9.0 % of downloads), breaks 2 (0.4 % of downloads)"},
		{compare.Headline{Counts: map[compare.Kind]int{compare.Fixed: 1}, FixedShare: share(0.5), RegressedShare: share(0)},
			"torch_tpu 0.2.0 fixes 1 model (50.0 % of downloads), breaks 0"},
		{compare.Headline{Counts: map[compare.Kind]int{compare.Fixed: 3, compare.Regressed: 1}},
			"torch_tpu 0.2.0 fixes 3 models, breaks 1"}, // no downloads: no shares
		{compare.Headline{Counts: map[compare.Kind]int{compare.Regressed: 2}, FixedShare: share(0), RegressedShare: share(0.25)},
			"torch_tpu 0.2.0 fixes 0 models, breaks 2 (25.0 % of downloads)"}, // nothing fixed: no share of it
	} {
		if got := headline("torch_tpu 0.2.0", c.h); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// Two torch_tpu releases on tpu, as a scanner would record them.
var (
	rtV1         = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.1.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e", DeviceCount: 1}
	rtV2         = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e", DeviceCount: 1}
	keyV1, keyV2 = rtV1.Ref("tpu").Key(), rtV2.Ref("tpu").Key()
)

// twoRuntimes records: fixed/model (fail → pass), broken/model (pass →
// fail), steady/model (pass → pass), new/model (only on v2, fail),
// failing/model (fail → oom), env/model (pass → error, no verdict).
func twoRuntimes(t *testing.T) *testServer {
	t.Helper()
	ts := newTestServer(t, 0, 0, Config{PublicURL: "https://compat.example.org"})
	ts.upsert(t, store.ModelUpsert{ID: "fixed/model", Downloads: 9000}, store.ModelUpsert{ID: "broken/model", Downloads: 500},
		store.ModelUpsert{ID: "steady/model", Downloads: 400}, store.ModelUpsert{ID: "new/model", Downloads: 50},
		store.ModelUpsert{ID: "failing/model", Downloads: 40}, store.ModelUpsert{ID: "env/model", Downloads: 10})
	on := func(r compat.Result, rt compat.Runtime, hours int) compat.Result {
		r.Runtime = rt
		r.TestedAt = testTime.Add(time.Duration(hours) * time.Hour)
		return r
	}
	oom := failOn("tpu", testTime, "x")
	oom.Status, oom.Signature, oom.FailureClass, oom.Stage = compat.StatusOOM, nil, compat.Ptr(compat.ClassOOM), compat.Ptr(compat.StageLoad)
	errored := passOn("tpu", testTime, 0)
	errored.Status, errored.Metrics = compat.StatusError, compat.Metrics{}
	for _, r := range []struct {
		id  string
		res compat.Result
	}{
		{"fixed/model", on(failOn("tpu", testTime, "aten::_fft_r2c"), rtV1, -48)},
		{"broken/model", on(passOn("tpu", testTime, 50), rtV1, -47)},
		{"steady/model", on(passOn("tpu", testTime, 70), rtV1, -46)},
		{"failing/model", on(failOn("tpu", testTime, "aten::y"), rtV1, -45)},
		{"env/model", on(passOn("tpu", testTime, 10), rtV1, -44)},
		{"fixed/model", on(passOn("tpu", testTime, 80), rtV2, -2)},
		{"broken/model", on(failOn("tpu", testTime, "aten::z"), rtV2, -2)},
		{"steady/model", on(passOn("tpu", testTime, 75), rtV2, -1)},
		{"new/model", on(failOn("tpu", testTime, "aten::w"), rtV2, -1)},
		{"failing/model", on(oom, rtV2, -1)},
		{"env/model", on(errored, rtV2, 0)},
	} {
		ts.record(t, r.id, r.res)
	}
	return ts
}

func TestAPIRuntimes(t *testing.T) {
	ts := twoRuntimes(t)
	r := ts.get(t, "/api/v1/runtimes")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var raw struct {
		Runtimes []map[string]any `json:"runtimes"`
	}
	if err := json.Unmarshal([]byte(r.body), &raw); err != nil || len(raw.Runtimes) != 2 {
		t.Fatalf("%v: %s", err, r.body)
	}
	contract := []string{"key", "target", "torch", "torch_tpu", "transformers", "harness", "first_seen", "last_seen",
		"tested", "pass_rate", "download_weighted_pass_rate"}
	for _, rt := range raw.Runtimes {
		for _, k := range contract {
			if _, ok := rt[k]; !ok {
				t.Errorf("runtime lacks %q: %v", k, rt)
			}
		}
	}
	got := decode[runtimesBody](t, r)
	// v2, newest: fixed pass, broken fail, steady pass, new fail, failing oom
	// (env error is no verdict): 5 tested, 2 pass; downloads 9400 of 9990.
	want := []runtimeJSON{
		{Key: keyV2, Target: "tpu", Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1",
			FirstSeen: "2026-11-30T10:00:00Z", LastSeen: "2026-11-30T12:00:00Z", Tested: 5, Models: 6, Passed: 2},
		{Key: keyV1, Target: "tpu", Torch: "2.15.0", TorchTPU: "0.1.0", Transformers: "5.23.0", Harness: "1",
			FirstSeen: "2026-11-28T12:00:00Z", LastSeen: "2026-11-28T16:00:00Z", Tested: 5, Models: 5, Passed: 3},
	}
	wantRates := [][2]float64{{2.0 / 5, 9400.0 / 9990}, {3.0 / 5, 910.0 / 9950}}
	for i := range want {
		g := got.Runtimes[i]
		if g.PassRate == nil || g.DownloadWeightedPassRate == nil {
			t.Fatalf("runtime %d: null rates", i)
		}
		if *g.PassRate != wantRates[i][0] || abs(*g.DownloadWeightedPassRate-wantRates[i][1]) > 1e-12 {
			t.Errorf("runtime %d rates %v %v, want %v", i, *g.PassRate, *g.DownloadWeightedPassRate, wantRates[i])
		}
		g.PassRate, g.DownloadWeightedPassRate = nil, nil
		if g != want[i] {
			t.Errorf("runtime %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}
	if cpu := decode[runtimesBody](t, ts.get(t, "/api/v1/runtimes?target=cpu")); len(cpu.Runtimes) != 0 {
		t.Errorf("cpu: %+v", cpu)
	}
	if r := ts.get(t, "/api/v1/runtimes?target=gpu"); r.status != 400 {
		t.Errorf("unknown target: %d", r.status)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func ids(items []compareItemJSON) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID)
	}
	sort.Strings(out)
	return out
}

func TestAPICompare(t *testing.T) {
	ts := twoRuntimes(t)
	for _, q := range []string{"", "?base=" + keyV1 + "&head=" + keyV2, "?head=" + keyV2, "?base=" + keyV1} {
		r := ts.get(t, "/api/v1/compare"+q)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.body), &raw); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"base", "head", "fixed", "regressed", "new", "still_failing"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("%s: no %q", q, k)
			}
		}
		c := decode[compareBody](t, r)
		if c.Base != keyV1 || c.Head != keyV2 {
			t.Errorf("%s: base %s head %s", q, c.Base, c.Head)
		}
		for name, pair := range map[string][2][]string{
			"fixed":         {ids(c.Fixed), {"fixed/model"}},
			"regressed":     {ids(c.Regressed), {"broken/model"}},
			"new":           {ids(c.New), {"new/model"}},
			"still_failing": {ids(c.StillFailing), {"failing/model"}},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("%s %s = %v, want %v", q, name, pair[0], pair[1])
			}
		}
		wantFixed := compareItemJSON{ID: "fixed/model", Downloads: 9000, BaseStatus: "fail", HeadStatus: "pass",
			Signature: compat.Ptr("unsupported_op:aten::_fft_r2c")}
		if len(c.Fixed) == 1 && !reflect.DeepEqual(c.Fixed[0], wantFixed) {
			t.Errorf("fixed item %+v, want %+v", c.Fixed[0], wantFixed)
		}
		if len(c.New) == 1 && (c.New[0].BaseStatus != "untested" || c.New[0].HeadStatus != "fail") {
			t.Errorf("new item %+v", c.New[0])
		}
		if len(c.StillFailing) == 1 && (c.StillFailing[0].Signature == nil || *c.StillFailing[0].Signature != "oom") {
			t.Errorf("still failing item %+v: want head's root cause, oom", c.StillFailing[0])
		}
		// fixed 9000 of 9000+500+400+50+40+10 = 10000 downloads with a verdict
		// on either runtime (env/model passed on v1).
		if want := "torch_tpu 0.2.0 fixes 1 model (90.0 % of downloads), breaks 1 (5.0 % of downloads)"; c.Headline != want {
			t.Errorf("headline %q, want %q", c.Headline, want)
		}
		if c.Counts[compare.StillPassing] != 1 || c.Counts[compare.NoVerdict] != 1 {
			t.Errorf("counts %v", c.Counts)
		}
	}
	for q, want := range map[string]int{
		"?base=tpu~%3Cscript%3E":                               400,
		"?base=" + keyV2 + "&head=" + keyV2:                    400,
		"?base=" + ref("tpu", "9", "9", "9", "9").Key():        404,
		"?head=" + keyV1:                                       404,
		"?base=" + keyV2:                                       400, // the newest: nothing newer to compare with
		"?base=" + keyV1 + "&head=" + rtV1.Ref("cpu").Key():    404,
		"?base=" + strings.Repeat("a", 600) + "&head=" + keyV2: 400,
	} {
		if r := ts.get(t, "/api/v1/compare"+q); r.status != want || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s, want %d", q, r.status, r.body, want)
		}
	}
}

func TestAPICompareTooFew(t *testing.T) {
	ts := newTestServer(t, 20, 15, Config{}) // storetest.Seed: one runtime per target
	if r := ts.get(t, "/api/v1/compare"); r.status != 404 || !strings.Contains(r.body, "fewer than two runtimes") {
		t.Errorf("%d %s", r.status, r.body)
	}
	r := ts.get(t, "/compare")
	if r.status != 200 || !strings.Contains(r.body, "There is nothing to compare yet") {
		t.Errorf("page: %d %s", r.status, r.body)
	}
}

// svgAlt finds the text alternatives of the charts on a page: the title
// and desc that each role="img" SVG names.
var svgAlt = regexp.MustCompile(`(?s)<svg [^>]*role="img" aria-labelledby="([^" ]+)" aria-describedby="([^"]+)"[^>]*>\s*<title id="([^"]+)">([^<]+)</title>\s*<desc id="([^"]+)">([^<]+)</desc>`)

func chartAlts(t *testing.T, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range svgAlt.FindAllStringSubmatch(body, -1) {
		if m[1] != m[3] || m[2] != m[5] {
			t.Errorf("aria-labelledby %s and aria-describedby %s name other ids than %s %s", m[1], m[2], m[3], m[5])
		}
		out[m[4]] = m[6]
	}
	return out
}

func TestRuntimesAndComparePages(t *testing.T) {
	ts := twoRuntimes(t)
	r := ts.get(t, "/runtimes")
	if r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	alts := chartAlts(t, r.body)
	desc, ok := alts["Pass rate by runtime on TPU (TorchTPU)"]
	if !ok {
		t.Fatalf("no trend chart in %v", alts)
	}
	for _, want := range []string{"2 points, from torch_tpu 0.1.0 to torch_tpu 0.2.0", "Pass rate: 60.0 % (torch_tpu 0.1.0) to 40.0 % (torch_tpu 0.2.0)"} {
		if !strings.Contains(desc, want) {
			t.Errorf("trend desc %q lacks %q", desc, want)
		}
	}
	for _, want := range []string{keyV1, keyV2, `href="/compare?base=` + keyV1 + `&amp;head=` + keyV2 + `"`, "60.0 %", "40.0 %"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/runtimes lacks %q", want)
		}
	}

	c := ts.get(t, "/compare")
	if c.status != 200 {
		t.Fatalf("%d", c.status)
	}
	for _, want := range []string{
		"torch_tpu 0.2.0 fixes 1 model (90.0 % of downloads), breaks 1 (5.0 % of downloads)",
		`<h2 id="list-regressed">Regressed <span class="muted">(1)</span></h2>`,
		`<a href="/models/broken/model">broken/<wbr>model</a>`, `<a href="/models/fixed/model">fixed/<wbr>model</a>`,
		`<a href="/models/new/model">new/<wbr>model</a>`, `<a href="/models/failing/model">failing/<wbr>model</a>`,
		`<option value="` + keyV1 + `" selected>`,
	} {
		if !strings.Contains(c.body, want) {
			t.Errorf("/compare lacks %q", want)
		}
	}
	// Each list holds its own models: the regressed section names broken/model only.
	sec := c.body[strings.Index(c.body, `id="list-regressed"`):strings.Index(c.body, `id="list-fixed"`)]
	if !strings.Contains(sec, "broken/model") || strings.Contains(sec, "fixed/model") {
		t.Errorf("regressed section: %s", sec)
	}
	if r := ts.get(t, "/compare?base=x"); r.status != 400 {
		t.Errorf("malformed key: %d", r.status)
	}
}

func TestTableAndModelCharts(t *testing.T) {
	ts := twoRuntimes(t)
	alts := chartAlts(t, ts.get(t, "/").body)
	if _, ok := alts["Pass rate by runtime on TPU (TorchTPU)"]; !ok {
		t.Errorf("table page: no trend chart in %v", alts)
	}
	if d := alts["Top failure signatures by downloads on any target"]; !strings.Contains(d, "unsupported_op:aten::z 5.0 % (1 model)") {
		t.Errorf("table page failure chart desc %q", d)
	}

	alts = chartAlts(t, ts.get(t, "/models/fixed/model").body)
	want := map[string]string{
		"Status on TPU (TorchTPU) over time":  "2 results from 2026-11-28 12:00 UTC to 2026-11-30 10:00 UTC: 1 fail, 1 pass. Latest: 2026-11-30 10:00 UTC: pass",
		"Tokens per second on TPU (TorchTPU)": "One point per result, times in UTC. 2 points, from 2026-11-28 12:00 to 2026-11-30 10:00. Tokens/s: 80.0 (2026-11-30 10:00); not measured at 1 of 2 points.",
		"Compile time (s) on TPU (TorchTPU)":  "",
	}
	for title, desc := range want {
		got, ok := alts[title]
		if title == "Compile time (s) on TPU (TorchTPU)" {
			// never measured: no chart, a sentence instead
			if ok {
				t.Errorf("compile chart drawn without a measurement: %q", got)
			}
			continue
		}
		if !ok || !strings.Contains(got, desc) {
			t.Errorf("model page chart %q: %q (present %v), want %q", title, got, ok, desc)
		}
	}
	if body := ts.get(t, "/models/fixed/model").body; !strings.Contains(body, "Not measured on TPU (TorchTPU) yet.") {
		t.Error("no sentence for the unmeasured compile time")
	}
}

func TestFeedRuntimeItem(t *testing.T) {
	ts := twoRuntimes(t)
	f := decode[jsonFeed](t, ts.get(t, "/feed.json"))
	var items []feedItem
	for _, it := range f.Items {
		if len(it.Tags) > 0 && it.Tags[0] == "runtime" {
			items = append(items, it)
		}
	}
	if len(items) != 1 {
		t.Fatalf("%d runtime items, want 1 (the first runtime has nothing before it)", len(items))
	}
	it := items[0]
	wantURL := "https://compat.example.org/compare?base=" + keyV1 + "&head=" + keyV2
	if it.ID != wantURL || it.URL != wantURL || it.DatePublished != "2026-11-30T10:00:00Z" || it.DateModified != "2026-11-30T12:00:00Z" {
		t.Errorf("item %+v", it)
	}
	if it.Title != "New runtime on tpu: torch_tpu 0.2.0 fixes 1 model (90.0 % of downloads), breaks 1 (5.0 % of downloads)" {
		t.Errorf("title %q", it.Title)
	}
	for _, want := range []string{"Regressed:\nbroken/model: pass → fail (unsupported_op:aten::z)", "Fixed:\nfixed/model: fail → pass (unsupported_op:aten::_fft_r2c)",
		"Newly tested:\nnew/model: untested → fail"} {
		if !strings.Contains(it.ContentText, want) {
			t.Errorf("content_text lacks %q:\n%s", want, it.ContentText)
		}
	}
	if !strings.Contains(it.ContentHTML, `<a href="https://compat.example.org/models/broken/model">broken/model</a>: pass → fail`) {
		t.Errorf("content_html: %s", it.ContentHTML)
	}
	// Newest first overall: the runtime item sits among the events by date.
	for i := 1; i < len(f.Items); i++ {
		if f.Items[i-1].DatePublished < f.Items[i].DatePublished {
			t.Errorf("items %d and %d out of order: %s < %s", i-1, i, f.Items[i-1].DatePublished, f.Items[i].DatePublished)
		}
	}
}

// The compare page is cached until the data changes, and then shows the change.
func TestComparePageCache(t *testing.T) {
	ts := twoRuntimes(t)
	first := ts.get(t, "/compare").body
	if again := ts.get(t, "/compare?base="+keyV1+"&head="+keyV2).body; again != first {
		t.Error("the same comparison rendered twice differs")
	}
	if !strings.Contains(first, `<h2 id="list-fixed">Fixed <span class="muted">(1)</span></h2>`) {
		t.Fatalf("one fix before the write")
	}
	r := passOn("tpu", testTime.Add(time.Hour), 60)
	r.Runtime = rtV2
	ts.record(t, "failing/model", r) // still failing → fixed
	if after := ts.get(t, "/compare").body; !strings.Contains(after, `<h2 id="list-fixed">Fixed <span class="muted">(2)</span></h2>`) {
		t.Error("the cached page outlived the write")
	}
}

// countingStore counts the comparisons read (Compare, ComparePages) and
// the list sizes asked.
type countingStore struct {
	Store
	n      atomic.Int64
	limits sync.Map // limit → true
}

func (c *countingStore) Compare(ctx context.Context, q store.CompareQuery) (store.ComparePage, error) {
	c.n.Add(1)
	c.limits.Store(q.Limit, true)
	return c.Store.Compare(ctx, q)
}

// ComparePages counts each comparison it reads as Compare does.
func (c *countingStore) ComparePages(ctx context.Context, qs []store.CompareQuery) ([]store.ComparePage, error) {
	c.n.Add(int64(len(qs)))
	for _, q := range qs {
		c.limits.Store(q.Limit, true)
	}
	return c.Store.ComparePages(ctx, qs)
}

// The feed reads one short page of each runtime's comparison with the one
// before it, once per change of the data.
func TestFeedReadsOnePageOfEachComparison(t *testing.T) {
	ts := twoRuntimes(t)
	cs := &countingStore{Store: ts.db}
	s, err := New(Config{Store: cs, Logger: discard, APIRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	counted := &testServer{Server: s, db: ts.db}
	calls := func(what string, want int64) {
		t.Helper()
		if r := counted.get(t, "/feed.json"); r.status != 200 {
			t.Fatalf("%s: feed %d", what, r.status)
		}
		if got := cs.n.Swap(0); got != want {
			t.Errorf("%s: %d comparisons read, want %d", what, got, want)
		}
	}
	calls("first feed", 1) // v1 → v2
	calls("unchanged", 0)  // cached
	rtV3 := rtV2
	rtV3.TorchTPU = "0.3.0"
	r := passOn("tpu", testTime.Add(time.Hour), 90)
	r.Runtime = rtV3
	ts.record(t, "steady/model", r)
	calls("a third runtime", 2) // v1 → v2, v2 → v3
	cs.limits.Range(func(k, _ any) bool {
		if k != feedListed {
			t.Errorf("the feed asked for pages of %v models, want %d", k, feedListed)
		}
		return true
	})
}

// The compare page's two selects list every runtime and each marks the one
// compared on its side; without a comparison neither marks any.
func TestRuntimeOptionsSelectTheComparedPair(t *testing.T) {
	v1, v2 := store.RuntimeStats{Ref: rtV1.Ref("tpu")}, store.RuntimeStats{Ref: rtV2.Ref("tpu")}
	rts := []store.RuntimeStats{v2, v1}
	selected := func(opts []runtimeOption) (keys []string) {
		if len(opts) != len(rts) {
			t.Errorf("%d options for %d runtimes", len(opts), len(rts))
		}
		for _, o := range opts {
			if o.Selected {
				keys = append(keys, o.Key)
			}
		}
		return keys
	}
	for _, c := range []struct {
		name             string
		cmp              *comparison
		wantBase, wantHd []string
	}{
		{"v1 to v2", &comparison{Base: v1, Head: v2}, []string{keyV1}, []string{keyV2}},
		{"v2 to v1", &comparison{Base: v2, Head: v1}, []string{keyV2}, []string{keyV1}},
		{"no comparison", nil, nil, nil},
	} {
		base, head := runtimeOptions(rts, c.cmp)
		if got := selected(base); !slices.Equal(got, c.wantBase) {
			t.Errorf("%s: base selects %v, want %v", c.name, got, c.wantBase)
		}
		if got := selected(head); !slices.Equal(got, c.wantHd) {
			t.Errorf("%s: head selects %v, want %v", c.name, got, c.wantHd)
		}
	}
}

// A runtime's feed item lists only the kinds of change it has: no heading
// for an empty list.
func TestFeedRuntimeItemOmitsEmptyLists(t *testing.T) {
	r := compare.Result{
		Regressed: []compare.Item{{ID: "org/broken", BaseStatus: compat.StatusPass, HeadStatus: compat.StatusFail}},
		Headline:  compare.Headline{Counts: map[compare.Kind]int{compare.Regressed: 1}},
	}
	cmp := &comparison{Base: store.RuntimeStats{Ref: rtV1.Ref("tpu")}, Head: store.RuntimeStats{Ref: rtV2.Ref("tpu")}, Result: r, Label: "torch_tpu 0.2.0"}
	it, err := runtimeEntry("https://compat.example.org", cmp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(it.ContentText, "\n\nRegressed:\norg/broken: pass → fail") {
		t.Errorf("the regression is not listed:\n%s", it.ContentText)
	}
	for _, absent := range []string{"Fixed:", "Newly tested:"} {
		if strings.Contains(it.ContentText, absent) {
			t.Errorf("an empty list has a heading %q:\n%s", absent, it.ContentText)
		}
	}
}

// byDate puts the newest first and keeps the order of items published at
// the same time.
func TestByDate(t *testing.T) {
	items := []feedItem{{ID: "a", DatePublished: "2026-01-02T00:00:00Z"}, {ID: "b", DatePublished: "2026-01-01T00:00:00Z"},
		{ID: "c", DatePublished: "2026-01-02T00:00:00Z"}, {ID: "d", DatePublished: "2026-01-03T00:00:00Z"}, {ID: "e", DatePublished: "2026-01-02T00:00:00Z"}}
	byDate(items)
	var got []string
	for _, it := range items {
		got = append(got, it.ID)
	}
	if want := []string{"d", "a", "c", "e", "b"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// regressedOnV2 adds model id with downloads, passing on rtV1 and failing
// on rtV2: a regression of the comparison of v2 with v1.
func (ts *testServer) regressedOnV2(t *testing.T, id string, downloads int64) {
	t.Helper()
	ts.upsert(t, store.ModelUpsert{ID: id, Downloads: downloads})
	pass := passOn("tpu", testTime, 10)
	pass.Runtime = rtV1
	fail := failOn("tpu", testTime.Add(time.Hour), "aten::x")
	fail.Runtime = rtV2
	ts.record(t, id, pass)
	ts.record(t, id, fail)
}

// A comparison's list longer than ?limit= comes in pages: each answer
// says the list's total, and its cursor gives the next page of that list
// alone, until the last; a cursor of another comparison, or none of this
// store's, is refused.
func TestAPIComparePages(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	downloads := map[string]int64{"o/a": 50, "o/b": 40, "o/c": 40, "o/d": 40, "o/e": 30, "o/f": 20, "o/g": 10}
	for id, d := range downloads {
		ts.regressedOnV2(t, id, d)
	}
	want := []string{"o/a", "o/b", "o/c", "o/d", "o/e", "o/f", "o/g"} // most downloaded first, then by id
	pair := "/api/v1/compare?base=" + keyV1 + "&head=" + keyV2
	var got []string
	next := ""
	for page := 0; page == 0 || next != ""; page++ {
		u := pair + "&limit=2"
		if next != "" {
			u += "&cursor=" + url.QueryEscape(next)
		}
		r := ts.get(t, u)
		if r.status != 200 {
			t.Fatalf("page %d: %d %s", page, r.status, r.body)
		}
		body := decode[compareBody](t, r)
		if body.Counts[compare.Regressed] != 7 || len(body.Regressed) > 2 {
			t.Fatalf("page %d: %d regressed of a total %d", page, len(body.Regressed), body.Counts[compare.Regressed])
		}
		for _, k := range []compare.Kind{compare.Fixed, compare.New, compare.StillFailing} {
			if body.NextCursors[k] != nil {
				t.Errorf("page %d: a cursor for the empty list %s", page, k)
			}
		}
		for _, it := range body.Regressed {
			got = append(got, it.ID)
		}
		next = ""
		if c := body.NextCursors[compare.Regressed]; c != nil {
			next = *c
		}
		if page > 7 {
			t.Fatal("the cursors do not end")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("regressed in pages: %v, want %v", got, want)
	}
	first := decode[compareBody](t, ts.get(t, pair+"&limit=2"))
	cursor := url.QueryEscape(*first.NextCursors[compare.Regressed])
	// A cursor is a position in a list: another comparison's is one too.
	if r := ts.get(t, "/api/v1/compare?base="+keyV2+"&head="+keyV1+"&cursor="+cursor); r.status != 200 {
		t.Errorf("another comparison's cursor: %d, want 200", r.status)
	}
	for _, u := range []string{
		pair + "&cursor=bm90LWEtY3Vyc29y",  // not in the form
		pair + "&cursor=still_passing~1~m", // not a listed kind
		pair + "&limit=0",
	} {
		if r := ts.get(t, u); r.status != 400 {
			t.Errorf("%s: %d, want 400", u, r.status)
		}
	}
}

// The compare page shows compareListMax models of each list, half the
// API's page, and a longer list's "Next page" link shows the rest of that
// list alone.
func TestComparePageShowsHalfTheAPIPage(t *testing.T) {
	if compareListMax*2 != compareAPILimit {
		t.Fatalf("compareListMax %d, the API's page %d", compareListMax, compareAPILimit)
	}
	ts := newTestServer(t, 0, 0, Config{})
	const n = compareListMax + 3
	for i := range n {
		ts.regressedOnV2(t, fmt.Sprintf("o/m%03d", i), int64(1000-i))
	}
	pair := "/compare?base=" + keyV1 + "&head=" + keyV2
	rows := regexp.MustCompile(`<a href="/models/o/(m\d+)">`)
	first := ts.get(t, pair)
	if first.status != 200 {
		t.Fatalf("%d %s", first.status, first.body)
	}
	var ids []string
	for _, m := range rows.FindAllStringSubmatch(first.body, -1) {
		ids = append(ids, m[1])
	}
	if len(ids) != compareListMax || ids[0] != "m000" || ids[len(ids)-1] != fmt.Sprintf("m%03d", compareListMax-1) {
		t.Fatalf("the first page lists %d models (%v), want the %d most downloaded", len(ids), ids, compareListMax)
	}
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">Next page \(` + fmt.Sprint(n) + ` in all\)`).FindStringSubmatch(first.body)
	if next == nil {
		t.Fatalf("no next page link for a list of %d:\n%s", n, first.body)
	}
	second := ts.get(t, html.UnescapeString(next[1]))
	if second.status != 200 {
		t.Fatalf("next page: %d %s", second.status, second.body)
	}
	ids = ids[:0]
	for _, m := range rows.FindAllStringSubmatch(second.body, -1) {
		ids = append(ids, m[1])
	}
	if want := []string{"m050", "m051", "m052"}; !slices.Equal(ids, want) {
		t.Errorf("the next page lists %v, want %v", ids, want)
	}
	if api := decode[compareBody](t, ts.get(t, "/api/v1/compare?base="+keyV1+"&head="+keyV2)); len(api.Regressed) != n {
		t.Errorf("the API's first page holds %d of %d (its page is %d)", len(api.Regressed), n, compareAPILimit)
	}
}
