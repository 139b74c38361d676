package show

import (
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// runtimeVersions are a runtime's versions with their names, in the order
// pages show them.
func runtimeVersions(r compat.RuntimeRef) [][2]string {
	return [][2]string{{"torch_tpu", r.TorchTPU}, {"torch", r.Torch}, {"transformers", r.Transformers}, {"harness", r.Harness}}
}

// RuntimeLabel names runtime cur briefly, by what changed since prev:
// "torch_tpu 0.2.0", "torch 2.16.0, transformers 5.24.0". Without a prev
// on the same target it is the first version present (torch_tpu on tpu,
// else torch), and the target when prev is on another one.
func RuntimeLabel(prev *compat.RuntimeRef, cur compat.RuntimeRef) string {
	var parts []string
	if prev != nil && prev.Target == cur.Target {
		pv := runtimeVersions(*prev)
		for i, v := range runtimeVersions(cur) {
			if v[1] != pv[i][1] {
				parts = append(parts, v[0]+" "+orNone(v[1]))
			}
		}
	}
	if len(parts) == 0 {
		for _, v := range runtimeVersions(cur) {
			if v[1] != "" {
				parts = append(parts, v[0]+" "+v[1])
				break
			}
		}
	}
	label := strings.Join(parts, ", ")
	if label == "" {
		label = "no versions"
	}
	if prev != nil && prev.Target != cur.Target {
		label += " on " + string(cur.Target)
	}
	return label
}

// RuntimeLabels labels runtimes given newest first, each by what changed
// since the one before it.
func RuntimeLabels(newestFirst []store.RuntimeStats) []string {
	out := make([]string, len(newestFirst))
	for i, st := range newestFirst {
		var prev *compat.RuntimeRef
		if i+1 < len(newestFirst) {
			prev = &newestFirst[i+1].Ref
		}
		out[i] = RuntimeLabel(prev, st.Ref)
	}
	return out
}

// Versions lists a runtime's versions: "torch_tpu 0.2.0 · torch 2.15.0 · …".
func Versions(r compat.RuntimeRef) string {
	var parts []string
	for _, v := range runtimeVersions(r) {
		if v[1] != "" {
			parts = append(parts, v[0]+" "+v[1])
		}
	}
	if len(parts) == 0 {
		return Dash
	}
	return strings.Join(parts, " · ")
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// TrainHeadline is "torch_tpu 0.3.0 breaks training of 3 models, fixes
// training of 1": the train lists' totals, apart from the headline's.
func TrainHeadline(label string, h compare.Headline) string {
	return label + " breaks training of " + Models(h.Counts[compare.TrainRegressed]) +
		", fixes training of " + strconv.Itoa(h.Counts[compare.TrainFixed])
}

// Headline is "torch_tpu 0.2.0 fixes 3 models (9.1 % of downloads), breaks 1 (0.4 % of downloads)".
func Headline(label string, h compare.Headline) string {
	s := label + " fixes " + Models(h.Counts[compare.Fixed])
	if h.FixedShare != nil && h.Counts[compare.Fixed] > 0 {
		s += " (" + Pct(h.FixedShare) + " of downloads)"
	}
	s += ", breaks " + strconv.Itoa(h.Counts[compare.Regressed])
	if h.RegressedShare != nil && h.Counts[compare.Regressed] > 0 {
		s += " (" + Pct(h.RegressedShare) + " of downloads)"
	}
	return s
}

// Models is "1 model", "14 models".
func Models(n int) string {
	if n == 1 {
		return "1 model"
	}
	return strconv.Itoa(n) + " models"
}

// CompareURL is the comparison page of two runtimes.
func CompareURL(base, head string) string { return "/compare?base=" + base + "&head=" + head }
