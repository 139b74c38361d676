package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// standinRuntime copies the stand-in harness into its own folder with a
// standin_runtime.json that makes it report harness version harness and
// fail the models in fail, and returns the copy's path.
func standinRuntime(t *testing.T, harness string, fail ...string) string {
	t.Helper()
	src, err := os.ReadFile("testdata/standin_harness.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), harness)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	side, err := json.Marshal(map[string]any{
		"runtime": map[string]any{"torch": "2.15.0", "transformers": "5.23.0", "harness": harness},
		"fail":    fail,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "standin_harness.py")
	for name, body := range map[string][]byte{path: src, filepath.Join(dir, "standin_runtime.json"): side} {
		if err := os.WriteFile(name, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestRuntimeComparisonEndToEnd scans twice with a harness that reports a
// new version the second time: one model it failed now passes, one it
// passed now fails, one is tested for the first time. The comparison of
// the two runtimes says so on the page, in the API, in the feed and to
// `scanner check --since`.
func TestRuntimeComparisonEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 is needed for the stand-in harness")
	}
	h := hubtest.New(t, llamaRepos("org/fixed", "org/broken", "org/steady", "org/new")...)
	dir := t.TempDir()
	db, cache := filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub")
	t.Setenv("HOME", dir)
	scan := func(harness string, limit string) {
		t.Helper()
		args := []string{"scan", "--hub-endpoint", h.URL(), "--db", db, "--cache-dir", cache, "--target", "cpu",
			"--mode", "arch", "--python", "python3", "--harness", harness, "--limit", limit, "--log-format", "json"}
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("scan with %s exited %d\n%s", harness, code, stderr.String())
		}
	}
	// Runtime 1 fails org/fixed; runtime 2 fails org/broken and also tests
	// org/new (the fourth by downloads).
	scan(standinRuntime(t, "standin-1", "org/fixed"), "3")
	scan(standinRuntime(t, "standin-2", "org/broken"), "4")

	base := serveForTest(t, db, h.URL())
	key1, key2 := checkRuntimesAPI(t, base)
	checkCompareAPI(t, base, key1, key2)
	checkComparePage(t, base, key1, key2)
	checkRuntimeFeedItem(t, base)
	checkSince(t, base, key1)
}

// Of the four models' downloads (1000, 999, 998, 997), the fixed and the
// regressed each have about a quarter.
const e2eHeadline = " fixes 1 model (25.0 % of downloads), breaks 1 (25.0 % of downloads)"

// checkRuntimesAPI: two runtimes, newest first; it returns their keys.
func checkRuntimesAPI(t *testing.T, base string) (key1, key2 string) {
	t.Helper()
	var rts struct {
		Runtimes []struct {
			Key      string   `json:"key"`
			Harness  string   `json:"harness"`
			Tested   int      `json:"tested"`
			PassRate *float64 `json:"pass_rate"`
		} `json:"runtimes"`
	}
	getJSON(t, base+"/api/v1/runtimes", &rts)
	// The scanner appends a harness script's own hash to its version.
	if len(rts.Runtimes) != 2 || !strings.HasPrefix(rts.Runtimes[0].Harness, "standin-2+sha256:") ||
		!strings.HasPrefix(rts.Runtimes[1].Harness, "standin-1+sha256:") {
		t.Fatalf("runtimes: %+v", rts.Runtimes)
	}
	key1, key2 = rts.Runtimes[1].Key, rts.Runtimes[0].Key
	if want := "cpu~2.15.0~~5.23.0~standin-1_2Bsha256_3A"; !strings.HasPrefix(key1, want) {
		t.Errorf("key %s, want it to start %s", key1, want)
	}
	if r := rts.Runtimes[0]; r.Tested != 4 || r.PassRate == nil || *r.PassRate != 0.75 {
		t.Errorf("runtime 2: tested %d, pass rate %v; want 4 and 0.75", r.Tested, r.PassRate)
	}
	return key1, key2
}

type e2eItem struct {
	ID         string  `json:"id"`
	BaseStatus string  `json:"base_status"`
	HeadStatus string  `json:"head_status"`
	Signature  *string `json:"signature"`
}

// checkCompareAPI: the default comparison (cpu's two newest runtimes: there
// is no tpu here) lists each model where it belongs.
func checkCompareAPI(t *testing.T, base, key1, key2 string) {
	t.Helper()
	var cmp struct {
		Base         string    `json:"base"`
		Head         string    `json:"head"`
		Fixed        []e2eItem `json:"fixed"`
		Regressed    []e2eItem `json:"regressed"`
		New          []e2eItem `json:"new"`
		StillFailing []e2eItem `json:"still_failing"`
	}
	getJSON(t, base+"/api/v1/compare", &cmp)
	if cmp.Base != key1 || cmp.Head != key2 {
		t.Errorf("compared %s with %s, want %s with %s", cmp.Head, cmp.Base, key2, key1)
	}
	if cmp.StillFailing == nil || len(cmp.StillFailing) != 0 {
		t.Errorf("still failing: %v, want an empty list", cmp.StillFailing)
	}
	ids := func(items []e2eItem) string {
		var s []string
		for _, it := range items {
			s = append(s, it.ID+":"+it.BaseStatus+">"+it.HeadStatus)
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	for name, c := range map[string][2]string{
		"fixed":     {ids(cmp.Fixed), "org/fixed:fail>pass"},
		"regressed": {ids(cmp.Regressed), "org/broken:pass>fail"},
		"new":       {ids(cmp.New), "org/new:untested>pass"},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %s, want %s", name, c[0], c[1])
		}
	}
	if len(cmp.Regressed) == 1 && (cmp.Regressed[0].Signature == nil || *cmp.Regressed[0].Signature != "unsupported_op:aten::standin") {
		t.Errorf("regressed signature %v", cmp.Regressed[0].Signature)
	}
}

// checkComparePage: the page's lists and headline say the same.
func checkComparePage(t *testing.T, base, key1, key2 string) {
	t.Helper()
	page := get(t, base+"/compare?base="+key1+"&head="+key2, http.StatusOK)
	section := func(id string) string {
		i := strings.Index(page, `id="list-`+id+`"`)
		if i < 0 {
			t.Fatalf("no %s list on the page", id)
		}
		rest := page[i:]
		if j := strings.Index(rest[1:], `<section`); j >= 0 {
			rest = rest[:j+1]
		}
		return rest
	}
	if s := section("regressed"); !strings.Contains(s, `href="/models/org/broken"`) || strings.Contains(s, "org/fixed") {
		t.Errorf("regressed list on the page:\n%s", s)
	}
	if s := section("fixed"); !strings.Contains(s, `href="/models/org/fixed"`) || strings.Contains(s, "org/broken") {
		t.Errorf("fixed list on the page:\n%s", s)
	}
	if !strings.Contains(page, e2eHeadline) || !strings.Contains(page, "<strong>harness standin-2&#43;sha256:") {
		t.Errorf("no headline on the page")
	}
}

// checkRuntimeFeedItem: the feed announces the second runtime once.
func checkRuntimeFeedItem(t *testing.T, base string) {
	t.Helper()
	var feed struct {
		Items []struct {
			ID, Title   string
			ContentText string `json:"content_text"`
			Tags        []string
		} `json:"items"`
	}
	getJSON(t, base+"/feed.json", &feed)
	found := 0
	for _, it := range feed.Items {
		if len(it.Tags) == 0 || it.Tags[0] != "runtime" {
			continue
		}
		found++
		if !strings.HasPrefix(it.Title, "New runtime on cpu: harness standin-2+sha256:") || !strings.HasSuffix(it.Title, e2eHeadline) ||
			!strings.Contains(it.ContentText, "Regressed:\norg/broken: pass → fail") ||
			!strings.Contains(it.ContentText, "Fixed:\norg/fixed: fail → pass") {
			t.Errorf("runtime item: %+v", it)
		}
	}
	if found != 1 {
		t.Errorf("%d runtime items in the feed, want 1", found)
	}
}

// checkSince: a CI pinned to runtime 1.
func checkSince(t *testing.T, base, key1 string) {
	t.Helper()
	for _, c := range []struct {
		id   string
		code int
		line string
	}{
		{"org/broken", 1, "regressed since " + key1},
		{"org/fixed", 0, "org/fixed: pass on cpu"},
		{"org/steady", 0, "org/steady: pass on cpu"},
		{"org/new", 0, "no result on runtime " + key1},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"check", c.id, "--server", base, "--since", key1}, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.line) {
			t.Errorf("check %s --since: exit %d %q %s, want %d and %q", c.id, code, stdout.String(), stderr.String(), c.code, c.line)
		}
	}
}
