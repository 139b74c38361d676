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

// evidenceWords say what each tier of evidence (compat.EvidenceOf) means,
// for /methodology#evidence; an entry for every compat.EvidenceKinds tier
// (a test checks).
var evidenceWords = map[compat.EvidenceKind]string{
	compat.EvidenceMeasured: "a probe ran the model on the target and saw the verdict: pass, or a status held against the model. " +
		"It says where (the target, the device as its runtime named it and how many the probe ran on), with what (the runtime: " +
		"torch, torch_tpu, transformers and harness versions) and when. Measured on cpu is the CPU reference's verdict " +
		"(PyTorch in bfloat16 on the host's CPU), never TorchTPU's.",
	compat.EvidencePredicted: "nothing ran the model to a verdict; something else predicts it, and says what " +
		"(the runtime's TorchTPU kernel table, for instance). A prediction is never a pass on TPU, and its figures are never " +
		"added to measured ones.",
	compat.EvidenceNone: "no verdict: untested, skipped by preflight, or the scanner's own error, and nothing that predicts one.",
}

// evidenceEntry is one tier of evidence and what it means.
type evidenceEntry struct {
	Kind    compat.EvidenceKind
	Meaning string
}

// evidenceLegend is every tier, strongest first.
func evidenceLegend() []evidenceEntry {
	out := make([]evidenceEntry, len(compat.EvidenceKinds))
	for i, k := range compat.EvidenceKinds {
		out[i] = evidenceEntry{k, evidenceWords[k]}
	}
	return out
}
