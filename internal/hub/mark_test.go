package hub

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// TestMarkedBlobIsNotHashedAgain: a blob whose mark matches it as it is now
// is reused without reading it (a 60 GB checkpoint is not hashed on every
// run): here its bytes were changed and the mark then written for them, so
// only a blob that was not hashed again stays as it is.
func TestMarkedBlobIsNotHashedAgain(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, nil, r)
	ctx := context.Background()
	sha := e.hub.SHA("acme/tiny")
	files := []string{"model.safetensors"}
	snap, err := e.c.Download(ctx, "acme/tiny", sha, files)
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(RepoDir(e.cache, "acme/tiny"), "blobs", hubtest.SHA256(r.Files["model.safetensors"]))
	tamper(t, blob)
	fi, err := os.Stat(blob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(verifiedMark(e.cache, "acme/tiny", blob), []byte(blobStamp(fi)), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, _ := os.ReadFile(blob)
	e.hub.ResetLog()
	if _, err := e.c.Download(ctx, "acme/tiny", sha, files); err != nil {
		t.Fatal(err)
	}
	if reqs := e.hub.Requests(); len(reqs) != 0 {
		t.Errorf("a marked blob was hashed and fetched again: %+v", reqs)
	}
	if b, _ := os.ReadFile(filepath.Join(snap, "model.safetensors")); !bytes.Equal(b, changed) {
		t.Errorf("the marked blob was replaced")
	}
}
