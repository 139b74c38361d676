package web

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) { t.Helper(); testenv.Golden(t, name, got) }

func result(status compat.Status) *compat.Result {
	return &compat.Result{Target: compat.TargetTPU, Status: status, TestedAt: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
}

// cpuResult is result on the CPU reference.
func cpuResult(status compat.Status) *compat.Result {
	r := result(status)
	r.Target = compat.TargetCPU
	r.Runtime = compat.Runtime{Torch: "2.15.0", Device: "cpu"}
	r.DevicesUsed = 1
	return r
}

// TestBadgeEvidence: a badge's words carry its verdict's evidence
// (compat.EvidenceOf), in its title; a badge without a verdict has none.
func TestBadgeEvidence(t *testing.T) {
	pass := result(compat.StatusPass)
	pass.Runtime = compat.Runtime{Torch: "2.15.0", TorchTPU: "0.2.0", Device: "TPU v6e"}
	pass.DevicesUsed = 1
	model := func(r *compat.Result) *compat.Model { return &compat.Model{ID: "org/m", Result: r} }
	for _, tt := range []struct {
		name  string
		b     badge
		title string
	}{
		{"tpu pass", badgeFor(model(pass), compat.TargetTPU, ""),
			"TorchTPU: passing (measured on 1 × TPU v6e with torch 2.15.0, torch_tpu 0.2.0 on 2026-11-30)"},
		{"cpu only", badgeFor(model(cpuResult(compat.StatusPass)), compat.TargetTPU, ""),
			"TorchTPU: cpu pass (measured on cpu with torch 2.15.0 on 2026-11-30)"},
		{"device with controls", badgeFor(model(func() *compat.Result {
			r := result(compat.StatusPass)
			r.Runtime.Device = "TPU\x00 <v6e>\n\x1b"
			return r
		}()), compat.TargetTPU, ""), "TorchTPU: passing (measured on TPU <v6e> on 2026-11-30)"},
		{"skipped", badgeFor(model(result(compat.StatusSkipped)), compat.TargetTPU, ""), "TorchTPU: skipped"},
		{"untested", badgeFor(model(nil), compat.TargetTPU, ""), "TorchTPU: untested"},
		{"train on cpu only", trainBadgeFor(model(func() *compat.Result {
			r := cpuResult(compat.StatusPass)
			r.Modes = map[string]compat.Verdict{compat.ModeTrain: {Status: compat.StatusPass}}
			return r
		}()), compat.TargetTPU, ""), "TorchTPU train: cpu pass (measured on cpu with torch 2.15.0 on 2026-11-30)"},
	} {
		if got := tt.b.title(); got != tt.title {
			t.Errorf("%s: title %q, want %q", tt.name, got, tt.title)
		}
		svg := renderSVG(tt.b, styleFlat)
		if want := "<title>" + xmlEscape(tt.title) + "</title>"; !strings.Contains(string(svg), want) {
			t.Errorf("%s: svg lacks %s: %s", tt.name, want, svg)
		}
		checkSVG(t, svg, tt.b)
	}
}

func TestBadgeFor(t *testing.T) {
	pass := result(compat.StatusPass)
	pass.Mode = compat.Ptr(compat.ModeFull)
	pass.Metrics.TokensPerS = compat.Ptr(312.4)
	passArch := result(compat.StatusPass)
	passArch.Mode = compat.Ptr(compat.ModeArch)
	passArch.Metrics.TokensPerS = compat.Ptr(999.0)
	fail := result(compat.StatusFail)
	fail.Stage = compat.Ptr(compat.StageForward)
	oom := result(compat.StatusOOM)
	oom.Stage = compat.Ptr(compat.StageLoad)
	skipped := result(compat.StatusSkipped)
	skipped.Reason = compat.Ptr(compat.ReasonRemoteCode)
	cpuFail := cpuResult(compat.StatusFail)
	cpuFail.Stage = compat.Ptr(compat.StageLoad)
	hostile := result(compat.StatusFail)
	hostile.Stage = compat.Ptr(compat.Stage(`<script>alert(1)</script>`))

	model := func(r *compat.Result) *compat.Model { return &compat.Model{ID: "org/m", Result: r} }
	tests := []struct {
		name   string
		model  *compat.Model
		target compat.Target
		label  string
		want   badge
	}{
		{"pass", model(pass), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "passing · 312 tok/s", Tone: tonePass}},
		{"pass arch", model(passArch), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "passing · arch", Tone: tonePass}},
		{"pass no speed", model(cpuResult(compat.StatusPass)), compat.TargetCPU, "", badge{Label: "PyTorch CPU", Message: "passing", Tone: tonePass}},
		{"cpu pass on a TorchTPU badge", model(cpuResult(compat.StatusPass)), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "cpu pass", Tone: toneNeutral}},
		{"cpu fail on a TorchTPU badge", model(cpuFail), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "cpu fail · load", Tone: toneNeutral}},
		{"fail", model(fail), compat.TargetTPU, "tpu", badge{Label: "tpu", Message: "failing · forward", Tone: toneFail}},
		{"oom", model(oom), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "out of memory · load", Tone: toneWarn}},
		{"timeout", model(result(compat.StatusTimeout)), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "timeout", Tone: toneWarn}},
		{"crash", model(result(compat.StatusCrash)), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "crash", Tone: toneWarn}},
		{"skipped", model(skipped), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "skipped · remote code", Tone: toneNeutral}},
		{"error", model(result(compat.StatusError)), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "scan error", Tone: toneNeutral}},
		{"untested", model(nil), compat.TargetCUDA, "", badge{Label: "PyTorch CUDA", Message: "untested", Tone: toneNeutral}},
		{"unknown", nil, compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "unknown", Tone: toneNeutral}},
		{"label cleaned", nil, compat.TargetTPU, " a\n\tb\x00 ", badge{Label: "a b", Message: "unknown", Tone: toneNeutral}},
		{"label only spaces", nil, compat.TargetTPU, " \u200b ", badge{Label: "TorchTPU", Message: "unknown", Tone: toneNeutral}},
		{"hostile stage kept as text", model(hostile), compat.TargetTPU, "", badge{Label: "TorchTPU", Message: "failing · <script>alert(1)</script>", Tone: toneFail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := badgeFor(tt.model, tt.target, tt.label)
			got.Evidence = "" // TestBadgeEvidence
			if got != tt.want {
				t.Errorf("badgeFor = %+v, want %+v", got, tt.want)
			}
		})
	}
	long := badgeFor(nil, compat.TargetTPU, strings.Repeat("x", 500))
	if n := len([]rune(long.Label)); n != maxLabelRunes+1 || !strings.HasSuffix(long.Label, "…") {
		t.Errorf("long label not cut: %d runes", n)
	}
}

func TestFormatTokensPerS(t *testing.T) {
	for v, want := range map[float64]string{3.44: "3.4 tok/s", 312.4: "312 tok/s", 999.6: "1000 tok/s", 1234: "1.2k tok/s",
		2.5e6: "2.5M tok/s", -1: "? tok/s", math.NaN(): "? tok/s",
		// each range starts at its bound
		0: "0.0 tok/s", 10: "10 tok/s", 1000: "1.0k tok/s", 1e6: "1.0M tok/s"} {
		if got := formatTokensPerS(v); got != want {
			t.Errorf("formatTokensPerS(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestTextWidth(t *testing.T) {
	// shields.io's "build" label is 37px wide: 26.7px of Verdana 11px + 10px padding.
	if got := textWidth("build", 11, false); math.Abs(got-26.686) > 0.01 {
		t.Errorf("width(build) = %v", got)
	}
	for i, w := range verdanaRegular {
		if w == 0 || verdanaBold[i] == 0 {
			t.Errorf("missing width for %q", rune(i+0x20))
		}
	}
	if textWidth("\x00\x1b", 11, false) != 0 {
		t.Error("control characters should have no width")
	}
	if got := textWidth("模型", 11, false); got != 22 {
		t.Errorf("fallback width = %v, want one em per character", got)
	}
	if textWidth("WWW", 11, false) <= textWidth("iii", 11, false) {
		t.Error("W should be wider than i")
	}
}

// The edges of the tables: the first and last printable ASCII characters
// have their widths, C0 and C1 controls and DEL none, and the first
// character past the C1 controls (no-break space) is wide again.
func TestTextWidthEdges(t *testing.T) {
	for _, c := range []struct {
		s     string
		bold  bool
		units float64 // thousandths of an em
	}{
		{" ", false, 351}, {"~", false, 818}, {" ", true, 341}, {"~", true, 867},
		{"\x1f", false, 0}, {"\x7f", false, 0}, {"\u0080", false, 0}, {"\u009f", false, 0},
		{"\u00a0", false, fallbackWidth}, {"·", false, 363}, {"·", true, 361},
	} {
		if got := textWidth(c.s, 1000, c.bold); got != c.units {
			t.Errorf("width(%q, bold %v) = %v, want %v", c.s, c.bold, got, c.units)
		}
	}
}

func TestRenderSVGGolden(t *testing.T) {
	pass := result(compat.StatusPass)
	pass.Mode = compat.Ptr(compat.ModeFull)
	pass.Metrics.TokensPerS = compat.Ptr(312.0)
	fail := result(compat.StatusFail)
	fail.Stage = compat.Ptr(compat.StageForward)
	oom := result(compat.StatusOOM)
	m := func(r *compat.Result) *compat.Model { return &compat.Model{ID: "org/m", Result: r} }
	cases := []struct {
		file  string
		b     badge
		style badgeStyle
	}{
		{"badge_pass_flat.svg", badgeFor(m(pass), compat.TargetTPU, ""), styleFlat},
		{"badge_fail_flat_square.svg", badgeFor(m(fail), compat.TargetTPU, ""), styleFlatSquare},
		{"badge_oom_for_the_badge.svg", badgeFor(m(oom), compat.TargetTPU, ""), styleForTheBadge},
		{"badge_unknown_flat.svg", badgeFor(nil, compat.TargetTPU, ""), styleFlat},
		{"badge_hostile_flat.svg", badgeFor(nil, compat.TargetTPU, `"><img src=x onerror=alert(1)><script>alert(1)</script>&`), styleFlat},
		{"badge_unicode_flat.svg", badgeFor(m(nil), compat.TargetTPU, "模型 · ü"), styleFlat},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got := renderSVG(c.b, c.style)
			golden(t, c.file, got)
			checkSVG(t, got, c.b)
		})
	}
}

// checkSVG asserts that an SVG is well-formed XML, accessible, and that
// its text nodes are exactly the badge's words (no markup got through).
func checkSVG(t *testing.T, svg []byte, b badge) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var texts []string
	var inText, inTitle bool
	var title string
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			switch x.Name.Local {
			case "script", "img", "foreignObject":
				t.Fatalf("SVG has a <%s> element: %s", x.Name.Local, svg)
			case "svg":
				var role, aria string
				for _, a := range x.Attr {
					switch a.Name.Local {
					case "role":
						role = a.Value
					case "aria-label":
						aria = a.Value
					}
					if strings.HasPrefix(strings.ToLower(a.Name.Local), "on") {
						t.Fatalf("event handler attribute %s", a.Name.Local)
					}
				}
				if role != "img" || aria != b.title() {
					t.Errorf("role=%q aria-label=%q", role, aria)
				}
			case "text":
				inText = true
			case "title":
				inTitle = true
			}
		case xml.EndElement:
			inText, inTitle = false, false
		case xml.CharData:
			if inText {
				texts = append(texts, string(x))
			}
			if inTitle {
				title = string(x)
			}
		}
	}
	if title != b.title() {
		t.Errorf("title = %q", title)
	}
	joined := strings.Join(texts, "|")
	if !strings.Contains(strings.ToUpper(joined), strings.ToUpper(b.Message)) || !strings.Contains(strings.ToUpper(joined), strings.ToUpper(b.Label)) {
		t.Errorf("text nodes %q lack label %q or message %q", joined, b.Label, b.Message)
	}
}

func TestRenderBadgeJSON(t *testing.T) {
	got := renderBadgeJSON(badge{Label: `<x>"`, Message: "passing", Tone: tonePass})
	golden(t, "badge_endpoint.json", got)
	var e map[string]any
	if err := json.Unmarshal(got, &e); err != nil {
		t.Fatal(err)
	}
	if e["schemaVersion"] != 1.0 || e["label"] != `<x>"` || e["color"] != "1a7f37" || e["cacheSeconds"] != 300.0 {
		t.Errorf("endpoint JSON = %v", e)
	}
	if bytes.Contains(got, []byte("<")) {
		t.Errorf("JSON should escape < for safe embedding: %s", got)
	}
}

func TestBadgeWidthGrowsWithText(t *testing.T) {
	width := func(msg string) float64 {
		svg := string(renderSVG(badge{Label: "TorchTPU", Message: msg, Tone: tonePass}, styleFlat))
		_, rest, _ := strings.Cut(svg, `width="`)
		w, _, _ := strings.Cut(rest, `"`)
		f, err := strconv.ParseFloat(w, 64)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if a, b := width("ok"), width("passing · 312 tok/s"); a >= b {
		t.Errorf("short message %v not narrower than long %v", a, b)
	}
}
