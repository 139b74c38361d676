package worker

import (
	"encoding/json"
	"net/http"
	"time"
)

// Health is what GET /healthz of a worker says.
type Health struct {
	Status      string     `json:"status"` // "ok", or "starting" while the device is being probed
	ID          string     `json:"id"`
	Running     int64      `json:"running"`  // probes running now
	Accepted    int64      `json:"accepted"` // results the server took
	ServerUp    bool       `json:"server_reachable"`
	LastContact *time.Time `json:"last_contact"` // the server's last answer
}

// HealthHandler serves GET /healthz: 200 while the worker runs, whether or
// not the server answers (a worker waiting out a server restart is
// healthy: restarting it would not help).
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
		_ = json.NewEncoder(rw).Encode(h)
	})
	return mux
}
