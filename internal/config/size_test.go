package config

import (
	"io"
	"strings"
	"testing"
)

// TestParseSize: --device-memory's sizes, worked by hand.
func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"48MiB", 48 << 20, false},
		{"1.5GiB", 3 << 29, false},
		{"64KiB", 64 << 10, false},
		{"30 GiB", 30 << 30, false},
		{"2GB", 2_000_000_000, false},
		{"1TiB", 1 << 40, false},
		{"4096", 4096, false},
		{"512B", 512, false},
		{"0", 0, true},
		{"-1MiB", 0, true},
		{"MiB", 0, true},
		{"NaN", 0, true},
		{"Inf", 0, true},
		{"2PiB", 0, true},
		{"0.5B", 0, true},
		{"48 mebibytes", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestDeviceMemoryFlag: scan, serve and probe take --device-memory, and
// refuse a size they cannot read; a worker does not plan, so has none.
func TestDeviceMemoryFlag(t *testing.T) {
	env := envOf(map[string]string{"HOME": "/h"})
	for _, cmd := range []Command{CmdScan, CmdServe, CmdProbe} {
		c, _, err := Parse(cmd, []string{"--device-memory", "48MiB", "--devices", "2"}, env, io.Discard)
		if err != nil || c.DeviceMemory != 48<<20 || c.Devices != 2 {
			t.Errorf("%s: device memory %d devices %d (%v)", cmd, c.DeviceMemory, c.Devices, err)
		}
		if _, _, err := Parse(cmd, []string{"--device-memory", "lots"}, env, io.Discard); err == nil || !strings.Contains(err.Error(), "48MiB") {
			t.Errorf("%s: --device-memory lots: %v", cmd, err)
		}
	}
	if c, _, err := Parse(CmdScan, nil, env, io.Discard); err != nil || c.DeviceMemory != 0 {
		t.Errorf("default device memory %d (%v), want 0: the device's own", c.DeviceMemory, err)
	}
	if _, _, err := Parse(CmdWorker, []string{"--device-memory", "1GiB"}, envOf(map[string]string{"SCANNER_WORKER_TOKEN": "t", "SCANNER_SERVER": "http://s"}), io.Discard); err == nil {
		t.Error("a worker took --device-memory: the server plans")
	}
}
