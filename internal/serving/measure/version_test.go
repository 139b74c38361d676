package measure

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Version reads what the interpreter says, passing it the package's name;
// an interpreter that fails or says nothing like a version is an error.
func TestVersion(t *testing.T) {
	dir := t.TempDir()
	py := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	// the stand-in answers with the package it was asked about (its last argument)
	good := py("good", `for a; do last=$a; done; [ "$last" = vllm-torchtpu ] && echo 0.29.0`)
	if v, err := Version(ctx, good, "vllm-torchtpu"); err != nil || v != "0.29.0" {
		t.Errorf("Version = %q, %v", v, err)
	}
	for name, body := range map[string]string{"missing": "echo 'PackageNotFoundError' >&2; exit 1", "empty": "true", "prose": "echo not a version"} {
		if v, err := Version(ctx, py(name, body), "vllm-torchtpu"); err == nil {
			t.Errorf("%s: %q, want an error", name, v)
		}
	}
	if _, err := Version(ctx, filepath.Join(dir, "none"), "vllm-torchtpu"); err == nil {
		t.Error("no interpreter: no error")
	}
}
