//go:build clients

package clienttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// checkSchemathesis runs schemathesis on every operation of the served
// OpenAPI document, with every check, bounded (20 examples an operation)
// and deterministic (its fixed seed; one worker, so that the stateful
// phase runs in one order). Any failure fails the build (issue 37): there
// is no list of known ones. testdata/schemathesis.toml says what the API
// documents beyond its schemas (the statuses that depend on the Hub).
func checkSchemathesis(t *testing.T, dir string, s site) {
	settings, err := os.ReadFile("testdata/schemathesis.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "schemathesis.toml")
	auth := fmt.Sprintf("[auth.openapi.bearer]\nbearer = %q\n[auth.openapi.worker]\nbearer = %q\n\n", adminToken, workerToken)
	if err := os.WriteFile(cfg, append([]byte(auth), settings...), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, args := filepath.Join(dir, "venv", "bin", "schemathesis"), []string{"--config-file", cfg, "run",
		s.base + "/api/v1/openapi.json", "--checks", "all", "--generation-deterministic", "--max-examples", "20",
		"--workers", "1", "--no-color", "--request-timeout", "20"}
	out, err := runOnce(t, 8*time.Minute, bin, args...)
	if err != nil && crashedItself(out) { // its own crash, not a finding: once more
		t.Logf("schemathesis crashed inside itself; running it once more:\n%s", tail(out, 3000))
		out, err = runOnce(t, 8*time.Minute, bin, args...)
	}
	if err != nil {
		t.Fatalf("schemathesis: %v\n%s", err, clip(out))
	}
	t.Log(tail(out, 3000))
}

// checkFeeds reads the Atom feed with feedparser and checks the JSON Feed
// against the JSON Feed 1.1 schema, unfiltered and under every filter.
func checkFeeds(t *testing.T, dir string, s site) {
	script, err := filepath.Abs("feeds.py")
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, 3*time.Minute, filepath.Join(dir, "venv", "bin", "python"), script, s.base, s.ids[0], s.ids[1])
	t.Log(tail(out, 3000))
}

// knownAxe are axe's findings reported, not failed (rule id to why):
// none now that every scrolling region takes the keyboard (issue 37 part 3).
var knownAxe = map[string]string{}

// checkNu runs the Nu Html Checker on every page kind (and their CSS).
func checkNu(t *testing.T, dir string, s site) {
	tmp := t.TempDir()
	var files []string
	for name, path := range s.pages() {
		want := 200
		if strings.Contains(name, "not-found") || strings.Contains(name, "unknown") {
			want = 404
		}
		f := filepath.Join(tmp, name+".html")
		if err := os.WriteFile(f, get(t, s.base+path, want), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// The pages' own stylesheet and icon, checked as CSS and SVG.
	page := string(get(t, s.base+"/", 200))
	for _, m := range staticRE.FindAllString(page, -1) {
		f := filepath.Join(tmp, filepath.Base(m))
		if err := os.WriteFile(f, get(t, s.base+m, 200), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	args := append([]string{"-cp", filepath.Join(dir, "vnu", "*"), "nu.validator.client.SimpleCommandLineValidator",
		"--format", "json", "--exit-zero-always", "--also-check-css", "--also-check-svg"}, files...)
	out := run(t, 3*time.Minute, "java", args...)
	var res struct {
		Messages []struct {
			Type, SubType, URL, Message, Extract string
			LastLine                             int
		}
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil {
		t.Fatalf("the Nu checker's answer: %v\n%s", err, tail(out, 3000))
	}
	errs := 0
	for _, m := range res.Messages {
		if m.Type == "error" || m.SubType == "fatal" {
			errs++
			t.Errorf("Nu: %s:%d: %s (%q)", filepath.Base(m.URL), m.LastLine, m.Message, m.Extract)
		} else {
			t.Logf("Nu %s: %s:%d: %s", m.SubType, filepath.Base(m.URL), m.LastLine, m.Message)
		}
	}
	t.Logf("Nu: %d files (pages, CSS, SVG), %d messages, %d errors", len(files), len(res.Messages), errs)
}

// staticRE finds the stylesheet and the icon a page links.
var staticRE = regexp.MustCompile(`/static/[A-Za-z0-9._-]+\.(?:css|svg)`)

// checkBadges renders SVG badges of every kind with rsvg and checks the
// shields.io endpoint JSON against its schema.
func checkBadges(t *testing.T, dir string, s site) {
	tmp := t.TempDir()
	n := 0
	for _, id := range []string{s.ids[0], s.ids[1], s.ids[2], s.ids[9], s.ids[49], "org/not-here"} {
		for _, q := range []string{"", "?style=flat-square", "?style=for-the-badge", "?target=cpu", "?mode=train", "?label=%3Cx%3E%22%26"} {
			f := filepath.Join(tmp, fmt.Sprintf("b%d.svg", n))
			n++
			if err := os.WriteFile(f, get(t, s.base+"/badge/"+id+".svg"+q, 200), 0o644); err != nil {
				t.Fatal(err)
			}
			if out := run(t, time.Minute, "rsvg-convert", "-o", filepath.Join(tmp, "b.png"), f); strings.TrimSpace(out) != "" {
				t.Errorf("rsvg on /badge/%s.svg%s: %s", id, q, out)
			}
		}
	}
	script, err := filepath.Abs("shields.py")
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, time.Minute, filepath.Join(dir, "venv", "bin", "python"), script, s.base, s.ids[0], s.ids[1], s.ids[9], "org/not-here")
	t.Logf("rsvg: %d badges rendered; %s", n, out)
}
