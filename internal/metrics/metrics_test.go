package metrics

import (
	"math"
	"strings"
	"sync"
	"testing"
)

func TestWriteText(t *testing.T) {
	r := NewRegistry()
	probes := r.Counter("scanner_probes_total", "Probes run,\nby status.", "status", "target")
	probes.With("pass", "tpu").Inc()
	probes.With("fail", "tpu").Add(2)
	probes.With("fail", "tpu").Add(-5) // ignored
	probes.With(`we"ird\`+"\n", "cpu").Inc()
	busy := r.Gauge("scanner_device_busy_fraction", "Device busy.")
	busy.With().Set(0.25)
	h := r.Histogram("scanner_probe_duration_seconds", "Probe wall time.", []float64{10, 1, 100}, "target")
	for _, v := range []float64{0.5, 1, 5, 1000} {
		h.With("tpu").Observe(v)
	}

	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `# HELP scanner_device_busy_fraction Device busy.
# TYPE scanner_device_busy_fraction gauge
scanner_device_busy_fraction 0.25
# HELP scanner_probe_duration_seconds Probe wall time.
# TYPE scanner_probe_duration_seconds histogram
scanner_probe_duration_seconds_bucket{target="tpu",le="1"} 2
scanner_probe_duration_seconds_bucket{target="tpu",le="10"} 3
scanner_probe_duration_seconds_bucket{target="tpu",le="100"} 3
scanner_probe_duration_seconds_bucket{target="tpu",le="+Inf"} 4
scanner_probe_duration_seconds_sum{target="tpu"} 1006.5
scanner_probe_duration_seconds_count{target="tpu"} 4
# HELP scanner_probes_total Probes run,\nby status.
# TYPE scanner_probes_total counter
scanner_probes_total{status="fail",target="tpu"} 2
scanner_probes_total{status="pass",target="tpu"} 1
scanner_probes_total{status="we\"ird\\\n",target="cpu"} 1
`
	if got := b.String(); got != want {
		t.Errorf("WriteText:\n%s\nwant:\n%s", got, want)
	}
}

func TestRegisterTwice(t *testing.T) {
	r := NewRegistry()
	a := r.Counter("x_total", "x", "a")
	b := r.Counter("x_total", "x", "a")
	a.With("1").Inc()
	if got := b.With("1").Value(); got != 1 {
		t.Fatalf("same registration should share series, got %v", got)
	}
	for name, f := range map[string]func(){
		"kind":       func() { r.Gauge("x_total", "x", "a") },
		"labels":     func() { r.Counter("x_total", "x", "b") },
		"bad name":   func() { r.Counter("1x", "x") },
		"bad label":  func() { r.Counter("y_total", "x", "a-b") },
		"le label":   func() { r.Histogram("h", "x", nil, "le") },
		"arity":      func() { a.With("1", "2") },
		"dup bucket": func() { r.Histogram("h2", "x", []float64{1, 1}) },
		"inf bucket": func() { r.Histogram("h3", "x", []float64{math.Inf(1)}) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

func TestFormatFloat(t *testing.T) {
	for v, want := range map[float64]string{1: "1", 0.1: "0.1", 1e21: "1e+21", math.Inf(1): "+Inf", math.Inf(-1): "-Inf"} {
		if got := formatFloat(v); got != want {
			t.Errorf("formatFloat(%v) = %q, want %q", v, got, want)
		}
	}
	if got := formatFloat(math.NaN()); got != "NaN" {
		t.Errorf("NaN = %q", got)
	}
}

func TestConcurrent(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("c_total", "c", "k")
	h := r.Histogram("h_seconds", "h", nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				c.With("a").Inc()
				h.With().Observe(0.01)
			}
		}()
	}
	var b strings.Builder
	_ = r.WriteText(&b) // concurrently with the writers
	wg.Wait()
	if got := c.With("a").Value(); got != 8000 {
		t.Fatalf("counter = %v, want 8000", got)
	}
	if got := h.With().Count(); got != 8000 {
		t.Fatalf("histogram count = %v", got)
	}
}

// TestZeroFromTheStart: counters and histograms are exported at 0 before
// their first event (unlabelled ones on registration, labelled ones once
// declared); a gauge that was never set is not (it was not measured).
func TestZeroFromTheStart(t *testing.T) {
	r := NewRegistry()
	r.Counter("a_total", "A.")
	r.Histogram("b_seconds", "B.", []float64{1})
	r.Counter("c_total", "C.", "status").Declare(Each("ok", "bad")...)
	r.Histogram("d_seconds", "D.", []float64{1}, "route").Declare([]string{"/x"})
	r.Gauge("e_fraction", "E.")
	r.Counter("f_total", "F.", "code")
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"a_total 0\n", "b_seconds_count 0\n", `c_total{status="ok"} 0` + "\n", `c_total{status="bad"} 0` + "\n",
		`d_seconds_count{route="/x"} 0` + "\n", `d_seconds_bucket{route="/x",le="+Inf"} 0` + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, not := range []string{"\ne_fraction ", "\nf_total{"} {
		if strings.Contains(out, not) {
			t.Errorf("%q has a sample nobody made:\n%s", not, out)
		}
	}
}

// TestForget: the series of a label value gone for good leave the export;
// the others stay, and one used again starts anew.
func TestForget(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("jobs_total", "Jobs.", "worker", "status")
	g := r.Gauge("seen_seconds", "Seen.", "worker")
	c.With("a", "pass").Add(3)
	c.With("a", "fail").Inc()
	c.With("b", "pass").Inc()
	g.With("a").Set(5)
	g.With("b").Set(6)
	if n := c.Forget("worker", "a"); n != 2 {
		t.Errorf("forgot %d counter series, want 2", n)
	}
	if n := g.Forget("worker", "a"); n != 1 {
		t.Errorf("forgot %d gauge series, want 1", n)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, `worker="a"`) || !strings.Contains(out, `jobs_total{worker="b",status="pass"} 1`) ||
		!strings.Contains(out, `seen_seconds{worker="b"} 6`) {
		t.Errorf("after forgetting a:\n%s", out)
	}
	if c.With("a", "pass").Inc(); c.With("a", "pass").Value() != 1 {
		t.Error("a forgotten series used again does not start anew")
	}
	defer func() {
		if recover() == nil {
			t.Error("Forget of a label the family lacks did not panic")
		}
	}()
	c.Forget("host", "a")
}

// TestUnlabelledHistogramText: a histogram without labels writes its le
// label alone in the braces of each bucket (no leading comma), and its sum
// and count without braces.
func TestUnlabelledHistogramText(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("wait_seconds", "Wait.", []float64{1})
	h.With().Observe(0.5)
	h.With().Observe(2)
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wait_seconds_bucket{le=\"1\"} 1\n", "wait_seconds_bucket{le=\"+Inf\"} 2\n",
		"wait_seconds_sum 2.5\n", "wait_seconds_count 2\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}
