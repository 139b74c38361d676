package testenv

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Module is the module's path, with the slash that precedes its packages.
const Module = "github.com/google-pytorch/torchtpu-scanner/"

// Imports reads the production Go files of the package in dir (a
// slash-separated path from the module root) and returns, per file, the
// module's own packages it imports, as paths from the module root
// ("internal/compat"). It fails the test when dir has no production Go
// file, so that a check over them cannot pass by reading nothing.
func Imports(t testing.TB, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(Root(t), filepath.FromSlash(dir), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
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
		name := dir + "/" + filepath.Base(f)
		out[name] = []string{}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rel, ok := strings.CutPrefix(p, Module); ok {
				out[name] = append(out[name], rel)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no Go files", dir)
	}
	return out
}
