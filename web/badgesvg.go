package web

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// badgeStyle is the look of an SVG badge, as shields.io names them.
type badgeStyle string

const (
	styleFlat        badgeStyle = "flat"
	styleFlatSquare  badgeStyle = "flat-square"
	styleForTheBadge badgeStyle = "for-the-badge"
)

// parseBadgeStyle accepts a shields.io style name; anything else is flat,
// because a badge must render whatever a model card asks for.
func parseBadgeStyle(s string) badgeStyle {
	switch st := badgeStyle(s); st {
	case styleFlatSquare, styleForTheBadge:
		return st
	}
	return styleFlat
}

// badge is what a badge says, independent of its style.
type badge struct {
	Label   string
	Message string
	Tone    tone
	// Evidence is what the verdict rests on, in words
	// (compat.Evidence.Sentence); "" for a badge without a result. The SVG's
	// title and aria-label say it; shields' endpoint JSON has no field for it.
	Evidence string
}

// title is what a badge says in words: its label, message and evidence.
func (b badge) title() string {
	t := b.Label + ": " + b.Message
	if b.Evidence != "" {
		t += " (" + b.Evidence + ")"
	}
	return t
}

// Color is the message background, #rrggbb.
func (b badge) Color() string { return badgeFill[b.Tone] }

// maxLabelRunes bounds ?label= so a badge stays a badge.
const maxLabelRunes = 48

// defaultLabel is the label of a badge for target when ?label= is not given.
func defaultLabel(t compat.Target) string { return t.BadgeLabel() }

// unknownBadge is shown for ids the scanner does not know (and bad input).
func unknownBadge(label string) badge {
	return badge{Label: label, Message: "unknown", Tone: toneNeutral}
}

// badgeFor says what model m's current result on its target means, under
// label ("" = the target's default). A nil model or result is unknown or
// untested. It is a pure function of its arguments.
func badgeFor(m *compat.Model, target compat.Target, label string) badge {
	label = cleanText(label, maxLabelRunes)
	if label == "" {
		label = defaultLabel(target)
	}
	if m == nil {
		return unknownBadge(label)
	}
	r := m.Result
	if r == nil {
		return badge{Label: label, Message: wordOf(compat.StatusUntested).badge, Tone: toneOf(compat.StatusUntested)}
	}
	b := badge{Label: label, Tone: toneOf(r.Status), Evidence: badgeEvidence(r)}
	if r.Target != target {
		return elsewhereBadge(b, r.Target, r.Status, deref(r.Stage))
	}
	stage := func(word string) string {
		if r.Stage != nil && *r.Stage != "" {
			return word + " · " + string(*r.Stage)
		}
		return word
	}
	b.Message = wordOf(r.Status).badge
	switch {
	case r.Status == compat.StatusPass:
		if r.Mode != nil && *r.Mode == compat.ModeArch {
			// Random weights, fewer layers: the architecture's ops run; the
			// checkpoint was not tested, and the speed is the reduced
			// model's, so a badge does not advertise it.
			b.Message += " · arch"
		} else if r.Metrics.TokensPerS != nil {
			b.Message += " · " + formatTokensPerS(*r.Metrics.TokensPerS)
		}
	case r.Status.HeldAgainstModel():
		b.Message = stage(b.Message)
	case r.Status == compat.StatusSkipped:
		if r.Reason != nil && *r.Reason != "" {
			b.Message += " · " + strings.ReplaceAll(string(*r.Reason), "_", " ")
		}
	}
	b.Message = cleanText(b.Message, 64)
	return b
}

// badgeEvidence is the evidence of r's verdict in words, one clean line
// (its device and versions come from the probe); "" for none.
func badgeEvidence(r *compat.Result) string {
	if e := compat.EvidenceOf(r); e.Kind != compat.EvidenceNone {
		return cleanText(e.Sentence(), 240)
	}
	return ""
}

// elsewhereBadge is b for a result on another target than the badge's
// (a TorchTPU badge of a model measured on the CPU reference only): the
// target and the status word say it ("cpu pass", "cpu fail · forward"),
// grey, so that no badge reads as the target's pass.
func elsewhereBadge(b badge, on compat.Target, st compat.Status, stage string) badge {
	b.Message = string(on) + " " + string(st)
	if st.HeldAgainstModel() && stage != "" {
		b.Message += " · " + stage
	}
	b.Message = cleanText(b.Message, 64)
	b.Tone = toneNeutral
	return b
}

// trainBadgeFor is badgeFor for the train verdict of m's current result
// (?mode=train): its status, the stage where a failure ended, a skip's
// reason; untested when the result has no train verdict. The label says
// "train" after the target's. It is a pure function of its arguments.
func trainBadgeFor(m *compat.Model, target compat.Target, label string) badge {
	label = cleanText(label, maxLabelRunes)
	if label == "" {
		label = defaultLabel(target) + " train"
	}
	if m == nil {
		return unknownBadge(label)
	}
	var v *compat.Verdict
	if m.Result != nil {
		v = m.Result.Train()
	}
	if v == nil {
		return badge{Label: label, Message: wordOf(compat.StatusUntested).badge, Tone: toneOf(compat.StatusUntested)}
	}
	b := badge{Label: label, Message: wordOf(v.Status).badge, Tone: toneOf(v.Status)}
	if e := compat.EvidenceOfMode(m.Result, compat.ModeTrain); e.Kind != compat.EvidenceNone {
		b.Evidence = cleanText(e.Sentence(), 240)
	}
	if m.Result.Target != target {
		return elsewhereBadge(b, m.Result.Target, v.Status, deref(v.Stage))
	}
	switch {
	case v.Status.HeldAgainstModel() && v.Stage != nil && *v.Stage != "":
		b.Message += " · " + *v.Stage
	case v.Status == compat.StatusSkipped && v.Reason != nil && *v.Reason != "":
		b.Message += " · " + strings.ReplaceAll(*v.Reason, "_", " ")
	}
	b.Message = cleanText(b.Message, 64)
	return b
}

// formatTokensPerS writes a speed the way a badge has room for:
// 3.4 tok/s, 312 tok/s, 1.2k tok/s.
func formatTokensPerS(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return "? tok/s"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 1, 64) + " tok/s"
	case v < 1000:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + " tok/s"
	case v < 1e6:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + "k tok/s"
	}
	return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M tok/s"
}

// cleanText drops characters that are not allowed in XML or that make no
// sense on one line, collapses spaces, and keeps at most n runes.
func cleanText(s string, n int) string {
	var b strings.Builder
	runes := 0
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if r == utf8.RuneError || r == 0xfffe || r == 0xffff || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		if runes >= n {
			b.WriteRune('…')
			break
		}
		if space {
			b.WriteByte(' ')
			runes++
			space = false
		}
		b.WriteRune(r)
		runes++
	}
	return b.String()
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// xmlEscape escapes text for XML character data and attribute values.
func xmlEscape(s string) string { return xmlEscaper.Replace(s) }

// px formats a length with at most one decimal.
func px(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// renderSVG draws b in style. It is a pure function: the same badge and style
// always give the same bytes (golden files in testdata/ pin them).
func renderSVG(b badge, style badgeStyle) []byte {
	label, msg := b.Label, b.Message
	fontSize, height, pad, spacing := 11.0, 20.0, 5.0, 0.0
	boldMsg := false
	if style == styleForTheBadge {
		label, msg = strings.ToUpper(label), strings.ToUpper(msg)
		fontSize, height, pad, spacing = 10, 28, 9, 1.25
		boldMsg = true
	}
	textLen := func(s string, bold bool) float64 {
		return textWidth(s, fontSize, bold) + spacing*float64(utf8.RuneCountInString(s))
	}
	lt, mt := textLen(label, false), textLen(msg, boldMsg)
	lw, mw := math.Ceil(lt)+2*pad, math.Ceil(mt)+2*pad
	w := lw + mw
	title := xmlEscape(b.title()) // screen readers get the words, not capitals
	el, em := xmlEscape(label), xmlEscape(msg)
	fill := b.Color()

	var s strings.Builder
	s.Grow(1200)
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" role="img" aria-label="%s">`, px(w), px(height), title)
	fmt.Fprintf(&s, `<title>%s</title>`, title)
	switch style {
	case styleFlat:
		s.WriteString(`<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>`)
		fmt.Fprintf(&s, `<clipPath id="r"><rect width="%s" height="%s" rx="3" fill="#fff"/></clipPath>`, px(w), px(height))
		fmt.Fprintf(&s, `<g clip-path="url(#r)"><rect width="%s" height="%s" fill="%s"/><rect x="%s" width="%s" height="%s" fill="%s"/><rect width="%s" height="%s" fill="url(#s)"/></g>`,
			px(lw), px(height), badgeLabelFill, px(lw), px(mw), px(height), fill, px(w), px(height))
	default:
		fmt.Fprintf(&s, `<g shape-rendering="crispEdges"><rect width="%s" height="%s" fill="%s"/><rect x="%s" width="%s" height="%s" fill="%s"/></g>`,
			px(lw), px(height), badgeLabelFill, px(lw), px(mw), px(height), fill)
	}
	fmt.Fprintf(&s, `<g fill="%s" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="%s"`, badgeText, px(fontSize))
	if spacing > 0 {
		fmt.Fprintf(&s, ` letter-spacing="%s"`, strconv.FormatFloat(spacing, 'f', -1, 64))
	}
	s.WriteString(`>`)
	baseline := 14.0
	if style == styleForTheBadge {
		baseline = 17.5
	}
	text := func(x, length float64, bold bool, t string) {
		weight := ""
		if bold {
			weight = ` font-weight="bold"`
		}
		if style == styleFlat { // the 1px shadow of shields' flat style
			fmt.Fprintf(&s, `<text aria-hidden="true" x="%s" y="%s" fill="#010101" fill-opacity=".3" textLength="%s"%s>%s</text>`, px(x), px(baseline+1), px(length), weight, t)
		}
		fmt.Fprintf(&s, `<text x="%s" y="%s" textLength="%s"%s>%s</text>`, px(x), px(baseline), px(length), weight, t)
	}
	text(lw/2, lt, false, el)
	text(lw+mw/2, mt, boldMsg, em)
	s.WriteString(`</g></svg>`)
	return []byte(s.String())
}

// badgeCacheSeconds is how long clients and shields.io may keep a badge.
const badgeCacheSeconds = 300

// endpointBadge is the shields.io endpoint schema.
type endpointBadge struct {
	SchemaVersion int    `json:"schemaVersion"`
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
	CacheSeconds  int    `json:"cacheSeconds"`
	// TPUOps is the badge's prediction for TorchTPU (badge.Prediction),
	// beside the schema's keys (shields.io ignores keys it does not know).
	TPUOps string `json:"tpu_ops,omitempty"`
}

// renderBadgeJSON is b as shields.io endpoint JSON (pure, like renderSVG).
func renderBadgeJSON(b badge) []byte { return renderBadgeJSONPredicted(b, "") }

// badgePrediction is the TorchTPU prediction of the result a badge draws
// (compat.TPUOps.Summary), for the endpoint JSON only, never its message (a
// prediction is not a TPU result): "" on tpu, or without one.
func badgePrediction(m *compat.Model) string {
	if m == nil {
		return ""
	}
	return cleanText(predictionSummary(m.Result), 200)
}

// renderBadgeJSONPredicted is renderBadgeJSON with the prediction's line
// ("" for none).
func renderBadgeJSONPredicted(b badge, prediction string) []byte {
	out, err := json.Marshal(endpointBadge{
		SchemaVersion: 1, Label: b.Label, Message: b.Message,
		Color: strings.TrimPrefix(b.Color(), "#"), CacheSeconds: badgeCacheSeconds, TPUOps: prediction,
	})
	if err != nil { // strings and ints always marshal
		panic(fmt.Sprintf("web: badge json: %v", err))
	}
	return out
}
