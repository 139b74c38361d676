package badge

import (
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// serveBadgeFor draws ?mode=serve: what vLLM-TorchTPU serves the model as,
// and on what evidence ("generation · declared"), "not served · declared",
// or unknown.
func serveBadgeFor(m *compat.Model, label string) badge {
	label = cleanText(label, maxLabelRunes)
	if label == "" {
		label = "vLLM-TorchTPU"
	}
	if m == nil || m.Serving == nil {
		return unknownBadge(label)
	}
	c := m.Serving
	if r := c.Measured; r != nil && r.Judged() { // a probe that judged nothing leaves the declared badge
		b := badge{Label: label, Message: r.Status + " · measured", Tone: show.ToneFail,
			Evidence: cleanText("measured: "+c.Package+" "+runtimeVersion(r.Runtime.VLLMTorchTPU)+" ran it, "+r.Status+measuredOn(r), 160)}
		if pass, _ := c.Verdict(); pass {
			b.Tone = show.TonePass
			if c.Kind != nil {
				b.Message = string(*c.Kind) + " · measured"
			}
		}
		b.Message = cleanText(b.Message, 64)
		return b
	}
	b := badge{Label: label, Message: "not served · " + c.Evidence, Tone: show.ToneFail,
		Evidence: cleanText(c.Evidence+" by the model registry of "+c.Package+" "+c.Version+"'s vLLM; nothing was run", 160)}
	if c.Served && c.Kind != nil {
		b.Message, b.Tone = string(*c.Kind)+" · "+c.Evidence, show.TonePass
	}
	b.Message = cleanText(b.Message, 64)
	return b
}

// runtimeVersion is a version the serving probe reported, "?" when none.
func runtimeVersion(p *string) string {
	if p == nil || *p == "" {
		return "?"
	}
	return *p
}

// measuredOn says when a measured verdict was made (" on 2026-12-06"),
// "" when not said.
func measuredOn(r *compat.ServingMeasured) string {
	if r.MeasuredAt.IsZero() {
		return ""
	}
	return " on " + r.MeasuredAt.UTC().Format(time.DateOnly)
}
