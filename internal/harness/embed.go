package harness

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// files holds the Python smoke-test harness (harness.py, its sibling
// modules and the data files they read, such as oom_markers.json). The
// runner (internal/probe) writes them to a private directory once and runs
// harness.py from there.
//
//go:embed *.py *.json
var files embed.FS

// must is a table parsed at start-up: the embedded files are part of the
// build, and one that does not parse fails its package's tests and panics
// at start-up rather than decide wrong.
func must[T any](t T, err error) T {
	if err != nil {
		panic(err)
	}
	return t
}

// names lists the embedded harness files, sorted.
func names() ([]string, error) {
	var out []string
	for _, pattern := range []string{"*.py", "*.json"} {
		m, err := fs.Glob(files, pattern)
		if err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		out = append(out, m...)
	}
	sort.Strings(out)
	return out, nil
}

// Entry is the script the runner starts.
const Entry = "harness.py"

// Extract writes the embedded harness files into a new private directory
// (0700) under base and returns it with the path of the entry script.
func Extract(base string) (dir, script string, err error) {
	dir, err = os.MkdirTemp(base, "torchtpu-harness-")
	if err != nil {
		return "", "", fmt.Errorf("harness: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("harness: %w", err)
	}
	entries, err := names()
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	for _, name := range entries {
		data, err := files.ReadFile(name)
		if err != nil {
			os.RemoveAll(dir)
			return "", "", fmt.Errorf("harness: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", "", fmt.Errorf("harness: %w", err)
		}
	}
	script = filepath.Join(dir, Entry)
	if _, err := os.Stat(script); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("harness: embedded files lack %s: %w", Entry, err)
	}
	return dir, script, nil
}

// Digest is a short, stable digest of the embedded harness files:
// "sha256:" and 12 hex digits over their names and contents.
func Digest() string {
	entries, _ := names()
	h := sha256.New()
	for _, n := range entries {
		data, _ := files.ReadFile(n)
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:12]
}
