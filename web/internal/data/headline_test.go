package data

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestNewHeadline: TorchTPU's figures come from TPU runs only; without a
// TPU verdict the headline says so in words, and the CPU reference's
// figures stand under their own name.
func TestNewHeadline(t *testing.T) {
	sum := func(models, pass, fail, skipped int) store.Summary {
		s := store.Summary{Models: models, Tested: pass + fail, Counts: map[compat.Status]int{
			compat.StatusPass: pass, compat.StatusFail: fail, compat.StatusSkipped: skipped,
			compat.StatusUntested: models - pass - fail - skipped}}
		if pass+fail > 0 {
			r := float64(pass) / float64(pass+fail)
			s.PassRate = &r
		}
		return s
	}
	t.Run("cpu only", func(t *testing.T) {
		h := NewHeadline(map[compat.Target]store.Summary{compat.TargetTPU: sum(10, 0, 0, 0), compat.TargetCPU: sum(10, 3, 1, 0),
			compat.TargetCUDA: sum(10, 0, 0, 0)}, store.Predicted{})
		if h.TPU != nil || h.NoTPU != "No TPU results on this instance yet" || h.Sentence() != "No TPU results on this instance yet." {
			t.Errorf("tpu: %+v %q", h.TPU, h.NoTPU)
		}
		if len(h.Others) != 1 || h.Others[0].Target != compat.TargetCPU || h.Others[0].Name != "CPU reference, measured on CPU (not TorchTPU)" ||
			h.Others[0].Tested != 4 || h.Others[0].Passed != 3 || *h.Others[0].PassRate != 0.75 || h.Others[0].Evidence != compat.EvidenceMeasured {
			t.Errorf("others: %+v", h.Others)
		}
		if h.Predicted != nil {
			t.Errorf("predicted figures from nothing: %+v", h.Predicted)
		}
	})
	t.Run("tpu skips only", func(t *testing.T) {
		h := NewHeadline(map[compat.Target]store.Summary{compat.TargetTPU: sum(10, 0, 0, 2), compat.TargetCPU: sum(10, 1, 0, 0)}, store.Predicted{})
		if h.TPU != nil || h.NoTPU != "No TPU verdicts on this instance yet: 2 results on TPU, none a verdict (skipped or the scanner's own errors)" {
			t.Errorf("tpu: %+v %q", h.TPU, h.NoTPU)
		}
	})
	t.Run("predicted", func(t *testing.T) {
		// 4 models predicted, 3 with every inference op: predicted figures
		// under their own name, for tpu, and still no TPU figures.
		h := NewHeadline(map[compat.Target]store.Summary{compat.TargetTPU: sum(10, 0, 0, 0), compat.TargetCPU: sum(10, 3, 1, 0)},
			store.Predicted{Table: "torch_tpu 0.2.0 / torch 2.15.0", Models: 4, Covered: 3, Downloads: 100, CoveredDownloads: 40})
		p := h.Predicted
		if h.TPU != nil || p == nil || p.Evidence != compat.EvidencePredicted || p.Target != compat.TargetTPU ||
			p.Name != "TorchTPU, predicted from the TorchTPU kernel table of torch_tpu 0.2.0 / torch 2.15.0 (no TPU ran them)" ||
			p.Tested != 4 || p.Passed != 3 || p.Models != 10 || *p.PassRate != 0.75 || *p.WeightedPassRate != 0.4 {
			t.Errorf("predicted: %+v", p)
		}
	})
	t.Run("tpu and cpu", func(t *testing.T) {
		h := NewHeadline(map[compat.Target]store.Summary{compat.TargetTPU: sum(10, 1, 1, 1), compat.TargetCPU: sum(10, 5, 0, 0),
			compat.TargetCUDA: sum(10, 0, 2, 0)}, store.Predicted{})
		if h.TPU == nil || h.TPU.Tested != 2 || h.TPU.Passed != 1 || h.TPU.Results != 3 || h.TPU.Models != 10 || h.NoTPU != "" ||
			h.Sentence() != "TorchTPU, measured on TPU: 1 of 2 tested models pass (50.0 %)." {
			t.Errorf("tpu: %+v %q", h.TPU, h.Sentence())
		}
		if len(h.Others) != 2 || h.Others[0].Target != compat.TargetCPU || h.Others[1].Target != compat.TargetCUDA {
			t.Errorf("others: %+v", h.Others)
		}
	})
}

func TestTaskCoverage(t *testing.T) {
	tallies := []store.TaskTally{
		{Task: "text-generation", Library: "transformers", Models: 3, Downloads: 600},
		{Task: "zero-shot-image-classification", Library: "transformers", Tested: true, Models: 1, Downloads: 200},
		{Task: "text-to-image", Library: "transformers", Models: 1, Downloads: 100}, // backed, task not exercised
		{Task: "text-to-image", Library: "diffusers", Models: 5, Downloads: 5000},   // not transformers
		{Task: "sentence-similarity", Library: "sentence-transformers", Models: 1, Downloads: 50},
		{Task: "fill-mask", Library: "", Tested: true, Models: 1, Downloads: 40}, // no library, preflight took it
		{Task: "fill-mask", Library: "", Models: 1, Downloads: 30},               // no library, untested: unknown
		{Task: "", Library: "", Tested: true, LibraryRejected: true, Models: 1, Downloads: 20},
		{Task: "", Library: "transformers", Models: 1, Downloads: 10}, // no tag, untested
	}
	c := TaskCoverage(tallies)
	// backed: 3 + 1 + 1 + 1 + 1 + 1 = 8 models, 600+200+100+50+40+10 = 1000 downloads;
	// covered: all but text-to-image and the untagged one = 6 models, 890 downloads.
	if c.Models != 8 || c.Covered != 6 || c.Downloads != 1000 || c.CoveredDownloads != 890 {
		t.Errorf("coverage = %+v; want 8 models, 6 covered, 1000 downloads, 890 covered", c)
	}
	if s := c.Share(); s == nil || *s != 0.75 {
		t.Errorf("share = %v; want 0.75", s)
	}
	if empty := TaskCoverage(nil); empty.Share() != nil || empty.DownloadShare() != nil {
		t.Errorf("empty coverage shares = %v %v; want nil", empty.Share(), empty.DownloadShare())
	}
}
