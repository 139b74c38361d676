package web

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestStatusWords: the one table of what the site says of a status has
// every contract word, each fully said, and nothing else; the colours
// follow what the status says of the model, written out here.
func TestStatusWords(t *testing.T) {
	if len(statusWords) != len(compat.Statuses) {
		t.Errorf("%d entries for %d status words", len(statusWords), len(compat.Statuses))
	}
	want := map[compat.Status]tone{"pass": tonePass, "fail": toneFail, "oom": toneWarn, "timeout": toneWarn, "crash": toneWarn,
		"skipped": toneNeutral, "error": toneNeutral, "untested": toneNeutral}
	for _, st := range compat.Statuses {
		w, ok := statusWords[st]
		if !ok || w.meaning == "" || w.badge == "" {
			t.Errorf("%s: %+v", st, w)
		}
		if w.tone != want[st] {
			t.Errorf("%s: tone %s, want %s", st, w.tone, want[st])
		}
	}
	if w := wordOf("exploded"); w.tone != toneNeutral || w.badge != "exploded" {
		t.Errorf("a word outside the contract: %+v", w)
	}
}

// TestEvidenceWords: every tier of evidence is explained, and nothing else.
func TestEvidenceWords(t *testing.T) {
	if len(evidenceWords) != len(compat.EvidenceKinds) {
		t.Errorf("%d entries for %d tiers", len(evidenceWords), len(compat.EvidenceKinds))
	}
	for _, e := range evidenceLegend() {
		if e.Meaning == "" {
			t.Errorf("%s: no meaning", e.Kind)
		}
	}
}
