package harness

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// devicesJSON is the table of device peaks the harness reads for MFU and
// MBU (devices.json); the scanner reads the same file for the
// methodology page.
//
//go:embed devices.json
var devicesJSON []byte

// DevicePeak is one device of the peak table: what one device, as its
// runtime exposes it, can do at most.
type DevicePeak struct {
	Key          string   `json:"key"`
	Label        string   `json:"label"`
	Target       string   `json:"target"` // tpu or cuda
	Names        []string `json:"names"`  // runtime device names, normalised (harness_efficiency.py match_device)
	Generation   string   `json:"generation,omitempty"`
	BF16FLOPS    float64  `json:"bf16_flops"`      // dense bf16 FLOP/s
	HBMBytesPerS float64  `json:"hbm_bytes_per_s"` // HBM bandwidth, bytes/s
	HBMBytes     int64    `json:"hbm_bytes,omitempty"`
	MXU          int64    `json:"mxu,omitempty"`
	Source       string   `json:"source"`
}

// devicePeaks is the parsed table; the embedded file is checked by tests,
// so a malformed one fails the build's tests, not a request.
var devicePeaks = must(parseDevicePeaks(devicesJSON))

func parseDevicePeaks(data []byte) ([]DevicePeak, error) {
	var doc struct {
		Devices []DevicePeak `json:"devices"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("devices.json: %w", err)
	}
	if len(doc.Devices) == 0 {
		return nil, fmt.Errorf("devices.json: no devices")
	}
	return doc.Devices, nil
}

// DevicePeaks returns the peak table, in its file's order. Callers must not
// modify it.
func DevicePeaks() []DevicePeak { return devicePeaks }
