package probe

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"os"
	"path/filepath"
)

// requirements is the pinned Python environment of the harness. The
// Makefile's scripts/pyenv.sh keys its cached virtualenv on the same hash,
// so the binary finds the environment `make` built without being told.
//
//go:embed harness/requirements.txt
var requirements []byte

// RequirementsHash is the key of the cached environment: the first 16 hex
// digits of the sha256 of harness/requirements.txt.
func RequirementsHash() string {
	sum := sha256.Sum256(requirements)
	return hex.EncodeToString(sum[:])[:16]
}

// DefaultPython returns the interpreter of the project's own cached
// environment ($SCANNER_CACHE_HOME, else $XDG_CACHE_HOME, else
// ~/.cache, then torchtpu-scanner/venv-<hash>/bin/python) when it exists,
// else "python3" from PATH. getenv is os.Getenv in production.
func DefaultPython(getenv func(string) string) string {
	base := getenv("SCANNER_CACHE_HOME")
	if base == "" {
		cache := getenv("XDG_CACHE_HOME")
		if cache == "" {
			home := getenv("HOME")
			if home == "" {
				home, _ = os.UserHomeDir()
			}
			cache = filepath.Join(home, ".cache")
		}
		base = filepath.Join(cache, "torchtpu-scanner")
	}
	venv := filepath.Join(base, "venv-"+RequirementsHash())
	py := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(filepath.Join(venv, ".complete")); err == nil {
		return py
	}
	return "python3"
}
