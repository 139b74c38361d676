package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Root is the module's root folder (the one holding go.mod), found from
// the test's working directory upward.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

// Sources reads the production files under the module root whose names
// end in one of exts (".go", ".py", ".md", ".html"; never a _test.go
// file, nor anything under testdata/, tests/ or a hidden folder), keyed by
// their slash-separated path from the root. It fails the test when it
// reads none, so that a check over them cannot pass by reading nothing.
func Sources(t testing.TB, exts ...string) map[string]string {
	t.Helper()
	root := Root(t)
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "tests" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, "_test.go") || !slices.ContainsFunc(exts, func(e string) bool { return strings.HasSuffix(name, e) }) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no %v source under %s", exts, root)
	}
	return out
}

// Copies is the check of the tests that forbid copies of a rule: it lists
// the Sources with one of exts whose text holds one of words, as
// "path: word", leaving out owners (paths from the root, slash-separated):
// the files that keep the rule.
func Copies(t testing.TB, exts, owners []string, words ...string) []string {
	t.Helper()
	var out []string
	for path, text := range Sources(t, exts...) {
		if slices.Contains(owners, path) {
			continue
		}
		for _, w := range words {
			if strings.Contains(text, w) {
				out = append(out, path+": "+w)
			}
		}
	}
	slices.Sort(out)
	return out
}
