package app

import "github.com/google-pytorch/torchtpu-scanner/internal/metrics"

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

func newAppMetrics(r *metrics.Registry) appMetrics {
	return appMetrics{
		scans:            r.Counter("scanner_scans_total", "Scans finished, by outcome.", "status"),
		probes:           r.Counter("scanner_probes_total", "Probes run, by result status.", "status"),
		probeSeconds:     r.Histogram("scanner_probe_duration_seconds", "Wall time a probe held its device.", []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 2400}, "status"),
		hubRequests:      r.Counter("scanner_hub_requests_total", "Hub HTTP responses, by status code (0 = network error).", "code"),
		rateLimitWaits:   r.Counter("scanner_hub_rate_limit_waits_total", "Times the Hub client waited for its rate limit."),
		rateLimitSeconds: r.Counter("scanner_hub_rate_limit_wait_seconds_total", "Seconds spent waiting for the Hub's rate limit."),
		deviceBusy:       r.Gauge("scanner_device_busy_fraction", "Time probes held the device ÷ wall time, of the last finished scan."),
	}
}
