package harness

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
//go:embed requirements.txt
var requirements []byte

// RequirementsHash is the key of the cached environment: the first 16 hex
// digits of the sha256 of requirements.txt.
func RequirementsHash() string {
	sum := sha256.Sum256(requirements)
	return hex.EncodeToString(sum[:])[:16]
}

// DefaultPython returns the interpreter of the project's own cached
// environment (cacheHome/venv-<hash>/bin/python, as scripts/pyenv.sh builds
// it) when it is complete, else "python3" from PATH. cacheHome is
// config.Config.CacheHome.
func DefaultPython(cacheHome string) string {
	venv := filepath.Join(cacheHome, "venv-"+RequirementsHash())
	py := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(filepath.Join(venv, ".complete")); err == nil {
		return py
	}
	return "python3"
}
