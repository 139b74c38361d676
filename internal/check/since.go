package check

import (
	"fmt"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// sinceTarget parses the --since runtime key and settles the target: the
// runtime's, which an explicit target must match.
func sinceTarget(since string, target *compat.Target) (compat.RuntimeRef, error) {
	ref, err := compat.ParseRuntimeKey(since)
	if err != nil {
		return ref, fmt.Errorf("--since: %w (runtime keys are listed at /runtimes)", err)
	}
	if *target != "" && *target != ref.Target {
		return ref, fmt.Errorf("--since names a %s runtime, but --target is %s", ref.Target, *target)
	}
	*target = ref.Target
	return ref, nil
}

// sinceVerdict adds --since to a verdict (code, line). The model's newest
// verdict (pass, or held against the model) on runtime ref is the base (an
// error there, the scanner's own, is none); the newest verdict after it is
// the head. When the head is a regression from the base
// (compare.Classify), the check fails (exit 1) and says so; otherwise the
// verdict stands, noting what was compared.
// History is the server's, newest first (GET /api/v1/models/{id} keeps the
// newest 100 results): a base older than that is not found.
func sinceVerdict(d modelDetail, ref compat.RuntimeRef, code int, line string) (int, string) {
	key := ref.Key()
	base, any := -1, false
	for i, r := range d.History {
		if r.Target == ref.Target && r.Runtime.Ref(r.Target).Key() == key {
			any = true
			if r.Status.IsVerdict() {
				base = i
				break
			}
		}
	}
	switch {
	case base < 0 && any:
		return code, line + " — no verdict on runtime " + key + " to compare with (only the scanner's own errors)"
	case base < 0:
		return code, line + " — no result on runtime " + key + " to compare with"
	}
	var head *compat.Result
	for i := base - 1; i >= 0; i-- {
		r := d.History[i]
		if r.Target == ref.Target && r.Status.IsVerdict() {
			head = &d.History[i] // keep going: the newest verdict wins
		}
	}
	if head == nil {
		return code, line
	}
	b := d.History[base]
	if compare.Classify(b.Status, head.Status) != compare.Regressed {
		return code, line
	}
	return ExitNotPassing, fmt.Sprintf("%s — regressed since %s: %s there, %s on %s", line, key, b.Status, head.Status,
		head.Runtime.Ref(head.Target).Key())
}
