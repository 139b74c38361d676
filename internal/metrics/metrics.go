// Package metrics is a small, dependency-free registry of counters, gauges
// and histograms that writes the Prometheus text exposition format 0.0.4.
//
// Metrics are registered once, at start-up, and then updated from any
// goroutine:
//
//	reg := metrics.NewRegistry()
//	probes := reg.Counter("scanner_probes_total", "Probes run, by status.", "status")
//	probes.With("pass").Inc()
//
// Registering a name twice with the same kind and label names returns the
// existing metric; registering it with a different kind or labels, or with an
// invalid name, panics: both are programming errors found at start-up.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the media type of WriteText's output.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// DefBuckets are histogram buckets (seconds) suited to request latencies.
var DefBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

var (
	nameRE  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

type kind int

const (
	kindCounter kind = iota
	kindGauge
	kindHistogram
)

func (k kind) String() string {
	switch k {
	case kindCounter:
		return "counter"
	case kindGauge:
		return "gauge"
	default:
		return "histogram"
	}
}

// Registry holds metric families and writes them in the text format.
// The zero value is not usable; call NewRegistry.
type Registry struct {
	mu       sync.Mutex
	families map[string]*family
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{families: map[string]*family{}}
}

// family is one metric name with its series (one per label-value tuple).
type family struct {
	name    string
	help    string
	kind    kind
	labels  []string
	buckets []float64 // histograms only

	mu     sync.RWMutex
	series map[string]*series
}

// series is one label-value tuple of a family. Counters and gauges use val;
// histograms use counts (one per bucket, not cumulative), sum and count.
type series struct {
	values []string
	val    atomicFloat
	counts []atomic.Uint64
	sum    atomicFloat
	count  atomic.Uint64
}

// atomicFloat is a float64 updated with compare-and-swap.
type atomicFloat struct{ bits atomic.Uint64 }

func (a *atomicFloat) load() float64 { return math.Float64frombits(a.bits.Load()) }
func (a *atomicFloat) store(v float64) {
	a.bits.Store(math.Float64bits(v))
}
func (a *atomicFloat) add(d float64) {
	for {
		old := a.bits.Load()
		if a.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

func (r *Registry) register(name, help string, k kind, buckets []float64, labels []string) *family {
	if !nameRE.MatchString(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	for _, l := range labels {
		if !labelRE.MatchString(l) || strings.HasPrefix(l, "__") || (k == kindHistogram && l == "le") {
			panic(fmt.Sprintf("metrics: invalid label name %q for %s", l, name))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.families[name]; ok {
		if f.kind != k || !slices.Equal(f.labels, labels) || !slices.Equal(f.buckets, buckets) {
			panic(fmt.Sprintf("metrics: %s registered twice with different kind, labels or buckets", name))
		}
		return f
	}
	f := &family{name: name, help: help, kind: k, labels: slices.Clone(labels), buckets: buckets,
		series: map[string]*series{}}
	r.families[name] = f
	if k != kindGauge && len(labels) == 0 {
		f.with(nil) // a count of nothing yet is a true 0: exported from the start, so rate() works
	}
	return f
}

// with returns the series for values, creating it on first use.
func (f *family) with(values []string) *series {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("metrics: %s wants %d label values, got %d", f.name, len(f.labels), len(values)))
	}
	key := strings.Join(values, "\xff")
	f.mu.RLock()
	s, ok := f.series[key]
	f.mu.RUnlock()
	if ok {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.series[key]; ok {
		return s
	}
	s = &series{values: slices.Clone(values)}
	if f.kind == kindHistogram {
		s.counts = make([]atomic.Uint64, len(f.buckets))
	}
	f.series[key] = s
	return s
}

// forget removes every series whose label named label has value, and
// returns how many: a series of something gone for good (a worker host
// replaced by a rollout) leaves the export instead of growing it forever.
func (f *family) forget(label, value string) int {
	i := slices.Index(f.labels, label)
	if i < 0 {
		panic(fmt.Sprintf("metrics: %s has no label %q", f.name, label))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, s := range f.series {
		if s.values[i] == value {
			delete(f.series, k)
			n++
		}
	}
	return n
}

// CounterVec is a counter family with labels.
type CounterVec struct{ f *family }

// Forget removes the series whose label has value (see family.forget).
func (v *CounterVec) Forget(label, value string) int { return v.f.forget(label, value) }

// Counter is one series of a counter: a value that only goes up.
type Counter struct{ s *series }

// Counter registers a counter. By convention its name ends in _total.
func (r *Registry) Counter(name, help string, labels ...string) *CounterVec {
	return &CounterVec{r.register(name, help, kindCounter, nil, labels)}
}

// With returns the series for the label values, in the order of the labels.
func (v *CounterVec) With(values ...string) Counter { return Counter{v.f.with(values)} }

// Inc adds one.
func (c Counter) Inc() { c.s.val.add(1) }

// Add adds d; negative values are ignored (a counter never goes down).
func (c Counter) Add(d float64) {
	if d > 0 {
		c.s.val.add(d)
	}
}

// Value returns the current value.
func (c Counter) Value() float64 { return c.s.val.load() }

// Each makes one-label tuples of values, for Declare: Each("a", "b") is
// [["a"], ["b"]].
func Each(values ...string) [][]string {
	out := make([][]string, len(values))
	for i, v := range values {
		out[i] = []string{v}
	}
	return out
}

// Declare creates the series of each label-value tuple at zero, so that
// they are exported before their first increment (Prometheus's rate() and
// increase() need a sample before the first event). An unlabelled counter
// is declared by Counter itself.
func (v *CounterVec) Declare(tuples ...[]string) {
	for _, values := range tuples {
		v.f.with(values)
	}
}

// GaugeVec is a gauge family with labels.
type GaugeVec struct{ f *family }

// Gauge is one series of a gauge: a value that goes up and down.
type Gauge struct{ s *series }

// Gauge registers a gauge.
func (r *Registry) Gauge(name, help string, labels ...string) *GaugeVec {
	return &GaugeVec{r.register(name, help, kindGauge, nil, labels)}
}

// With returns the series for the label values, in the order of the labels.
func (v *GaugeVec) With(values ...string) Gauge { return Gauge{v.f.with(values)} }

// Forget removes the series whose label has value (see family.forget).
func (v *GaugeVec) Forget(label, value string) int { return v.f.forget(label, value) }

// Set sets the gauge to x.
func (g Gauge) Set(x float64) { g.s.val.store(x) }

// HistogramVec is a histogram family with labels.
type HistogramVec struct{ f *family }

// Histogram is one series of a histogram.
type Histogram struct {
	s       *series
	buckets []float64
}

// Histogram registers a histogram with the given upper bounds (nil means
// DefBuckets). Bounds are sorted; +Inf is implied and must not be listed.
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) *HistogramVec {
	if buckets == nil {
		buckets = DefBuckets
	}
	b := slices.Clone(buckets)
	sort.Float64s(b)
	for i, x := range b {
		if math.IsNaN(x) || math.IsInf(x, 0) || (i > 0 && b[i-1] == x) {
			panic(fmt.Sprintf("metrics: %s: invalid or duplicate bucket %v", name, x))
		}
	}
	return &HistogramVec{r.register(name, help, kindHistogram, b, labels)}
}

// With returns the series for the label values, in the order of the labels.
func (v *HistogramVec) With(values ...string) Histogram {
	return Histogram{s: v.f.with(values), buckets: v.f.buckets}
}

// Observe records one value.
func (h Histogram) Observe(x float64) {
	i := sort.SearchFloat64s(h.buckets, x) // first bound >= x
	if i < len(h.buckets) {
		h.s.counts[i].Add(1)
	}
	h.s.sum.add(x)
	h.s.count.Add(1)
}

// Declare creates the series of each label-value tuple with no
// observation, exported from the start (see CounterVec.Declare).
func (v *HistogramVec) Declare(tuples ...[]string) {
	for _, values := range tuples {
		v.f.with(values)
	}
}

// Count returns how many values were observed.
func (h Histogram) Count() uint64 { return h.s.count.Load() }

// WriteText writes every family in the Prometheus text format 0.0.4,
// families sorted by name and series by label values.
func (r *Registry) WriteText(w io.Writer) error {
	r.mu.Lock()
	fams := make([]*family, 0, len(r.families))
	for _, f := range r.families {
		fams = append(fams, f)
	}
	r.mu.Unlock()
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })

	bw := bufio.NewWriter(w)
	for _, f := range fams {
		f.write(bw)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("metrics: write: %w", err)
	}
	return nil
}

func (f *family) write(w *bufio.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n", f.name, escapeHelp(f.help))
	fmt.Fprintf(w, "# TYPE %s %s\n", f.name, f.kind)
	f.mu.RLock()
	all := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		all = append(all, s)
	}
	f.mu.RUnlock()
	slices.SortFunc(all, func(a, b *series) int { return slices.Compare(a.values, b.values) })

	for _, s := range all {
		switch f.kind {
		case kindCounter, kindGauge:
			fmt.Fprintf(w, "%s%s %s\n", f.name, labelString(f.labels, s.values, "", ""), formatFloat(s.val.load()))
		case kindHistogram:
			// Read count first: observations racing with the write can only
			// make the buckets larger than _count, never the +Inf bucket smaller.
			var cum uint64
			for i, ub := range f.buckets {
				cum += s.counts[i].Load()
				fmt.Fprintf(w, "%s_bucket%s %d\n", f.name, labelString(f.labels, s.values, "le", formatFloat(ub)), cum)
			}
			count := max(s.count.Load(), cum)
			fmt.Fprintf(w, "%s_bucket%s %d\n", f.name, labelString(f.labels, s.values, "le", "+Inf"), count)
			fmt.Fprintf(w, "%s_sum%s %s\n", f.name, labelString(f.labels, s.values, "", ""), formatFloat(s.sum.load()))
			fmt.Fprintf(w, "%s_count%s %d\n", f.name, labelString(f.labels, s.values, "", ""), count)
		}
	}
}

// labelString renders {a="x",b="y"} (plus an extra label when extraName is
// set), or "" when there are no labels.
func labelString(names, values []string, extraName, extraValue string) string {
	if len(names) == 0 && extraName == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(values[i]))
		b.WriteByte('"')
	}
	if extraName != "" {
		if len(names) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(extraName)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(extraValue))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escapeLabel escapes a label value: backslash, double quote and line feed.
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// escapeHelp escapes a HELP line: backslash and line feed.
func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// formatFloat writes a sample value as Prometheus expects it.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
