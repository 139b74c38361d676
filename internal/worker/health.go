package worker

import (
	"encoding/json"
	"net/http"
	"time"
)

// Health is what GET /healthz of a worker says.
type Health struct {
	// Status is "ok", "starting" while the device is being probed, or
	// "misconfigured" (503) once the server refused the worker (a wrong
	// or missing token, no work routes, not a scanner) for longer than
	// Config.MisconfiguredAfter; Error then says what is wrong.
	Status      string     `json:"status"`
	Error       string     `json:"error,omitempty"`
	ID          string     `json:"id"`
	Running     int64      `json:"running"`  // probes running now
	Accepted    int64      `json:"accepted"` // results the server took
	ServerUp    bool       `json:"server_reachable"`
	LastContact *time.Time `json:"last_contact"` // the server's last answer
}

// HealthHandler serves GET /healthz: 200 while the worker runs, whether or
// not the server answers (a worker waiting out a server restart is
// healthy: restarting it would not help); 503 once the server has refused
// its setup for longer than Config.MisconfiguredAfter.
func (w *Worker) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, r *http.Request) {
		h := Health{Status: "ok", ID: w.cfg.ID, Running: w.running.Load(), Accepted: w.done.Load(), ServerUp: w.serverUp.Load()}
		if w.resolving.Load() {
			h.Status = "starting"
		}
		if ns := w.lastOK.Load(); ns > 0 {
			t := time.Unix(0, ns).UTC()
			h.LastContact = &t
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		if reason := w.misconfigured(time.Now()); reason != "" {
			h.Status, h.Error = "misconfigured", reason
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(rw).Encode(h)
	})
	return mux
}
