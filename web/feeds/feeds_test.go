package feeds

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

var (
	testTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rtV1     = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.1.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e", DeviceCount: 1}
	rtV2     = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e", DeviceCount: 1}
)

func TestEventTitles(t *testing.T) {
	sig := "unsupported_op:aten::_fft_r2c"
	for _, c := range []struct {
		e    compat.Event
		want string
	}{
		{compat.Event{ModelID: "a/b", Target: "tpu", Kind: compat.EventRegression, FromStatus: "pass", ToStatus: "oom"}, "Regression: a/b runs out of memory on tpu"},
		{compat.Event{ModelID: "a/b", Target: "tpu", Kind: compat.EventRegression, FromStatus: "pass", ToStatus: "fail", Signature: &sig},
			"Regression: a/b fails on tpu (unsupported_op aten::_fft_r2c)"},
		{compat.Event{ModelID: "a/b", Target: "cpu", Kind: compat.EventChange, FromStatus: "skipped", ToStatus: "error"}, "Changed: a/b could not be tested on cpu (was skipped)"},
		{compat.Event{ModelID: "a/b", Target: "tpu", Kind: compat.EventFlaky, FromStatus: "pass", ToStatus: "crash"}, "Flaky: a/b on tpu: crash did not reproduce (kept pass)"},
	} {
		if got := eventTitle(c.e); got != c.want {
			t.Errorf("eventTitle = %q, want %q", got, c.want)
		}
	}
}

// A feed item's text says the change, the status move when there was one,
// the message when there is one, then the revision and the runtime when
// known; its HTML names the runtime only when known.
func TestFeedEntryText(t *testing.T) {
	boom, empty := "RuntimeError: boom", ""
	rt := compat.Runtime{Torch: "2.9.0"}
	for _, c := range []struct {
		name     string
		e        compat.Event
		wantText string // after the title and its period
		wantHTML string
	}{
		{"a move with a message on a runtime",
			compat.Event{ModelID: "org/m", Target: "tpu", Kind: compat.EventRegression, FromStatus: compat.StatusPass, ToStatus: compat.StatusFail,
				Revision: "abc", Runtime: rt, Message: &boom, At: testTime},
			" Status pass → fail.\n\nRuntimeError: boom\n\nRevision abc · torch 2.9.0\n\nEvidence: measured on tpu with torch 2.9.0 on 2026-11-30.",
			"<p>Revision abc · torch 2.9.0</p><p>Evidence: measured on tpu with torch 2.9.0 on 2026-11-30.</p>"},
		{"first result, no message, no runtime",
			compat.Event{ModelID: "org/m", Target: "cpu", Kind: compat.EventNew, ToStatus: compat.StatusPass, Revision: "abc", At: testTime},
			"\n\nRevision abc\n\nEvidence: measured on cpu on 2026-11-30.", "<p>Revision abc</p><p>Evidence: measured on cpu on 2026-11-30.</p>"},
		{"an empty message says nothing",
			compat.Event{ModelID: "org/m", Target: "tpu", Kind: compat.EventNew, ToStatus: compat.StatusFail, Revision: "abc", Message: &empty,
				At: testTime, Runtime: compat.Runtime{Device: "TPU v6e", TorchTPU: "0.2.0"}},
			"\n\nRevision abc · torch_tpu 0.2.0 · TPU v6e\n\nEvidence: measured on TPU v6e with torch_tpu 0.2.0 on 2026-11-30.",
			"<p>Revision abc · torch_tpu 0.2.0 · TPU v6e</p><p>Evidence: measured on TPU v6e with torch_tpu 0.2.0 on 2026-11-30.</p>"},
		{"a skip rests on nothing",
			compat.Event{ModelID: "org/m", Target: "tpu", Kind: compat.EventChange, FromStatus: compat.StatusFail, ToStatus: compat.StatusSkipped,
				Revision: "abc", At: testTime},
			" Status fail → skipped.\n\nRevision abc\n\nEvidence: none (no verdict).", "<p>Revision abc</p><p>Evidence: none (no verdict).</p>"},
	} {
		it, err := feedEntry("https://compat.example.org", c.e)
		if err != nil {
			t.Fatal(err)
		}
		if want := eventTitle(c.e) + "." + c.wantText; it.ContentText != want {
			t.Errorf("%s: text %q, want %q", c.name, it.ContentText, want)
		}
		if !strings.HasSuffix(it.ContentHTML, c.wantHTML) {
			t.Errorf("%s: HTML %q, want it to end in %q", c.name, it.ContentHTML, c.wantHTML)
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
	cmp := &data.Comparison{Base: store.RuntimeStats{Ref: rtV1.Ref("tpu")}, Head: store.RuntimeStats{Ref: rtV2.Ref("tpu")}, Result: r, Label: "torch_tpu 0.2.0"}
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
	items := []Item{{ID: "a", DatePublished: "2026-01-02T00:00:00Z"}, {ID: "b", DatePublished: "2026-01-01T00:00:00Z"},
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
