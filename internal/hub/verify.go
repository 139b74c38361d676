package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A blob in the cache is named by its content: an LFS file's blob by its
// sha256, another file's by its git blob sha1. Before a blob already in the
// cache is reused (a file of the snapshot, or a blob another revision
// shares), it is checked against its name unless this scanner checked it
// before and it has not changed since: whatever else can write the cache (a
// Python tool, a harness on a host without Landlock, a person) may have
// changed it. A blob that does not match is removed, so the file is
// downloaded again.
//
// A check is remembered in the cache's .locks folder (which
// huggingface_hub's cache scan skips), as
// .locks/models--org--name/<blob>.verified holding the blob's size, inode,
// ctime and mtime when it matched. Any change of those, which writing the
// blob makes (and a user program cannot set a ctime back), or a missing
// mark, means hashing the blob again.

// verifiedMark is where a check of blob (a path in id's blobs/) is
// remembered.
func verifiedMark(cacheDir, id, blob string) string {
	return filepath.Join(cacheDir, ".locks", repoFolderName(id), filepath.Base(blob)+".verified")
}

// blobStamp is what a mark records of a blob.
func blobStamp(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("size=%d ino=%d ctime=%d.%09d mtime=%d\n", fi.Size(), st.Ino, st.Ctim.Sec, st.Ctim.Nsec, fi.ModTime().UnixNano())
}

// checkable reports whether a blob's name is a hash of its content.
func checkable(blob string) bool {
	name := filepath.Base(blob)
	return sha256RE.MatchString(name) || sha1RE.MatchString(name)
}

// markVerified remembers that blob matched its name, as it is now. Best
// effort: without a mark the blob is hashed again next time.
func (d *download) markVerified(blob string) {
	fi, err := os.Stat(blob)
	if err != nil || !checkable(blob) {
		return
	}
	if stamp := blobStamp(fi); stamp != "" {
		mark := verifiedMark(d.c.cacheDir, d.id, blob)
		if os.MkdirAll(filepath.Dir(mark), 0o755) == nil {
			_ = os.WriteFile(mark, []byte(stamp), 0o644)
		}
	}
}

// reusable reports whether blob is in the cache and may be reused: its
// name is no hash (nothing to check it against, as when it was
// downloaded), a mark says it matched and has not changed since, or it
// matches now. A blob that does not match is removed (with its mark) and
// reported as not there.
func (d *download) reusable(blob string) (bool, error) {
	fi, err := os.Stat(blob)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("cached blob %s is not a regular file: %w", filepath.Base(blob), ErrIntegrity)
	}
	if !checkable(blob) {
		return true, nil
	}
	mark := verifiedMark(d.c.cacheDir, d.id, blob)
	if b, err := os.ReadFile(mark); err == nil && string(b) == blobStamp(fi) {
		return true, nil
	}
	ok, err := contentMatches(blob, fi.Size())
	if err != nil {
		return false, err
	}
	if !ok {
		d.c.log.Warn("hub: a cached file does not match its hash; downloading it again",
			"model", d.id, "blob", filepath.Base(blob))
		os.Remove(mark)
		if err := os.Remove(blob); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		return false, nil
	}
	d.markVerified(blob)
	return true, nil
}

// contentMatches hashes the blob at path, of size n, the way its name says.
func contentMatches(path string, n int64) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	name := filepath.Base(path)
	if sha1RE.MatchString(name) {
		got, err := gitBlobSHA1(f, n)
		return got == name, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == name, nil
}

// cachedFile reports the size of file f of the snapshot when it can be
// reused: a link into the repo's blobs/ to a blob that is reusable. A file
// that is not such a link (or whose blob was just removed) is fetched
// again, and its link replaced.
func (d *download) cachedFile(snap, f string) (int64, bool, error) {
	pointer := pointerPath(snap, f)
	target, err := os.Readlink(pointer)
	if err != nil {
		return 0, false, nil
	}
	blob := filepath.Clean(filepath.Join(filepath.Dir(pointer), target))
	if filepath.Dir(blob) != filepath.Join(d.repo, "blobs") {
		return 0, false, nil
	}
	ok, err := d.reusable(blob)
	if !ok || err != nil {
		return 0, false, err
	}
	fi, err := os.Stat(blob)
	if err != nil {
		return 0, false, err
	}
	return fi.Size(), true, nil
}

// linkCached links pointer to blob when blob is in the cache and reusable
// (checked against its hash); done is false when blob must be fetched.
func (d *download) linkCached(blob, pointer string) (done bool, err error) {
	ok, err := d.reusable(blob)
	if err != nil || !ok {
		return err != nil, err
	}
	return true, link(blob, pointer)
}
