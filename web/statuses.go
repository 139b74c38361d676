package web

import "github.com/google-pytorch/torchtpu-scanner/internal/compat"

// statusWord is all the site says of one status word: its colour group, its
// legend and a badge's message. One table, so that no page or badge names a
// status its own way (the verb of a sentence about a change is
// internal/changetext's, which the feed and the webhooks share).
type statusWord struct {
	tone    tone
	meaning string // the legend (from the contract)
	badge   string // a badge's message; the badge adds details (badgeFor)
}

// statusWords has an entry for every compat.Statuses word (a test checks).
var statusWords = map[compat.Status]statusWord{
	compat.StatusPass: {tonePass, "every stage ran and the numerics matched the CPU reference within tolerance",
		"passing"},
	compat.StatusFail: {toneFail, "a stage failed; the stage and the failure class say where and why",
		"failing"},
	compat.StatusOOM:     {toneWarn, "the device ran out of memory", "out of memory"},
	compat.StatusTimeout: {toneWarn, "the probe ran past its wall-clock limit and was killed", "timeout"},
	compat.StatusCrash:   {toneWarn, "the probe process died (signal, abort)", "crash"},
	compat.StatusSkipped: {toneNeutral, "preflight declined to run it; the reason says why", "skipped"},
	compat.StatusError: {toneNeutral, "the scanner's own error (its environment, or a failure the float32 CPU reference shares); never held against the model",
		"scan error"},
	compat.StatusUntested: {toneNeutral, "the model is known, no result yet", "untested"},
}

// wordOf is the table's entry for s; a word outside the contract is
// neutral and says itself.
func wordOf(s compat.Status) statusWord {
	if w, ok := statusWords[s]; ok {
		return w
	}
	return statusWord{tone: toneNeutral, badge: string(s)}
}
