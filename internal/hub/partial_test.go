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

// TestRestartForgetsTheBytes: a partial blob that starts over (a server
// that ignored Range, a 416) hashes only the bytes written after it.
func TestRestartForgetsTheBytes(t *testing.T) {
	for _, etag := range []string{hubtest.SHA256(blob), hubtest.GitBlobSHA1(blob)} {
		inc := filepath.Join(t.TempDir(), "blob.incomplete")
		if err := os.WriteFile(inc, []byte("9876"), 0o644); err != nil {
			t.Fatal(err)
		}
		src := &source{etag: etag, size: int64(len(blob))}
		p, err := openPartial(inc, src)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.restart(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.writer().Write(blob); err != nil {
			t.Fatal(err)
		}
		p.have = int64(len(blob))
		checked, err := verify(*src, p.have, p.sum(), p.f)
		p.f.Close()
		if !checked || err != nil {
			t.Errorf("etag %s: after a restart verify = %v, %v; want the blob checked", etag, checked, err)
		}
	}
}

// TestDownloadLimit: a file's limit is its cap within MaxFileBytes; a
// source without a cap has MaxFileBytes.
func TestDownloadLimit(t *testing.T) {
	d := &download{c: &Client{maxFile: 1000}}
	for max, want := range map[int64]int64{0: 1000, 1: 1, 999: 999, 1000: 1000, 5000: 1000} {
		if got := d.limit(&source{max: max}); got != want {
			t.Errorf("limit with cap %d = %d, want %d", max, got, want)
		}
	}
}
