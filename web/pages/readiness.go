package pages

import (
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// This file lays out readiness (internal/readiness) and MFU/MBU for the
// pages, the CSV and the summary API. It formats; the rules are in
// internal/readiness and harness_efficiency.py.

// readyMark is the table's readiness marker.
type readyMark struct {
	Class string // the status chip class of its colour (web/internal/show)
	Label string
	Title string // the hint codes, for the tooltip
}

// levelLabels and levelTones are the markers' words and colours: the
// status palette's, so they share its contrast checks.
var (
	levelLabels = map[readiness.Level]string{
		readiness.LevelReady: "ready", readiness.LevelWarn: "needs work",
		readiness.LevelBlocker: "blocked", readiness.LevelUnknown: "unknown",
	}
	levelTones = map[readiness.Level]show.Tone{
		readiness.LevelReady: show.TonePass, readiness.LevelWarn: show.ToneWarn,
		readiness.LevelBlocker: show.ToneFail, readiness.LevelUnknown: show.ToneNeutral,
	}
	severityTones = map[readiness.Severity]show.Tone{
		readiness.SeverityBlocker: show.ToneFail, readiness.SeverityWarn: show.ToneWarn, readiness.SeverityInfo: show.ToneNeutral,
	}
)

// markOf is the marker of a model's readiness (readiness.LevelOf decides).
func markOf(r *readiness.Readiness) readyMark {
	level := readiness.LevelOf(r)
	m := readyMark{Class: "status st-" + string(levelTones[level]), Label: levelLabels[level]}
	if r == nil {
		m.Title = "readiness not computed yet"
		return m
	}
	var codes []string
	for _, h := range r.Hints {
		codes = append(codes, show.Words(h.Code))
	}
	m.Title = strings.Join(codes, ", ")
	if m.Title == "" {
		m.Title = "no hints"
	}
	return m
}

// chips is the table's "chips (v6e)" cell: v6e devices to hold the model,
// or a dash when not known.
func chips(r *readiness.Readiness) string {
	if r == nil || r.MinDevices == nil {
		return show.Dash
	}
	return strconv.Itoa(r.MinDevices["v6e"])
}

// deviceCount is one generation's row of the readiness block.
type deviceCount struct {
	Name string
	HBM  string
	N    int
}

// hintView is one hint with the chip class of its severity.
type hintView struct {
	readiness.Hint
	Class string
}

// readinessView is the model page's readiness block.
type readinessView struct {
	readiness.Readiness
	Mark    readyMark
	Devices []deviceCount
	Context int64
	Notes   []hintView
	// HeadroomPct is min_devices' headroom (readiness.ServingHeadroomPct).
	HeadroomPct int
}

func newReadinessView(r *readiness.Readiness) *readinessView {
	if r == nil {
		return nil
	}
	v := &readinessView{Readiness: *r, Mark: markOf(r), HeadroomPct: readiness.ServingHeadroomPct}
	for _, h := range r.Hints {
		v.Notes = append(v.Notes, hintView{Hint: h, Class: "status st-" + string(severityTones[h.Severity])})
	}
	if r.ContextTokens != nil {
		v.Context = *r.ContextTokens
	}
	if r.MinDevices != nil {
		for _, g := range readiness.Generations {
			v.Devices = append(v.Devices, deviceCount{Name: g.Name, HBM: show.Bytes(&g.HBMBytes), N: r.MinDevices[g.Name]})
		}
	}
	return v
}

// efficiencyRows are MFU and MBU for the measurements table: the share and
// the peak it is of, or a dash and why not.
func efficiencyRows(m compat.Metrics) []metricRow {
	e := m.Efficiency
	why := ""
	scope := ""
	if e != nil {
		why = e.Note
		if e.Model == "reduced" {
			scope = " · the reduced (arch) model's"
		}
	}
	row := func(name string, v, peak *float64, unit string, scale float64) metricRow {
		if v == nil {
			if why != "" {
				return metricRow{name, show.Dash + " (" + why + ")"}
			}
			return metricRow{name, show.Dash}
		}
		s := show.Pct(v)
		if peak != nil {
			s += " of " + strconv.FormatFloat(*peak/scale, 'f', -1, 64) + unit
		}
		if e != nil && e.Device != "" {
			s += " (" + e.Device + ")"
		}
		return metricRow{name, s + scope}
	}
	var flops, bw *float64
	if e != nil {
		flops, bw = e.PeakBF16FLOPS, e.PeakHBMBytesPerS
	}
	return []metricRow{row("MFU", m.MFU, flops, " TFLOP/s", 1e12), row("MBU", m.MBU, bw, " GB/s", 1e9)}
}

// readinessMethodology is what /methodology shows of the readiness rules
// and the tables they use, with their sources.
type readinessMethodology struct {
	Generations []readiness.Generation
	Rules       []readiness.Rule
	Peaks       []harness.DevicePeak
	MaxContext  int
	HeadroomPct int
}

func newReadinessMethodology() readinessMethodology {
	return readinessMethodology{Generations: readiness.Generations, Rules: readiness.Rules, Peaks: harness.DevicePeaks(),
		MaxContext: readiness.MaxContext, HeadroomPct: readiness.ServingHeadroomPct}
}
