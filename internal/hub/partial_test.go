package hub

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// TestOpenPartialEmptyBlob: any byte left over is too many for an empty
// blob, so its partial file starts over, and is complete at once.
func TestOpenPartialEmptyBlob(t *testing.T) {
	for _, etag := range []string{hubtest.SHA256(nil), hubtest.GitBlobSHA1(nil)} {
		inc := filepath.Join(t.TempDir(), "blob.incomplete")
		if err := os.WriteFile(inc, []byte("left over"), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := openPartial(inc, &source{etag: etag, size: 0})
		if err != nil {
			t.Fatal(err)
		}
		if p.have != 0 || !p.complete() {
			t.Errorf("etag %s: have %d, complete %v; want an empty, complete blob", etag, p.have, p.complete())
		}
		p.f.Close()
		if fi, err := os.Stat(inc); err != nil || fi.Size() != 0 {
			t.Errorf("etag %s: partial file %v %v, want it emptied", etag, fi, err)
		}
	}
}
