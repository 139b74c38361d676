package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const hookSecret = "abcdefghijklmnopqrstuvwxyz"

func TestParseWatch(t *testing.T) {
	hooks := writeFile(t, "hooks.json", `[{"url": "https://hooks.example.org/T/B/X", "secret": "`+hookSecret+`", "filters": {"kind": ["regression"]}}]`)
	known := writeFile(t, "known.json", `{"unsupported_op:*": {"title": "Missing ops", "url": "https://github.com/org/repo/issues/1", "state": "open"}}`)
	env := func(m map[string]string) Env {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}

	c, _, err := Parse(CmdServe, []string{"--webhooks", hooks, "--known-issues", known, "--request-rate", "2", "--request-queue", "7"},
		env(map[string]string{"HOME": "/h"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Webhooks) != 1 || c.Webhooks[0].Filters.Kinds[0] != "regression" || c.KnownIssues.Match("unsupported_op:aten::x") == nil ||
		c.RequestRate != 2 || c.RequestQueue != 7 {
		t.Errorf("config %+v", c)
	}
	// From the environment, and the defaults.
	c, _, err = Parse(CmdServe, nil, env(map[string]string{"HOME": "/h", "SCANNER_WEBHOOKS": hooks, "SCANNER_KNOWN_ISSUES": known}), io.Discard)
	if err != nil || len(c.Webhooks) != 1 || c.KnownIssues.Len() != 1 || c.RequestRate != DefaultRequestRate || c.RequestQueue != DefaultRequestQueue {
		t.Errorf("from the environment: %+v %v", c, err)
	}
	c, _, err = Parse(CmdServe, nil, env(map[string]string{"HOME": "/h"}), io.Discard)
	if err != nil || c.Webhooks != nil || c.KnownIssues.Len() != 0 {
		t.Errorf("without files: %v", err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string // parts of the error, all
	}{
		{"a bad webhook", []string{"--webhooks", writeFile(t, "h.json", `[{"url": "https://a.example/1", "secret": "`+hookSecret+`"}, {"url": "ftp://b.example/x", "secret": "`+hookSecret+`"}]`)},
			[]string{"--webhooks ", "h.json: webhook #2 (b.example): url: scheme \"ftp\" refused"}},
		{"a webhook without a secret", []string{"--webhooks", writeFile(t, "h.json", `[{"url": "https://a.example/1"}]`)},
			[]string{"h.json: webhook #1 (a.example): secret is missing"}},
		{"a webhooks file that is not JSON", []string{"--webhooks", writeFile(t, "h.json", `url: x`)}, []string{"h.json: not a JSON list"}},
		{"a missing webhooks file", []string{"--webhooks", "/nonexistent/hooks.json"}, []string{"--webhooks /nonexistent/hooks.json: open"}},
		{"a bad known issue", []string{"--known-issues", writeFile(t, "k.json", `{"oom": {"title": "t", "url": "javascript:x", "state": "open"}}`)},
			[]string{"--known-issues ", "k.json: entry \"oom\": url"}},
		{"both bad", []string{"--known-issues", writeFile(t, "k.json", `[]`), "--webhooks", writeFile(t, "h.json", `[]`)},
			[]string{"k.json: not a JSON object", "h.json: no webhook"}},
		{"a huge file", []string{"--known-issues", writeFile(t, "k.json", strings.Repeat(" ", 2<<20))}, []string{"k.json: over the"}},
		{"a negative rate", []string{"--request-rate", "-1"}, []string{"--request-rate -1"}},
		{"a negative queue", []string{"--request-queue", "-1"}, []string{"--request-queue -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse(CmdServe, tc.args, env(map[string]string{"HOME": "/h"}), io.Discard)
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), hookSecret) {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
	// scan takes none of these flags.
	if _, _, err := Parse(CmdScan, []string{"--webhooks", hooks}, env(map[string]string{"HOME": "/h"}), io.Discard); err == nil {
		t.Error("scan accepted --webhooks")
	}
}
