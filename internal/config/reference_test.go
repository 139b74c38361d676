package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

const regenerate = "run go generate ./internal/config and commit docs/configuration.md"

// configurationDoc is docs/configuration.md and its generated block.
func configurationDoc(t *testing.T) (doc, block string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc = string(b)
	i, j := strings.Index(doc, ReferenceBegin), strings.Index(doc, ReferenceEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/configuration.md has no generated block (%s … %s)", ReferenceBegin, ReferenceEnd)
	}
	return doc, doc[i:j]
}

// TestConfigurationDocIsCurrent: the reference in docs/configuration.md is
// what the flags make of it now, and the prose around it is kept.
func TestConfigurationDocIsCurrent(t *testing.T) {
	doc, _ := configurationDoc(t)
	want, err := SpliceReference(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want == doc {
		return
	}
	got, exp := strings.Split(doc, "\n"), strings.Split(want, "\n")
	for i := range min(len(got), len(exp)) {
		if got[i] != exp[i] {
			t.Fatalf("docs/configuration.md line %d is out of date (%s):\n have: %s\n want: %s", i+1, regenerate, got[i], exp[i])
		}
	}
	t.Fatalf("docs/configuration.md has %d lines, the flags make %d (%s)", len(got), len(exp), regenerate)
}

// TestConfigurationDocHasEveryFlag: every flag `scanner COMMAND -h` prints
// (read from flag's own usage output, not from Reference) has its row in
// its command's section, with the default -h prints.
func TestConfigurationDocHasEveryFlag(t *testing.T) {
	_, block := configurationDoc(t)
	row := regexp.MustCompile("(?m)^  -([a-z0-9-]+)(?: [a-z]+)?\n")
	def := regexp.MustCompile(`\(default "?([^")]*)"?\)\s*$`)
	n := 0
	for _, cmd := range []Command{CmdServe, CmdScan, CmdProbe, CmdCheck, CmdWorker, CmdBackup} {
		var out bytes.Buffer
		if _, _, err := Parse(cmd, []string{"-h"}, func(string) (string, bool) { return "", false }, &out); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s -h: %v", cmd, err)
		}
		section := block[strings.Index(block, "### scanner "+string(cmd)+"\n"):]
		if k := strings.Index(section[4:], "\n### "); k >= 0 {
			section = section[:k+4]
		}
		usage := out.String()
		for _, m := range row.FindAllStringSubmatchIndex(usage, -1) {
			name := usage[m[2]:m[3]]
			dash := "--"
			if len(name) == 1 {
				dash = "-"
			}
			line := ""
			for _, l := range strings.Split(section, "\n") {
				if strings.HasPrefix(l, "| `"+dash+name+"` |") {
					line = l
				}
			}
			n++
			if line == "" {
				t.Errorf("scanner %s %s%s is not in docs/configuration.md (%s)", cmd, dash, name, regenerate)
				continue
			}
			help := usage[m[1]:]
			if k := strings.Index(help, "\n  -"); k >= 0 {
				help = help[:k]
			}
			if d := def.FindStringSubmatch(help); d != nil && !strings.Contains(line, "`"+d[1]+"`") {
				t.Errorf("scanner %s %s%s: -h says default %q, docs/configuration.md: %s", cmd, dash, name, d[1], line)
			}
		}
	}
	if n < 60 {
		t.Errorf("only %d flags read from the commands' usage", n)
	}
}

// TestConfigurationDocNamesEveryVariable: every environment variable the
// configuration reads is in the reference (as a flag's variable, or one no
// flag sets).
func TestConfigurationDocNamesEveryVariable(t *testing.T) {
	_, block := configurationDoc(t)
	var read []string
	env := func(k string) (string, bool) {
		if !slices.Contains(read, k) {
			read = append(read, k)
		}
		return "", false
	}
	var c Config
	if err := c.fromEnv(env); err != nil {
		t.Fatal(err)
	}
	CacheHome(env)
	defaultCacheDir(env)
	if len(read) < 20 {
		t.Fatalf("only %d variables read: %v", len(read), read)
	}
	for _, k := range read {
		if k != "HOME" && !strings.Contains(block, k) {
			t.Errorf("%s is read but not in docs/configuration.md's reference (a flag's [%s], or EnvOnly)", k, k)
		}
	}
}

// TestConfigurationProseNamesRealFlags: every --flag the hand-written
// configuration page names is a flag of some command.
func TestConfigurationProseNamesRealFlags(t *testing.T) {
	doc, _ := configurationDoc(t)
	known := map[string]bool{}
	for _, cf := range Reference() {
		for _, f := range cf.Flags {
			known[f.Name] = true
		}
	}
	n := 0
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)").FindAllStringSubmatch(doc, -1) {
		n++
		if !known[m[1]] {
			t.Errorf("docs/configuration.md names --%s, which no command has", m[1])
		}
	}
	if n < 60 {
		t.Errorf("only %d flags named", n)
	}
}

// TestSpliceReference: the block between the markers is replaced, the
// prose on both sides kept; a page without the markers is refused.
func TestSpliceReference(t *testing.T) {
	doc := "intro\n" + ReferenceBegin + "\nstale\n" + ReferenceEnd + "\noutro\n"
	got, err := SpliceReference(doc)
	if err != nil || !strings.HasPrefix(got, "intro\n"+ReferenceBegin+"\n") || !strings.HasSuffix(got, ReferenceEnd+"\noutro\n") ||
		strings.Contains(got, "stale") || !strings.Contains(got, "| `--addr` | `SCANNER_ADDR` | `:8080` |") {
		t.Errorf("spliced: %q, %v", got, err)
	}
	if again, _ := SpliceReference(got); again != got {
		t.Error("splicing twice changes the page")
	}
	if _, err := SpliceReference("no markers"); err == nil {
		t.Error("a page without markers is accepted")
	}
}
