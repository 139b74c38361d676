// Package wheel fetches the pinned vllm-torchtpu release's wheel and reads
// vLLM's model registry out of it (serving.FromTables decides what it
// means). It is the one room of internal/serving that runs programs: pip
// to fetch, the embedded harness/vllm/registry.py to read.
package wheel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
)

// The wheel asked for: vllm-torchtpu is published for CPython 3.12 on
// manylinux x86_64 only, whatever the host running the scanner is.
const (
	wheelPython   = "3.12"
	wheelPlatform = "manylinux_2_28_x86_64"
)

// Dir is where the pinned wheel is kept: cacheHome (config.CacheHome,
// ~/.cache/torchtpu-scanner) / vllm-torchtpu / version.
func Dir(cacheHome, version string) string {
	return filepath.Join(cacheHome, serving.Package, version)
}

// wheelGlob matches the release's wheel of vLLM in its folder.
func wheelGlob(version string) string {
	return strings.ReplaceAll(serving.Package, "-", "_") + "-" + version + "-*.whl"
}

// Wheel returns the path of the pinned release's wheel (version) under
// cacheHome, downloading it first when it is not there: python -m pip
// download, so that pip's own configuration (index URL, proxy, certificates)
// applies, with no dependencies and for the platform the release is built
// for. The download goes to a temporary folder beside the cache and is
// moved in whole, so a stopped download leaves nothing half-written.
func Wheel(ctx context.Context, python, cacheHome, version string) (string, error) {
	dir := Dir(cacheHome, version)
	if w, ok := cachedWheel(dir, version); ok {
		return w, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("wheel: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+version+"-")
	if err != nil {
		return "", fmt.Errorf("wheel: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
		"--python-version", wheelPython, "--platform", wheelPlatform, "--disable-pip-version-check",
		"--quiet", "-d", tmp, serving.Package+"=="+version)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("wheel: pip download %s==%s: %w: %s", serving.Package, version, err, lastLine(stderr.String()))
	}
	if _, ok := cachedWheel(tmp, version); !ok {
		return "", fmt.Errorf("wheel: pip download %s==%s left no %s", serving.Package, version, wheelGlob(version))
	}
	if err := os.Rename(tmp, dir); err != nil {
		if w, ok := cachedWheel(dir, version); ok { // another process got there first
			return w, nil
		}
		return "", fmt.Errorf("wheel: %w", err)
	}
	w, _ := cachedWheel(dir, version)
	return w, nil
}

// cachedWheel finds the release's wheel in dir.
func cachedWheel(dir, version string) (string, bool) {
	m, _ := filepath.Glob(filepath.Join(dir, wheelGlob(version)))
	if len(m) == 0 {
		return "", false
	}
	return m[0], true
}

// lastLine is the last non-empty line of s, for error messages.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// ReadWheel reads the registry out of a vllm-torchtpu wheel of version with
// the interpreter python (any Python 3: nothing of vllm is imported), by
// the embedded harness/vllm/registry.py.
func ReadWheel(ctx context.Context, python, wheel, version string) (serving.Registry, error) {
	script, err := os.CreateTemp("", "vllm-registry-*.py")
	if err != nil {
		return serving.Registry{}, fmt.Errorf("wheel: %w", err)
	}
	defer os.Remove(script.Name())
	if _, err := script.Write(harness.VLLMRegistryScript); err != nil {
		script.Close()
		return serving.Registry{}, fmt.Errorf("wheel: %w", err)
	}
	if err := script.Close(); err != nil {
		return serving.Registry{}, fmt.Errorf("wheel: %w", err)
	}
	cmd := exec.CommandContext(ctx, python, "-I", script.Name(), wheel)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return serving.Registry{}, fmt.Errorf("wheel: reading %s: %w: %s", filepath.Base(wheel), err, lastLine(stderr.String()))
	}
	return parseTables(out, version)
}

// parseTables reads registry.py's answer.
func parseTables(out []byte, version string) (serving.Registry, error) {
	var doc struct {
		VLLMVersion *string               `json:"vllm_version"`
		Tables      map[string][][]string `json:"tables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return serving.Registry{}, fmt.Errorf("wheel: registry.py's answer: %w", err)
	}
	tables := make(map[string][]serving.Entry, len(doc.Tables))
	for name, rows := range doc.Tables {
		for _, row := range rows {
			if len(row) != 3 || row[0] == "" {
				return serving.Registry{}, errors.New("wheel: registry.py's answer: a row is not [architecture, module, class]")
			}
			tables[name] = append(tables[name], serving.Entry{Arch: row[0], Module: row[1], Class: row[2]})
		}
		if rows != nil && tables[name] == nil {
			tables[name] = []serving.Entry{}
		}
	}
	vv := ""
	if doc.VLLMVersion != nil {
		vv = *doc.VLLMVersion
	}
	return serving.FromTables(version, vv, tables)
}

// Load is the pinned release's registry, its wheel fetched when missing
// (Wheel) and read (ReadWheel).
func Load(ctx context.Context, python, cacheHome string) (serving.Registry, error) {
	w, err := Wheel(ctx, python, cacheHome, serving.Version)
	if err != nil {
		return serving.Registry{}, err
	}
	return ReadWheel(ctx, python, w, serving.Version)
}
