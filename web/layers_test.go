package web

import (
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestAudiencesImportOnlyTheFloorBelow holds web's packages to their
// floors: each audience (the API, the feeds, the badges, the work routes,
// the pages) imports none of the others nor web itself, only web/internal
// (and web/chart); and web/internal's packages import no audience.
// routes.go wires them, so nothing runs back up.
func TestAudiencesImportOnlyTheFloorBelow(t *testing.T) {
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
		for f, imports := range testenv.Imports(t, dir) {
			for _, rel := range imports {
				if rel != "web" && !strings.HasPrefix(rel, "web/") {
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
