package show

import "github.com/google-pytorch/torchtpu-scanner/internal/compat"

// Word is all the site says of one status word: its colour group, its
// legend and a badge's message. One table, so that no page or badge names a
// status its own way (the verb of a sentence about a change is
// internal/changetext's, which the feed and the webhooks share).
type Word struct {
	Tone    Tone
	Meaning string // the legend (from the contract)
	Badge   string // a badge's message; the badge adds details (badgeFor)
}

// statusWords has an entry for every compat.Statuses word (a test checks).
var statusWords = map[compat.Status]Word{
	compat.StatusPass: {TonePass, "every stage ran and the numerics matched the CPU reference within tolerance",
		"passing"},
	compat.StatusFail: {ToneFail, "a stage failed; the stage and the failure class say where and why",
		"failing"},
	compat.StatusOOM:     {ToneWarn, "the device ran out of memory", "out of memory"},
	compat.StatusTimeout: {ToneWarn, "the probe ran past its wall-clock limit and was killed", "timeout"},
	compat.StatusCrash:   {ToneWarn, "the probe process died (signal, abort)", "crash"},
	compat.StatusSkipped: {ToneNeutral, "preflight declined to run it; the reason says why", "skipped"},
	compat.StatusError: {ToneNeutral, "the scanner's own error (its environment, or a failure the float32 CPU reference shares); never held against the model",
		"scan error"},
	compat.StatusUntested: {ToneNeutral, "the model is known, no result yet", "untested"},
}

// WordOf is the table's entry for s; a word outside the contract is
// neutral and says itself.
func WordOf(s compat.Status) Word {
	if w, ok := statusWords[s]; ok {
		return w
	}
	return Word{Tone: ToneNeutral, Badge: string(s)}
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

// EvidenceEntry is one tier of evidence and what it means.
type EvidenceEntry struct {
	Kind    compat.EvidenceKind
	Meaning string
}

// EvidenceLegend is every tier, strongest first.
func EvidenceLegend() []EvidenceEntry {
	out := make([]EvidenceEntry, len(compat.EvidenceKinds))
	for i, k := range compat.EvidenceKinds {
		out[i] = EvidenceEntry{k, evidenceWords[k]}
	}
	return out
}
