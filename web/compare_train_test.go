package web

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
	"github.com/google-pytorch/torchtpu-scanner/web/pages"
)

// trainOnV is a passing result on runtime rt (hour h) whose train verdict
// has status st and signature sig ("" for none), or none when st is "".
func trainOnV(rt compat.Runtime, h int, st compat.Status, sig string) compat.Result {
	r := passOn("tpu", testTime.Add(time.Duration(h)*time.Hour), 10)
	r.Runtime = rt
	if st != "" {
		v := compat.Verdict{Status: st}
		if sig != "" {
			v.Signature = compat.Ptr(sig)
		}
		r = trained(r, v)
	}
	return r
}

// The comparison lists the train verdict's changes apart from inference,
// in the API (train_regressed, train_fixed, their counts, cursors and
// headline) and on the page ("breaks training of N models", its own
// section, a page of compareListMax and a next link); a model without a train verdict
// on one side is in neither; the Hub's strings are escaped.
func TestCompareListsTrainChangesApart(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	const evil = `train:backward:<img src=x onerror=alert(1)>`
	ts.upsert(t, store.ModelUpsert{ID: "org/train-broke", Downloads: 9000})
	ts.record(t, "org/train-broke", trainOnV(rtV1, 0, "pass", ""))
	ts.record(t, "org/train-broke", trainOnV(rtV2, 1, "fail", evil))
	ts.upsert(t, store.ModelUpsert{ID: "org/train-fixed", Downloads: 8000})
	ts.record(t, "org/train-fixed", trainOnV(rtV1, 0, "oom", "oom"))
	ts.record(t, "org/train-fixed", trainOnV(rtV2, 1, "pass", ""))
	ts.upsert(t, store.ModelUpsert{ID: "org/old-result", Downloads: 7000}) // no train verdict on base
	ts.record(t, "org/old-result", trainOnV(rtV1, 0, "", ""))
	ts.record(t, "org/old-result", trainOnV(rtV2, 1, "fail", ""))
	for i := range 101 { // 102 train regressions in all: two pages
		id := fmt.Sprintf("bulk/m-%03d", i)
		ts.upsert(t, store.ModelUpsert{ID: id, Downloads: int64(1000 - i)})
		ts.record(t, id, trainOnV(rtV1, 0, "pass", ""))
		ts.record(t, id, trainOnV(rtV2, 1, "crash", ""))
	}
	pair := "/api/v1/compare?base=" + keyV1 + "&head=" + keyV2

	c := decode[api.CompareBody](t, ts.get(t, pair))
	if c.Counts[compare.TrainRegressed] != 102 || c.Counts[compare.TrainFixed] != 1 || c.Counts[compare.Regressed] != 0 ||
		c.Counts[compare.StillPassing] != 104 {
		t.Errorf("counts %v: want 102 train regressed, 1 train fixed, inference all still passing", c.Counts)
	}
	if want := "torch_tpu 0.2.0 breaks training of 102 models, fixes training of 1"; c.TrainHeadline != want {
		t.Errorf("train headline %q, want %q", c.TrainHeadline, want)
	}
	if len(c.TrainRegressed) != 100 || c.TrainRegressed[0].ID != "org/train-broke" || c.TrainRegressed[1].ID != "bulk/m-000" {
		t.Fatalf("train regressed: %d, first %v", len(c.TrainRegressed), ids(c.TrainRegressed[:2]))
	}
	if it := c.TrainRegressed[0]; it.BaseStatus != "pass" || it.HeadStatus != "fail" || it.Signature == nil || *it.Signature != evil {
		t.Errorf("train regressed item %+v", it)
	}
	if len(c.TrainFixed) != 1 || c.TrainFixed[0].ID != "org/train-fixed" || *c.TrainFixed[0].Signature != "oom" || c.TrainFixed[0].BaseStatus != "oom" {
		t.Errorf("train fixed %+v", c.TrainFixed)
	}
	for _, it := range append(c.TrainRegressed, c.TrainFixed...) {
		if it.ID == "org/old-result" {
			t.Error("a model without a train verdict on base is in a train list")
		}
	}
	if c.NextCursors[compare.TrainRegressed] == nil || c.NextCursors[compare.TrainFixed] != nil {
		t.Fatalf("next cursors %v", c.NextCursors)
	}
	next := decode[api.CompareBody](t, ts.get(t, pair+"&cursor="+*c.NextCursors[compare.TrainRegressed]))
	if got := ids(next.TrainRegressed); len(got) != 2 || got[0] != "bulk/m-099" || got[1] != "bulk/m-100" ||
		next.NextCursors[compare.TrainRegressed] != nil || len(next.TrainFixed) != 0 {
		t.Errorf("second page: %v, cursor %v, fixed %v", got, next.NextCursors[compare.TrainRegressed], next.TrainFixed)
	}

	// The feed's item for the new runtime says it too.
	if feed := ts.get(t, "/feed.json").body; strings.Count(feed, "torch_tpu 0.2.0 breaks training of 102 models, fixes training of 1.") != 2 {
		t.Errorf("the feed's runtime item does not say the train changes (text and HTML):\n%.3000s", feed)
	}

	page := ts.get(t, "/compare?base="+keyV1+"&head="+keyV2)
	if page.status != 200 {
		t.Fatalf("/compare: %d", page.status)
	}
	for _, want := range []string{"torch_tpu 0.2.0 breaks training of 102 models, fixes training of 1",
		`<h2 id="list-train-regressed">Training regressed <span class="muted">(102)</span></h2>`,
		`<h2 id="list-train-fixed">Training fixed <span class="muted">(1)</span></h2>`,
		"train:backward:&lt;img src=x onerror=alert(1)&gt;", "Train on base"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("/compare lacks %q", want)
		}
	}
	if strings.Contains(page.body, "<img src=x") {
		t.Error("a train signature reached the page unescaped")
	}
	sec := page.body[strings.Index(page.body, `id="list-train-regressed"`):strings.Index(page.body, `id="list-train-fixed"`)]
	if rows := strings.Count(sec, `<th scope="row"`); rows != pages.CompareListMax {
		t.Errorf("the train regressed section shows %d models, want a page of %d", rows, pages.CompareListMax)
	}
	// The inference lists are empty: the train regressions are not there.
	if inf := page.body[strings.Index(page.body, `id="list-regressed"`):strings.Index(page.body, `id="list-train-regressed"`)]; strings.Contains(inf, "org/train-broke") {
		t.Error("a train regression is listed among the inference lists")
	}
	link := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(sec)
	if link == nil {
		t.Fatalf("no next link in the train regressed section:\n%.2000s", sec)
	}
	if r := ts.get(t, "/compare?base="+keyV1+"&head="+keyV2+"&cursor=bm90LWEtY3Vyc29y"); r.status != 400 {
		t.Errorf("/compare with a cursor not ours: %d, want 400", r.status)
	}
	more := ts.get(t, html.UnescapeString(link[1]))
	more.body = strings.ReplaceAll(more.body, "<wbr>", "") // model ids' line-break opportunities
	// The first page held org/train-broke and bulk/m-000 to m-048.
	nextFirst := fmt.Sprintf(">bulk/m-%03d<", pages.CompareListMax-1)
	if more.status != 200 || !strings.Contains(more.body, nextFirst) || strings.Contains(more.body, "org/train-broke") ||
		strings.Contains(more.body, fmt.Sprintf(">bulk/m-%03d<", pages.CompareListMax-2)) ||
		!strings.Contains(more.body, "Back to the whole comparison") || strings.Contains(more.body, `id="list-train-fixed"`) {
		t.Errorf("the next page (%s): %d\n%.3000s", link[1], more.status, more.body)
	}
}
