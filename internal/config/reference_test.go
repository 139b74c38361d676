package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// otherPrograms are the flags the docs name, alone, of programs other
// than the scanner and its harness, with the program; a code span that
// starts with another program's name (otherCommands) is that program's.
var (
	otherPrograms = map[string]string{
		"test-cpu": "gremlins", "dry-run": "gremlins", "checks": "schemathesis", "build-arg": "docker build",
		"model-impl": "vllm", "enable-expert-parallel": "vllm",
	}
	otherCommands = []string{"gcloud", "vllm", "docker", "gremlins", "schemathesis", "kubectl", "go", "harness_kernels.py"}
)

// TestDocsNameRealFlags: every --flag in a code span of README.md and
// docs/*.md is a flag of a scanner command, of the harness (its argparse
// arguments) or of a program named in otherPrograms: a flag renamed or
// removed fails here until the docs follow.
func TestDocsNameRealFlags(t *testing.T) {
	known := map[string]bool{}
	for _, cf := range Reference() {
		for _, f := range cf.Flags {
			known[f.Name] = true
		}
	}
	arg := regexp.MustCompile(`add_argument\("--([a-z0-9-]+)"`)
	span := regexp.MustCompile("`([^`\n]+)`")
	name := regexp.MustCompile(`(?:^|[\s(\[])--([a-z0-9][a-z0-9-]*)`)
	n := 0
	for path, text := range testenv.Sources(t, ".py", ".md") {
		if strings.HasPrefix(path, "internal/harness/") && strings.HasSuffix(path, ".py") {
			for _, m := range arg.FindAllStringSubmatch(text, -1) {
				known[m[1]] = true
			}
		}
	}
	for path, text := range testenv.Sources(t, ".md") {
		if path != "README.md" && !strings.HasPrefix(path, "docs/") {
			continue
		}
		for _, s := range span.FindAllStringSubmatch(text, -1) {
			if f := strings.Fields(s[1]); len(f) > 0 && slices.Contains(otherCommands, f[0]) {
				continue
			}
			for _, m := range name.FindAllStringSubmatch(s[1], -1) {
				n++
				if !known[m[1]] && otherPrograms[m[1]] == "" {
					t.Errorf("%s names --%s (in `%s`), which no scanner command, the harness or a program of otherPrograms has", path, m[1], s[1])
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d flags named in the docs", n)
	}
}

// TestDocsDurationDefaultsAreTheFlags: where the docs state a duration
// flag's default in prose ("`--lease-ttl` (2 minutes)"), it is the flag's.
func TestDocsDurationDefaultsAreTheFlags(t *testing.T) {
	defaults := map[string]time.Duration{}
	for _, cf := range Reference() {
		for _, f := range cf.Flags {
			if d, err := time.ParseDuration(f.Default); err == nil {
				defaults[f.Name] = d
			}
		}
	}
	units := map[string]time.Duration{"s": time.Second, "second": time.Second, "seconds": time.Second,
		"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour, "h": time.Hour}
	stated := regexp.MustCompile("`--([a-z0-9-]+)` \\(([0-9.]+) ?([a-z]+)\\)")
	n := 0
	for path, text := range testenv.Sources(t, ".md") {
		for _, m := range stated.FindAllStringSubmatch(text, -1) {
			want, ok := defaults[m[1]]
			unit, known := units[m[3]]
			if !ok || !known {
				continue
			}
			n++
			v, _ := strconv.ParseFloat(m[2], 64)
			if got := time.Duration(v * float64(unit)); got != want {
				t.Errorf("%s: %q, the flag's default is %v", path, m[0], want)
			}
		}
	}
	if n < 3 {
		t.Errorf("only %d durations stated: docs/fleet.md and docs/operating.md stated three", n)
	}
}
