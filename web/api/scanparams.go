package api

import (
	"encoding/json"
	"strings"
	"time"
)

// ScanParams is a scan's options as the API shows them (the "params" of
// /api/v1/scans): the API's own snake_case names, every key always
// present, whatever form the scan recorded them in.
type ScanParams struct {
	Trigger  string   `json:"trigger"`
	Source   string   `json:"source"` // hub or cache
	Limit    int      `json:"limit"`  // how many popular models
	Sort     string   `json:"sort"`   // the Hub listing's order
	Tasks    []string `json:"tasks"`  // pipeline tags; [] = all
	Models   []string `json:"models"` // exactly these ids; [] = the listing
	Target   string   `json:"target"` // as requested (auto resolves: see the scan's target)
	Mode     string   `json:"mode"`
	TimeoutS *float64 `json:"timeout_s"` // per probe; null when not recorded
	// ScanTimeoutS is the whole scan's deadline; null when not recorded.
	ScanTimeoutS *float64 `json:"scan_timeout_s"`
	Force        bool     `json:"force"`
	Devices      int      `json:"devices"`
	// MemoryBudgetBytes bounds the weights auto mode downloads; null when
	// derived from the device's (or host's) memory.
	MemoryBudgetBytes *int64 `json:"memory_budget_bytes"`
	// DeviceMemoryBytes is one device's memory the plan sharded by
	// (--device-memory); null when the device's own.
	DeviceMemoryBytes *int64 `json:"device_memory_bytes"`
}

// recordedParams reads the params a scan recorded, in either form: the
// JSON of scan.Options with Go field names (what scans write, and what
// every existing database holds; encoding/json matches "Limit" to "limit"
// without regard to case, so only the names that differ by more than case
// are listed twice) or the API's own snake_case form.
type recordedParams struct {
	ScanParams
	Timeout  *int64 `json:"Timeout"` // scan.Options.Timeout: a time.Duration, in nanoseconds
	GoScanTO *int64 `json:"ScanTimeout"`
	GoBudget *int64 `json:"MemoryBudgetBytes"`
	GoDevMem *int64 `json:"DeviceMemory"`
}

// parseScanParams renders a scan's recorded params for the API; nil when
// it recorded none or something that is not a JSON object.
func parseScanParams(raw string) *ScanParams {
	if !strings.HasPrefix(strings.TrimSpace(raw), "{") {
		return nil
	}
	var r recordedParams
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil
	}
	p := r.ScanParams
	if p.TimeoutS == nil && r.Timeout != nil {
		s := time.Duration(*r.Timeout).Seconds()
		p.TimeoutS = &s
	}
	if p.ScanTimeoutS == nil && r.GoScanTO != nil && *r.GoScanTO > 0 {
		s := time.Duration(*r.GoScanTO).Seconds()
		p.ScanTimeoutS = &s
	}
	if p.MemoryBudgetBytes == nil {
		p.MemoryBudgetBytes = r.GoBudget
	}
	if p.MemoryBudgetBytes != nil && *p.MemoryBudgetBytes <= 0 { // 0: derived
		p.MemoryBudgetBytes = nil
	}
	if p.DeviceMemoryBytes == nil {
		p.DeviceMemoryBytes = r.GoDevMem
	}
	if p.DeviceMemoryBytes != nil && *p.DeviceMemoryBytes <= 0 { // 0: the device's own
		p.DeviceMemoryBytes = nil
	}
	if p.Tasks == nil {
		p.Tasks = []string{}
	}
	if p.Models == nil {
		p.Models = []string{}
	}
	return &p
}
