package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// repoFolderName is huggingface_hub's repo_folder_name for a model:
// "org/name" → "models--org--name".
func repoFolderName(id string) string {
	return "models--" + strings.ReplaceAll(id, "/", "--")
}

// RepoDir is the cache folder of model id: <cacheDir>/models--org--name.
func RepoDir(cacheDir, id string) string {
	return filepath.Join(cacheDir, repoFolderName(id))
}

// SnapshotDir is where the files of model id at commit sha live in the Hub
// cache: <cacheDir>/models--org--name/snapshots/<sha>. For a valid id
// (compat.ValidateModelID) and sha it is always inside cacheDir.
func SnapshotDir(cacheDir, id, sha string) string {
	return filepath.Join(RepoDir(cacheDir, id), "snapshots", sha)
}

func pointerPath(snapshot, name string) string {
	return filepath.Join(snapshot, filepath.FromSlash(name))
}

// writeRef records in the repo folder that ref (e.g. "main") points at
// commit sha, as huggingface_hub does in refs/<ref>: written atomically,
// without a trailing newline, and only when it changes.
func writeRef(repo, ref, sha string) error {
	p := filepath.Join(repo, "refs", filepath.FromSlash(ref))
	if cur, ok := readRef(p); ok && cur == sha {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(sha); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("hub: write ref: %w", err)
	}
	return nil
}

// readRef reads a refs/ file: a commit id, so never more than a few
// hundred bytes, whatever another tool left there.
func readRef(p string) (string, bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// cachedirTag is huggingface_hub's CACHEDIR.TAG (bford.info/cachedir), so
// backup tools skip the cache.
const cachedirTag = "Signature: 8a477f597d28d172789f06886806bc55\n" +
	"# This file is a cache directory tag created by huggingface_hub.\n" +
	"# For information about cache directory tags, see:\n" +
	"#\thttps://bford.info/cachedir/\n"

func createCachedirTag(cacheDir string) {
	p := filepath.Join(cacheDir, "CACHEDIR.TAG")
	if _, err := os.Stat(p); err == nil {
		return
	}
	_ = os.WriteFile(p, []byte(cachedirTag), 0o644) // best effort, as huggingface_hub
}

// ScanCache lists the models already in a local Hub cache (the scanner's
// --source cache), sorted by id. For each models--* folder: SHA is refs/main
// (or, without it, the most recent snapshot); Siblings are the files of that
// snapshot whose blob is present, with sizes (FilesMetadata) and, for blobs
// named by a sha256, LFSSHA256; Config is the snapshot's config.json. The
// Hub's metadata (downloads, task, library, gated, …) is not in the cache and
// stays empty. Folders that are not models, or not readable, are skipped; a
// missing cacheDir is an empty cache.
func ScanCache(cacheDir string) ([]ModelInfo, error) {
	entries, err := os.ReadDir(cacheDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hub: scan cache: %w", err)
	}
	var out []ModelInfo
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "models--")
		if !ok || !e.IsDir() {
			continue
		}
		id := strings.Replace(rest, "--", "/", 1)
		if compat.ValidateModelID(id) != nil || repoFolderName(id) != e.Name() {
			continue
		}
		mi, ok := scanRepo(filepath.Join(cacheDir, e.Name()), id)
		if ok {
			out = append(out, mi)
		}
	}
	slices.SortFunc(out, func(a, b ModelInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func scanRepo(repo, id string) (ModelInfo, bool) {
	sha := ""
	if s, ok := readRef(filepath.Join(repo, "refs", "main")); ok {
		if validateCommit(s) == nil && dirExists(filepath.Join(repo, "snapshots", s)) {
			sha = s
		}
	}
	if sha == "" {
		sha = newestSnapshot(filepath.Join(repo, "snapshots"))
	}
	if sha == "" {
		return ModelInfo{}, false
	}
	snap := filepath.Join(repo, "snapshots", sha)
	mi := ModelInfo{ID: id, RequestedID: id, SHA: sha, FilesMetadata: true}
	_ = filepath.WalkDir(snap, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return nil
		}
		fi, err := os.Stat(p) // follows the symlink: a dangling one is skipped
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(snap, p)
		if err != nil {
			return nil
		}
		s := Sibling{Name: filepath.ToSlash(rel), Size: fi.Size()}
		if target, err := os.Readlink(p); err == nil {
			switch blob := filepath.Base(target); {
			case sha256RE.MatchString(blob):
				s.LFSSHA256 = blob
			case sha1RE.MatchString(blob):
				s.BlobID = blob
			}
		}
		mi.Siblings = append(mi.Siblings, s)
		return nil
	})
	if b, err := ReadCapped(filepath.Join(snap, "config.json"), "config.json"); err == nil {
		var cfg map[string]any
		if json.Unmarshal(b, &cfg) == nil {
			mi.Config = cfg
		}
	}
	return mi, true
}

func newestSnapshot(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	best, bestT := "", time.Time{}
	for _, e := range entries {
		if !e.IsDir() || validateCommit(e.Name()) != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if best == "" || fi.ModTime().After(bestT) {
			best, bestT = e.Name(), fi.ModTime()
		}
	}
	return best
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
