package web

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

// TestAudiencesImportOnlyTheFloorBelow holds web's packages to their
// floors: each audience (the API, the feeds, the badges, the work routes,
// the pages) imports none of the others nor web itself, only web/internal
// (and web/chart); and web/internal's packages import no audience.
// routes.go wires them, so nothing runs back up.
func TestAudiencesImportOnlyTheFloorBelow(t *testing.T) {
	const module = "github.com/google-pytorch/torchtpu-scanner/"
	internal := []string{"web/internal/cached", "web/internal/data", "web/internal/httpx", "web/internal/show"}
	below := map[string][]string{ // a package of web and the web packages it may import
		"web/api":             internal,
		"web/feeds":           internal,
		"web/badge":           internal,
		"web/work":            internal,
		"web/pages":           internal,
		"web/internal/data":   {"web/internal/cached", "web/internal/httpx", "web/internal/show"},
		"web/internal/httpx":  nil,
		"web/internal/show":   nil,
		"web/internal/cached": nil,
	}
	seen := 0
	for dir, may := range below {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s: no Go files", dir)
		}
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
				rel, ok := strings.CutPrefix(p, module)
				if !ok || (rel != "web" && !strings.HasPrefix(rel, "web/")) {
					continue
				}
				seen++
				if rel == "web/chart" || slices.Contains(may, rel) {
					continue
				}
				t.Errorf("%s imports %s: %s imports only %v of web (move what they share down into web/internal)", f, rel, dir, may)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no import of web's own packages read: the test reads nothing")
	}
}
