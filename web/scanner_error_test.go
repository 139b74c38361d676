package web

import (
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
	"github.com/google-pytorch/torchtpu-scanner/web/feeds"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// sharedInputError is what the harness writes when the float32 CPU
// reference fails the stage the target failed, with the same inputs (the
// harness's stand-in: an input id past the embedding): the scanner's
// error, not a verdict on the model.
func sharedInputError(at time.Time) compat.Result {
	r := failOn(compat.TargetTPU, at, "unused")
	r.Status, r.Op, r.FailureClass = compat.StatusError, nil, compat.Ptr(compat.ClassOther)
	r.Signature = compat.Ptr("harness_inputs:IndexError: index out of range in self")
	r.Message = compat.Ptr("not a verdict on the model: the float32 cpu reference fails the forward stage too, with the " +
		"same inputs (IndexError: index out of range in self); on the target: IndexError: index out of range in self")
	return r
}

// TestScannerErrorIsNoVerdict: a model whose newest result is the
// scanner's error (one the reference shares) shows a grey badge, makes no
// feed item, is no failure cause (API and home page), and counts in no pass
// rate; the model that really regressed still does everywhere.
func TestScannerErrorIsNoVerdict(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{PublicURL: "https://compat.example.org"})
	ts.upsert(t, store.ModelUpsert{ID: "llava-hf/LLaVA-NeXT-Video-7B-hf", Downloads: 9000},
		store.ModelUpsert{ID: "laion/clap-htsat-fused", Downloads: 8000},
		store.ModelUpsert{ID: "org/regressed", Downloads: 100}, store.ModelUpsert{ID: "org/passing", Downloads: 50})
	ts.record(t, "llava-hf/LLaVA-NeXT-Video-7B-hf", passOn(compat.TargetTPU, testTime.Add(-2*time.Hour), 40))
	ts.record(t, "llava-hf/LLaVA-NeXT-Video-7B-hf", sharedInputError(testTime.Add(-time.Hour)))
	ts.record(t, "laion/clap-htsat-fused", sharedInputError(testTime.Add(-time.Hour))) // its first result
	ts.record(t, "org/regressed", passOn(compat.TargetTPU, testTime.Add(-2*time.Hour), 10))
	ts.record(t, "org/regressed", failOn(compat.TargetTPU, testTime.Add(-time.Hour), "aten::x"))
	ts.record(t, "org/passing", passOn(compat.TargetTPU, testTime, 20))

	for _, id := range []string{"llava-hf/LLaVA-NeXT-Video-7B-hf", "laion/clap-htsat-fused"} {
		r := ts.get(t, "/badge/"+id+".svg")
		if r.status != 200 || !strings.Contains(r.body, `fill="`+show.BadgeFill[show.ToneNeutral]+`"`) ||
			strings.Contains(r.body, `fill="`+show.BadgeFill[show.ToneFail]+`"`) || !strings.Contains(r.body, "scan error") {
			t.Errorf("%s: badge is not grey:\n%s", id, r.body)
		}
	}

	feed := decode[feeds.JSONFeed](t, ts.get(t, "/feed.json"))
	var regression bool
	for _, it := range feed.Items {
		scannerError := strings.Contains(it.Title, "clap") || strings.Contains(it.ContentText, "harness_inputs") ||
			strings.Contains(it.Title, "could not be tested") || strings.Contains(it.Title, "(was error)")
		for _, tag := range it.Tags {
			scannerError = scannerError || tag == string(compat.StatusError)
		}
		// LLaVA-NeXT-Video has one item: its first verdict, pass; its error after it is none
		if scannerError || (strings.Contains(it.Title, "LLaVA") && it.Title != "New: llava-hf/LLaVA-NeXT-Video-7B-hf passes on tpu") {
			t.Errorf("feed item of the scanner's error: %q %v", it.Title, it.Tags)
		}
		regression = regression || it.Title == "Regression: org/regressed fails on tpu (forward, unsupported_op aten::x)"
	}
	if !regression {
		t.Errorf("the real regression is missing from the feed: %+v", feed.Items)
	}

	fails := decode[api.FailuresBody](t, ts.get(t, "/api/v1/failures?target=tpu"))
	if len(fails.Failures) != 1 || fails.Failures[0].Signature != "unsupported_op:aten::x" || fails.Failures[0].Models != 1 {
		t.Errorf("failures: %+v, want only the real regression", fails.Failures)
	}
	home := ts.get(t, "/?target=tpu")
	if home.status != 200 || strings.Contains(home.body, "harness_inputs") || !strings.Contains(home.body, "aten::x") {
		t.Errorf("home page: %d, a scanner error among the failure causes or the real one missing", home.status)
	}

	sum := decode[api.SummaryBody](t, ts.get(t, "/api/v1/summary?target=tpu"))
	if sum.Counts[compat.StatusError] != 2 || sum.Tested != 2 || sum.PassRate == nil || *sum.PassRate != 0.5 {
		t.Errorf("summary: counts %v tested %d pass rate %v; want 2 errors, 2 tested (pass + fail), 0.5",
			sum.Counts, sum.Tested, sum.PassRate)
	}
}
