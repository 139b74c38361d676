package hub

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// tamper changes a cached file the way a process with write access to the
// cache would: through the snapshot's link, keeping its size and mtime.
func tamper(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestTamperedCacheIsDownloadedAgain: a cached file changed after it was
// downloaded (an LFS file named by its sha256, a git file by its blob sha1)
// is not reused: it is fetched again and the snapshot has the Hub's bytes.
func TestTamperedCacheIsDownloadedAgain(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, nil, r)
	ctx := context.Background()
	sha := e.hub.SHA("acme/tiny")
	snap, err := e.c.Download(ctx, "acme/tiny", sha, smallFiles)
	if err != nil {
		t.Fatal(err)
	}
	tamper(t, filepath.Join(snap, "model.safetensors"))
	tamper(t, filepath.Join(snap, "config.json"))
	e.hub.ResetLog()
	if _, err := e.c.Download(ctx, "acme/tiny", sha, smallFiles); err != nil {
		t.Fatal(err)
	}
	for _, f := range smallFiles {
		if b, _ := os.ReadFile(filepath.Join(snap, filepath.FromSlash(f))); !bytes.Equal(b, r.Files[f]) {
			t.Errorf("%s differs from the Hub's after the second download", f)
		}
	}
	fetched := map[string]bool{}
	for _, req := range e.hub.Requests() {
		if req.Method == "GET" {
			fetched[req.Path[strings.LastIndex(req.Path, "/")+1:]] = true
		}
	}
	if !fetched["config.json"] || len(e.requests("cdn", "/")) != 1 {
		t.Errorf("the tampered files were not fetched again: %+v", e.hub.Requests())
	}
	if fetched["tokenizer.json"] {
		t.Errorf("an intact file was fetched again")
	}
	if !strings.Contains(e.logs.String(), "does not match its hash") {
		t.Errorf("no warning about the tampered files:\n%s", e.logs.String())
	}
}

// TestTamperedSharedBlobIsDownloadedAgain: a new revision reusing a blob
// of an older one does not link a blob that was changed since.
func TestTamperedSharedBlobIsDownloadedAgain(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, nil, r)
	ctx := context.Background()
	snap, err := e.c.Download(ctx, "acme/tiny", e.hub.SHA("acme/tiny"), smallFiles)
	if err != nil {
		t.Fatal(err)
	}
	tamper(t, filepath.Join(snap, "model.safetensors"))
	newSHA := strings.Repeat("d", 40)
	e.hub.SetSHA("acme/tiny", newSHA)
	e.hub.ResetLog()
	snap2, err := e.c.Download(ctx, "acme/tiny", newSHA, smallFiles)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(snap2, "model.safetensors")); !bytes.Equal(b, r.Files["model.safetensors"]) {
		t.Error("the new revision links the tampered blob")
	}
	if n := len(e.requests("cdn", "/")); n != 1 {
		t.Errorf("%d CDN requests, want the tampered blob fetched once", n)
	}
}

// TestCachedBlobCheckedOnceThenMarked: a blob from an older run (no mark)
// is hashed before reuse and then marked; an intact cache sends nothing.
func TestCachedBlobCheckedOnceThenMarked(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, nil, r)
	ctx := context.Background()
	sha := e.hub.SHA("acme/tiny")
	if _, err := e.c.Download(ctx, "acme/tiny", sha, smallFiles); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(RepoDir(e.cache, "acme/tiny"), "blobs", hubtest.SHA256(r.Files["model.safetensors"]))
	mark := verifiedMark(e.cache, "acme/tiny", blob)
	first, err := os.ReadFile(mark)
	if err != nil {
		t.Fatalf("a downloaded blob is not marked as checked: %v", err)
	}
	if err := os.Remove(mark); err != nil { // as an older scanner left it
		t.Fatal(err)
	}
	e.hub.ResetLog()
	if _, err := e.c.Download(ctx, "acme/tiny", sha, smallFiles); err != nil {
		t.Fatal(err)
	}
	if reqs := e.hub.Requests(); len(reqs) != 0 {
		t.Errorf("an intact cache sent %d requests", len(reqs))
	}
	if again, err := os.ReadFile(mark); err != nil || !bytes.Equal(again, first) {
		t.Errorf("mark after the check: %q (%v), want %q", again, err, first)
	}
	// Touching the blob (a new ctime) makes the mark stale.
	time.Sleep(10 * time.Millisecond)
	now := time.Now()
	if err := os.Chtimes(blob, now, now); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(blob)
	if stamp := blobStamp(fi); stamp == string(first) {
		t.Errorf("the stamp %q did not change with the blob's times", stamp)
	}
}
