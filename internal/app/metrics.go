package app

import (
	"runtime"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// appMetrics are the series the scanner exports on /metrics.
type appMetrics struct {
	scans            *metrics.CounterVec
	probes           *metrics.CounterVec
	probeSeconds     *metrics.HistogramVec
	hubRequests      *metrics.CounterVec
	rateLimitWaits   *metrics.CounterVec
	rateLimitSeconds *metrics.CounterVec
	deviceBusy       *metrics.GaugeVec
}

// hubCodes are the Hub answers a scan usually sees (0: a network error);
// their series exist from the start, others appear when they happen.
var hubCodes = []string{"0", "200", "206", "302", "307", "401", "403", "404", "416", "429", "500", "502", "503", "504"}

func newAppMetrics(r *metrics.Registry, version string) appMetrics {
	m := appMetrics{
		scans:            r.Counter("scanner_scans_total", "Scans finished, by outcome.", "status"),
		probes:           r.Counter("scanner_probes_total", "Probes run, by result status.", "status"),
		probeSeconds:     r.Histogram("scanner_probe_duration_seconds", "Wall time a probe held its device.", []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 2400}, "status"),
		hubRequests:      r.Counter("scanner_hub_requests_total", "Hub HTTP responses, by status code (0 = network error).", "code"),
		rateLimitWaits:   r.Counter("scanner_hub_rate_limit_waits_total", "Times the Hub client waited for its rate limit."),
		rateLimitSeconds: r.Counter("scanner_hub_rate_limit_wait_seconds_total", "Seconds spent waiting for the Hub's rate limit."),
		deviceBusy:       r.Gauge("scanner_device_busy_fraction", "Time probes held the device ÷ wall time, of the last finished scan."),
	}
	// Every counter is exported from the start at 0 (rate() needs a
	// sample before the first event); the device-busy gauge only once a
	// scan measured it.
	m.scans.Declare(metrics.Each(string(store.ScanDone), string(store.ScanFailed), string(store.ScanInterrupted))...)
	var statuses []string
	for _, st := range compat.Statuses {
		if st != compat.StatusUntested {
			statuses = append(statuses, string(st))
		}
	}
	m.probes.Declare(metrics.Each(statuses...)...)
	m.probeSeconds.Declare(metrics.Each(statuses...)...)
	m.hubRequests.Declare(metrics.Each(hubCodes...)...)
	r.Gauge("scanner_build_info", "The running scanner: version, Go version and the harness's pinned requirements (always 1).",
		"version", "goversion", "requirements").With(version, runtime.Version(), harness.RequirementsHash()).Set(1)
	return m
}
