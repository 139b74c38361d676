package web

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// TestBreakID: a model id breaks after "/" and "-" only, and stays escaped.
func TestBreakID(t *testing.T) {
	for in, want := range map[string]string{
		"gpt2":               "gpt2",
		"org37/model-00117":  "org37/<wbr>model-<wbr>00117",
		"Qwen/Qwen3-0.6B":    "Qwen/<wbr>Qwen3-<wbr>0.6B",
		`a<b>/"c"&d`:         "a&lt;b&gt;/<wbr>&#34;c&#34;&amp;d",
		"org/x<script>-</a>": "org/<wbr>x&lt;script&gt;-<wbr>&lt;/<wbr>a&gt;",
	} {
		if got := string(show.BreakID(in)); got != want {
			t.Errorf("breakID(%q) = %q, want %q", in, got, want)
		}
	}
}

// scrollRegion is a container that may scroll sideways, with its attributes.
var scrollRegion = regexp.MustCompile(`<div class="table-wrap"([^>]*)>`)

// TestScrollRegionsTakeTheKeyboard: every scrolling table on every page is
// a labelled region that takes the focus (tabindex="0"), so that a keyboard
// can scroll it (axe: scrollable-region-focusable); the History table of a
// model page is one.
func TestScrollRegionsTakeTheKeyboard(t *testing.T) {
	ts := twoRuntimes(t)
	id := "fixed/model"
	for range 2 { // a history of several results
		ts.record(t, id, passOn(compat.TargetCPU, testTime, 3))
	}
	regions := 0
	for _, path := range []string{"/", "/models/" + id, "/methodology", "/runtimes", "/compare"} {
		r := ts.get(t, path)
		if r.status != 200 {
			t.Fatalf("%s: %d", path, r.status)
		}
		found := scrollRegion.FindAllStringSubmatch(r.body, -1)
		if len(found) == 0 {
			t.Errorf("%s: no scrolling table", path)
		}
		for _, m := range found {
			regions++
			attrs := m[1]
			if !strings.Contains(attrs, ` tabindex="0"`) || !strings.Contains(attrs, ` role="region"`) ||
				!strings.Contains(attrs, ` aria-label="`) && !strings.Contains(attrs, ` aria-labelledby="`) {
				t.Errorf("%s: a scrolling table the keyboard cannot reach: %s", path, m[0])
			}
		}
		if path == "/models/"+id && !strings.Contains(r.body, `<div class="table-wrap" tabindex="0" role="region" aria-labelledby="history">`) {
			t.Errorf("%s: the History table is not a focusable region", path)
		}
	}
	if regions < 6 {
		t.Errorf("%d scrolling tables checked", regions)
	}
}

// TestDevicesTableIsTall: the readiness block's "Devices needed" table
// has a row per generation (three narrow columns), not a column per
// generation, so that it fits a phone (549 px wide before).
func TestDevicesTableIsTall(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "org/big-model", Task: "text-generation", Library: "transformers"})
	r := readiness.Readiness{MinDevices: map[string]int{"v5e": 4, "v5p": 1, "v6e": 2, "v7x": 1}}
	if err := ts.db.SetReadiness(t.Context(), store.ReadinessUpdate{ModelID: "org/big-model", SHA: "x", Version: readiness.Version,
		Readiness: r}); err != nil {
		t.Fatal(err)
	}
	body := ts.get(t, "/models/org/big-model").body
	_, table, ok := strings.Cut(body, `<table class="devices">`)
	table, _, _ = strings.Cut(table, "</table>")
	if !ok || strings.Count(table, "<tr>") != 1+len(readiness.Generations) || strings.Count(table, `<th scope="col"`) != 3 {
		t.Errorf("devices table:\n%s", table)
	}
	for gen, n := range map[string]string{"v5e": "4", "v6e": "2"} {
		if !regexp.MustCompile(`<tr><th scope="row">` + gen + `</th><td class="num">[^<]+</td><td class="num">` + n + `</td></tr>`).MatchString(table) {
			t.Errorf("no row %s with %s devices:\n%s", gen, n, table)
		}
	}
}

// TestTasksCoveredIsALine: the headline's "Tasks covered" card spans the
// headline's width, as the runtime's does, so that its sentence is a line.
func TestTasksCoveredIsALine(t *testing.T) {
	ts := newTestServer(t, 5, 5, Config{})
	if body := ts.get(t, "/").body; !strings.Contains(body, `<div class="wide"><dt><a href="/methodology#tasks">Tasks covered</a></dt>`) {
		t.Error("the Tasks covered card is not wide")
	}
}
