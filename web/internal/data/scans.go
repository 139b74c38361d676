package data

import "time"

// ScanState is what the scheduler is doing now.
type ScanState struct {
	Running    bool      `json:"running"`
	ScanID     int64     `json:"scan_id,omitempty"` // the running scan's id
	Foreign    bool      `json:"foreign,omitempty"` // another process runs it (scanner scan on the same database)
	Queued     bool      `json:"queued"`
	HubError   string    `json:"hub_error,omitempty"`   // the last Hub failure, "" once it recovered
	HubErrorAt time.Time `json:"hub_error_at,omitzero"` // when HubError happened
	// With --dispatch workers: the live workers, and how many hold a lease.
	Workers     int `json:"workers,omitempty"`
	WorkersBusy int `json:"workers_busy,omitempty"`
}

// ScanControl is the part of the scheduler the web server drives.
type ScanControl interface {
	// RequestScan queues a manual scan; it returns httpx.ErrScanQueued (web.ErrScanQueued) if one is
	// already waiting.
	RequestScan(trigger string) error
	// State reports what the scheduler is doing; it must be cheap.
	State() ScanState
}

// StateOf is sc's state, the zero state without a scheduler.
func StateOf(sc ScanControl) ScanState {
	if sc == nil {
		return ScanState{}
	}
	return sc.State()
}
