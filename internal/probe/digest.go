package probe

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

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

// fileDigest is harness.Digest for a single script on disk.
func fileDigest(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])[:12], nil
}
