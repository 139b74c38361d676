package probe

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// harnessFS holds the Python smoke-test harness (harness/harness.py, its
// sibling modules and the data files they read, such as oom_markers.json).
// The runner writes it to a private directory once and runs harness.py from
// there.
//
//go:embed harness/*.py harness/*.json
var harnessFS embed.FS

// harnessFiles lists the embedded harness files, sorted.
func harnessFiles() ([]string, error) {
	var names []string
	for _, pattern := range []string{"harness/*.py", "harness/*.json"} {
		m, err := fs.Glob(harnessFS, pattern)
		if err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		names = append(names, m...)
	}
	sort.Strings(names)
	return names, nil
}

// harnessEntry is the script the runner starts, relative to harness/.
const harnessEntry = "harness.py"

// extractHarness writes the embedded harness files into a new private
// directory (0700) under base and returns the path of the entry script.
func extractHarness(base string) (dir, script string, err error) {
	dir, err = os.MkdirTemp(base, "torchtpu-harness-")
	if err != nil {
		return "", "", fmt.Errorf("harness: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("harness: %w", err)
	}
	entries, err := harnessFiles()
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	for _, name := range entries {
		data, err := harnessFS.ReadFile(name)
		if err != nil {
			os.RemoveAll(dir)
			return "", "", fmt.Errorf("harness: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), data, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", "", fmt.Errorf("harness: %w", err)
		}
	}
	script = filepath.Join(dir, harnessEntry)
	if _, err := os.Stat(script); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("harness: embedded files lack %s: %w", harnessEntry, err)
	}
	return dir, script, nil
}

// harnessVersion is the harness's reported version with the digest of its
// code appended ("0.1.0+sha256:…"), so that any change to the harness code
// changes the runtime key and triggers retests, bumped version or not.
func (r *Runner) harnessVersion(reported string) string {
	switch {
	case reported == "":
		return r.digest
	case strings.Contains(reported, "+"):
		return reported
	}
	return reported + "+" + r.digest
}

// embeddedDigest is a short, stable digest of the embedded harness files:
// "sha256:" and 12 hex digits over their names and contents.
func embeddedDigest() string {
	names, _ := harnessFiles()
	h := sha256.New()
	for _, n := range names {
		data, _ := harnessFS.ReadFile(n)
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:12]
}

// fileDigest is embeddedDigest for a single script on disk.
func fileDigest(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])[:12], nil
}
