package api

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// scanJSON is a scan as the API shows it (last_scan of /api/v1/summary).
type scanJSON struct {
	ID         int64            `json:"id"`
	Trigger    string           `json:"trigger"` // schedule, manual, cli, startup
	Status     store.ScanStatus `json:"status"`
	Target     string           `json:"target"`
	Params     *ScanParams      `json:"params"` // null when the scan recorded none
	StartedAt  time.Time        `json:"started_at"`
	FinishedAt *time.Time       `json:"finished_at"`
	Planned    int              `json:"planned"`
	Done       int              `json:"done"`
	Probed     int              `json:"probed"`
	Unchanged  int              `json:"unchanged"`
	Error      string           `json:"error,omitempty"`
	DeviceBusy *float64         `json:"device_busy_fraction"`
	Runtime    compat.Runtime   `json:"runtime"`
	// StalledSince and FleetNote (extensions, --dispatch workers): since
	// when no live worker can take the scan's queued jobs, and what the
	// fleet did about it (waiting, re-planned for another runtime).
	StalledSince *time.Time `json:"stalled_since,omitempty"`
	FleetNote    string     `json:"fleet_note,omitempty"`
}

func newScanJSON(sc store.Scan) scanJSON {
	return scanJSON{ID: sc.ID, Trigger: sc.Trigger, Status: sc.Status, Target: sc.Target,
		Params: parseScanParams(sc.Params), StartedAt: sc.StartedAt, FinishedAt: sc.FinishedAt,
		Planned: sc.Planned, Done: sc.Done, Probed: sc.Probed, Unchanged: sc.Unchanged,
		Error: sc.Error, DeviceBusy: sc.DeviceBusy, Runtime: sc.Runtime, StalledSince: sc.StalledSince, FleetNote: sc.FleetNote}
}

// ScanBody is one scan with its progress as a fraction (extension), as
// /api/v1/scans shows it.
type ScanBody struct {
	scanJSON
	Progress *float64 `json:"progress"` // done ÷ planned; null before planning
}

func withProgress(sc store.Scan) ScanBody {
	b := ScanBody{scanJSON: newScanJSON(sc)}
	if sc.Planned > 0 {
		p := float64(sc.Done) / float64(sc.Planned)
		b.Progress = &p
	}
	return b
}

// Scans serves GET /api/v1/scans: the newest scans and the scheduler's state.
func (h *Handler) Scans(c *fiber.Ctx) error {
	limit, err := httpx.ParseLimit(c.Query("limit"), 20)
	if err != nil {
		return err
	}
	scans, err := h.Data.Store.ListScans(c.UserContext(), limit)
	if err != nil {
		return fmt.Errorf("web: api scans: %w", err)
	}
	out := struct {
		Scans []ScanBody     `json:"scans"`
		State data.ScanState `json:"state"`
	}{Scans: []ScanBody{}, State: data.StateOf(h.scans)}
	for _, sc := range scans {
		out.Scans = append(out.Scans, withProgress(sc))
	}
	return c.JSON(out)
}

// Scan serves GET /api/v1/scans/{id}: one scan and its progress.
func (h *Handler) Scan(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return fmt.Errorf("%w: scan id must be a positive integer", httpx.ErrBadRequest)
	}
	sc, err := h.Data.Store.GetScan(c.UserContext(), id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: no scan %d", httpx.ErrNotFound, id)
		}
		return fmt.Errorf("web: api scan: %w", err)
	}
	return c.JSON(withProgress(sc))
}

// RequestScan serves POST /api/v1/scans: queue a manual scan. Its route
// needs Authorization: Bearer {admin token} (web/routes.go guards it);
// without a configured token the route is off (403).
func (h *Handler) RequestScan(c *fiber.Ctx) error {
	if err := h.scans.RequestScan("manual"); err != nil {
		if errors.Is(err, httpx.ErrScanQueued) {
			return httpx.ErrScanQueued
		}
		return fmt.Errorf("web: request scan: %w", err)
	}
	h.log.Info("scan requested", "trigger", "manual", "ip", h.Clients.IP(c))
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"queued": true, "state": data.StateOf(h.scans)})
}
