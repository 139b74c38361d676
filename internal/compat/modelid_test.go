package compat

import (
	"strings"
	"testing"
)

// The expectations were checked one by one against huggingface_hub's
// validate_repo_id (huggingface_hub/utils/_validators.py, the regex
// `(\b[\w\-.]{1,96}\b/)?\b[\w\-.]{1,96}\b` with re.ASCII, then the "--",
// ".." and ".git" rules), which mirrors the Hub's own.
func TestValidateModelID(t *testing.T) {
	a96, b96 := strings.Repeat("a", 96), strings.Repeat("b", 96)
	tests := []struct {
		id    string
		valid bool
		why   string
	}{
		{"gpt2", true, "legacy one-part id"},
		{"bert-base-uncased", true, "legacy one-part id"},
		{"openai-community/gpt2", true, "namespace/name"},
		{"Qwen/Qwen3-0.6B", true, "mixed case, digits, '-' and '.'"},
		{"ORG/NAME", true, "case is not judged"},
		{"sentence-transformers/all-MiniLM-L6-v2", true, ""},
		{"a/b", true, "one character parts"},
		{"1/2", true, "digits only"},
		{"_x/y_", true, "'_' may start and end a part"},
		{"_", true, "'_' alone"},
		{"a.b/c.d", true, "'.' inside a part"},
		{"a-.b", true, "'-' and '.' next to each other inside"},
		{"models/gpt2", true, "a namespace that looks like a repo type"},
		{"a.git/b", true, ".git ends the namespace, not the id"},
		{"a/b.GIT", true, "the .git rule is case-sensitive"},
		{a96, true, "96 characters"},
		{a96 + "/" + b96, true, "96 + 1 + 96 characters"},

		{"", false, "empty"},
		{strings.Repeat("a", 97), false, "97 characters"},
		{"a/" + strings.Repeat("b", 97), false, "name of 97"},
		{strings.Repeat("a", 97) + "/b", false, "namespace of 97"},
		{"/", false, "two empty parts"},
		{"a/", false, "empty name"},
		{"/b", false, "empty namespace"},
		{"a//b", false, "empty middle part"},
		{"a/b/c", false, "three parts"},
		{"datasets/foo/bar", false, "a repo type prefix"},
		{"..", false, "dot-dot"},
		{"../x", false, "dot-dot segment"},
		{"a/..", false, "dot-dot segment"},
		{"./a", false, "dot segment"},
		{"a/.", false, "dot segment"},
		{".", false, "dot"},
		{"a/b..c", false, ".. inside"},
		{"a--b/c", false, "-- inside (the cache folder separator)"},
		{"a/b--c", false, "-- inside"},
		{"-", false, "'-' alone"},
		{"-a/b", false, "leading '-'"},
		{"a-/b", false, "trailing '-' of the namespace"},
		{"a/-b", false, "leading '-' of the name"},
		{"a/b-", false, "trailing '-'"},
		{".a", false, "leading '.'"},
		{"a.", false, "trailing '.'"},
		{"a/.b", false, "hidden name"},
		{"a/b.", false, "trailing '.'"},
		{"a.git", false, ".git at the end"},
		{"a/b.git", false, ".git at the end"},
		{"a b", false, "space"},
		{" a", false, "leading space"},
		{"a ", false, "trailing space"},
		{"a\tb", false, "tab"},
		{"a/b\n", false, "newline"},
		{"a/b?c", false, "query character"},
		{"a/b#c", false, "fragment character"},
		{"a\\b", false, "backslash"},
		{"a:b", false, "colon"},
		{"%2e%2e", false, "percent-encoded"},
		{"a%2Fb", false, "percent-encoded slash"},
		{"é/b", false, "non-ASCII letter"},
		{"a/é", false, "non-ASCII letter"},
		{"日本/語", false, "non-ASCII"},
		// Each end of the three ranges of ASCII letters and digits (\w with
		// re.ASCII), and the byte just outside it.
		{"az/AZ09", true, "the first and last letter and digit"},
		{"z", true, "'z', the last lower-case letter"},
		{"Z", true, "'Z', the last upper-case letter"},
		{"9", true, "'9', the last digit"},
		{"a`b", false, "'`', the byte before 'a'"},
		{"a{b", false, "'{', the byte after 'z'"},
		{"a@b", false, "'@', the byte before 'A'"},
		{"a[b", false, "'[', the byte after 'Z'"},
		{"a:b/c", false, "':', the byte after '9'"},
	}
	for _, tt := range tests {
		err := ValidateModelID(tt.id)
		if (err == nil) != tt.valid {
			t.Errorf("ValidateModelID(%q) = %v, want valid=%v (%s)", tt.id, err, tt.valid, tt.why)
		}
		if err != nil && !strings.Contains(err.Error(), "model id") {
			t.Errorf("ValidateModelID(%q): %q does not say what was refused", tt.id, err)
		}
	}
}

func TestValidateModelNamespace(t *testing.T) {
	tests := []struct {
		ns    string
		valid bool
	}{
		{"google", true},
		{"openai-community", true},
		{"Qwen", true},
		{"_", true},
		{"a.git", true}, // ".git" only ends a whole id
		{strings.Repeat("a", 96), true},
		{"", false},
		{strings.Repeat("a", 97), false},
		{"a/b", false},
		{"a/", false},
		{"-a", false},
		{"a.", false},
		{"a--b", false},
		{"a..b", false},
		{"..", false},
		{"a b", false},
		{"é", false},
	}
	for _, tt := range tests {
		err := ValidateModelNamespace(tt.ns)
		if (err == nil) != tt.valid {
			t.Errorf("ValidateModelNamespace(%q) = %v, want valid=%v", tt.ns, err, tt.valid)
		}
		// The namespace rule is the id rule applied to "ns/name".
		if idErr := ValidateModelID(tt.ns + "/name"); (idErr == nil) != tt.valid {
			t.Errorf("%q: namespace valid=%v but id %q valid=%v", tt.ns, tt.valid, tt.ns+"/name", idErr == nil)
		}
	}
}

// FuzzValidateModelID: whatever the rule accepts is a path-safe id of at
// most two parts, and its namespace passes ValidateModelNamespace.
func FuzzValidateModelID(f *testing.F) {
	for _, s := range []string{"gpt2", "org/name", "../x", "a--b", "a/b/c", "a.git", "a.git/b", "-x", "x/.", "日本/語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateModelID(id) != nil {
			return
		}
		if strings.Contains(id, "..") || strings.Contains(id, "--") || strings.Count(id, "/") > 1 ||
			len(id) > 2*maxModelIDPart+1 || strings.ContainsAny(id, " \\\x00%") || strings.HasSuffix(id, ".git") {
			t.Fatalf("accepted %q", id)
		}
		if ns, _, ok := strings.Cut(id, "/"); ok && ValidateModelNamespace(ns) != nil {
			t.Fatalf("accepted %q, but not its namespace %q", id, ns)
		}
	})
}
