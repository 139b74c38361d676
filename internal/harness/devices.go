package harness

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// Topologies are the device counts one host can run as one slice (a
	// sharded probe's process counts) and the TORCH_TPU_TOPOLOGY of each;
	// TPUs only.
	Topologies map[string]string `json:"topologies,omitempty"`
	Source     string            `json:"source"`
}

// SliceSizes are the device counts of Topologies, smallest first.
func (d DevicePeak) SliceSizes() []int {
	var out []int
	for k := range d.Topologies {
		if n, err := strconv.Atoi(k); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Topology is the TORCH_TPU_TOPOLOGY of a slice of n devices; false when
// the table has none.
func (d DevicePeak) Topology(n int) (string, bool) {
	t, ok := d.Topologies[strconv.Itoa(n)]
	return t, ok
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

// NormalizeDeviceName is how the harness's match_device
// (harness_efficiency.py) compares a runtime device name with the table's
// names: lowercased, with runs of white space collapsed to one space.
func NormalizeDeviceName(name string) string {
	return strings.Join(strings.Fields(strings.ToLower(name)), " ")
}

// MatchDevicePeak finds the table entry for a device the runtime names name
// on target, as match_device does. Only an exact name matches: an unknown
// device gets no peak rather than a guessed one. The plan (a sharded
// probe's generation), the runner (a slice's topology) and the web's chips
// column use it.
func MatchDevicePeak(target, name string) (DevicePeak, bool) {
	n := NormalizeDeviceName(name)
	for _, d := range devicePeaks {
		if d.Target != target {
			continue
		}
		if slices.Contains(d.Names, n) {
			return d, true
		}
	}
	return DevicePeak{}, false
}
