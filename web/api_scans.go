package web

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// scanJSON is a scan as the API shows it (last_scan of /api/v1/summary).
type scanJSON struct {
	ID         int64            `json:"id"`
	Trigger    string           `json:"trigger"` // schedule, manual, cli, startup
	Status     store.ScanStatus `json:"status"`
	Target     string           `json:"target"`
	Params     *scanParams      `json:"params"` // null when the scan recorded none
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

// scanBody is one scan with its progress as a fraction (extension), as
// /api/v1/scans shows it.
type scanBody struct {
	scanJSON
	Progress *float64 `json:"progress"` // done ÷ planned; null before planning
}

func withProgress(sc store.Scan) scanBody {
	b := scanBody{scanJSON: newScanJSON(sc)}
	if sc.Planned > 0 {
		p := float64(sc.Done) / float64(sc.Planned)
		b.Progress = &p
	}
	return b
}

// apiScans serves GET /api/v1/scans: the newest scans and the scheduler's state.
func (s *Server) apiScans(c *fiber.Ctx) error {
	limit, err := httpx.ParseLimit(c.Query("limit"), 20)
	if err != nil {
		return err
	}
	scans, err := s.store.ListScans(c.UserContext(), limit)
	if err != nil {
		return fmt.Errorf("web: api scans: %w", err)
	}
	out := struct {
		Scans []scanBody `json:"scans"`
		State ScanState  `json:"state"`
	}{Scans: []scanBody{}, State: s.scanState()}
	for _, sc := range scans {
		out.Scans = append(out.Scans, withProgress(sc))
	}
	return c.JSON(out)
}

// apiScan serves GET /api/v1/scans/{id}: one scan and its progress.
func (s *Server) apiScan(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return fmt.Errorf("%w: scan id must be a positive integer", httpx.ErrBadRequest)
	}
	sc, err := s.store.GetScan(c.UserContext(), id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: no scan %d", httpx.ErrNotFound, id)
		}
		return fmt.Errorf("web: api scan: %w", err)
	}
	return c.JSON(withProgress(sc))
}

// apiRequestScan serves POST /api/v1/scans: queue a manual scan. It needs
// Authorization: Bearer {admin token}; without a configured token the
// route is off (403).
func (s *Server) apiRequestScan(c *fiber.Ctx) error {
	if err := s.authorize(c); err != nil {
		return err
	}
	if err := s.scans.RequestScan("manual"); err != nil {
		if errors.Is(err, ErrScanQueued) {
			return ErrScanQueued
		}
		return fmt.Errorf("web: request scan: %w", err)
	}
	s.log.Info("scan requested", "trigger", "manual", "ip", s.clients.IP(c))
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"queued": true, "state": s.scanState()})
}

// authorize checks the admin token (httpx.Bearer); without one the write
// routes are off.
func (s *Server) authorize(c *fiber.Ctx) error {
	if s.adminToken == "" {
		return httpx.ErrWritesDisabled
	}
	return httpx.Bearer(c, s.adminToken, "admin")
}

// admin is authorize as a route's guard.
func (s *Server) admin(c *fiber.Ctx) error {
	if err := s.authorize(c); err != nil {
		return err
	}
	return c.Next()
}
