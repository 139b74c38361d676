package compat_test

import (
	"slices"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestImportsPointDown holds compat to the floor it sits on: the types
// every room shares (Model, Result, the serving cell) import only the
// packages below them, never a room that imports compat (internal/serving
// once: compat.Model carried serving.Cell while serving's probe imported
// compat).
func TestImportsPointDown(t *testing.T) {
	below := []string{"internal/readiness", "internal/termsafe"}
	seen := 0
	for f, imports := range testenv.Imports(t, "internal/compat") {
		for _, p := range imports {
			seen++
			if !slices.Contains(below, p) {
				t.Errorf("%s imports %s: compat imports only %v (move the shared type down into compat instead)", f, p, below)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no import of the module's own packages read: the test reads nothing")
	}
}
