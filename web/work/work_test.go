package work

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// TestDecodeWorkTakesIntegralNumbers: a work body's integer may be written
// 64.0 or 6.4e1 (JSON Schema's integer, the document's; issue 37:
// schemathesis' 64.0 was a 400), a fraction still is not one, and data
// after the value is refused as json.Unmarshal refuses it.
func TestDecodeWorkTakesIntegralNumbers(t *testing.T) {
	var req fleet.LeaseRequest
	if err := decodeWork([]byte(`{"max": 6.4e1, "wait_s": 2.5, "worker": {"devices": 2.0, "memory_bytes": 1.8e19}}`), &req); err != nil ||
		req.Max != 64 || req.WaitS != 2.5 || req.Worker.Devices != 2 || req.Worker.MemoryBytes != 18e18 {
		t.Errorf("integral numbers: %+v, %v", req, err)
	}
	for _, body := range []string{`{"max": 1.5}`, `{"max": 1e30}`, `{"max": 1} {}`, `{"max": 1`, ``} {
		if err := decodeWork([]byte(body), &req); err == nil {
			t.Errorf("%q decoded: %+v", body, req)
		}
	}
}
