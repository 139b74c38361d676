package compat_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportsPointDown holds compat to the floor it sits on: the types
// every room shares (Model, Result, the serving cell) import only the
// packages below them, never a room that imports compat (internal/serving
// once: compat.Model carried serving.Cell while serving's probe imported
// compat).
func TestImportsPointDown(t *testing.T) {
	const module = "github.com/google-pytorch/torchtpu-scanner/"
	below := []string{module + "internal/readiness", module + "internal/termsafe"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
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
