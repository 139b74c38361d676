package show

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
	want := map[compat.Status]Tone{"pass": TonePass, "fail": ToneFail, "oom": ToneWarn, "timeout": ToneWarn, "crash": ToneWarn,
		"skipped": ToneNeutral, "error": ToneNeutral, "untested": ToneNeutral}
	for _, st := range compat.Statuses {
		w, ok := statusWords[st]
		if !ok || w.Meaning == "" || w.Badge == "" {
			t.Errorf("%s: %+v", st, w)
		}
		if w.Tone != want[st] {
			t.Errorf("%s: tone %s, want %s", st, w.Tone, want[st])
		}
	}
	if w := WordOf("exploded"); w.Tone != ToneNeutral || w.Badge != "exploded" {
		t.Errorf("a word outside the contract: %+v", w)
	}
}

// TestEvidenceWords: every tier of evidence is explained, and nothing else.
func TestEvidenceWords(t *testing.T) {
	if len(evidenceWords) != len(compat.EvidenceKinds) {
		t.Errorf("%d entries for %d tiers", len(evidenceWords), len(compat.EvidenceKinds))
	}
	for _, e := range EvidenceLegend() {
		if e.Meaning == "" {
			t.Errorf("%s: no meaning", e.Kind)
		}
	}
}
