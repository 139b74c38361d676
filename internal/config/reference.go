package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Flag is one flag of a command, as Parse declares it: the reference of
// docs/configuration.md is made of these (ReferenceMarkdown), so the
// documented flags, defaults and help cannot drift from the real ones.
type Flag struct {
	Name    string
	Default string // as flag prints it; "" when none
	Usage   string // the help text, without its [VARIABLE] and "(default …)"
	Env     string // the variables that set it too, from the help's [VARIABLE]; "" when none
}

// CommandFlags are one command's flags, in name order.
type CommandFlags struct {
	Command Command
	Flags   []Flag
}

// EnvVar is a setting read from the environment only (a secret kept off
// the command line, or a folder scripts share).
type EnvVar struct {
	Name, Commands, Usage string
}

// EnvOnly are the variables that no flag sets.
var EnvOnly = []EnvVar{
	{"SCANNER_ADMIN_TOKEN", "serve", "the admin token, required by the write endpoints (POST /api/v1/scans) and GET /api/v1/webhooks; without it they are off"},
	{"SCANNER_WORKER_TOKEN", "serve, worker", "the work routes' token (/api/v1/work/…), distinct from the admin token; without it they are off"},
	{"SCANNER_CACHE_HOME", "all", "the scanner's own cache folder (default $XDG_CACHE_HOME/torchtpu-scanner, else ~/.cache/torchtpu-scanner): make builds the harness's Python environment there (venv-HASH), and the default --python is its interpreter"},
}

// referenceCommands are the commands the reference lists, in its order.
var referenceCommands = []Command{CmdServe, CmdScan, CmdProbe, CmdCheck, CmdWorker, CmdBackup}

// envInUsage is a help text's [VARIABLE] (or [VARIABLE, else …]).
var envInUsage = regexp.MustCompile(`\s*\[([A-Z][A-Z0-9_]*[^\]]*)\]`)

// defaultInUsage is a help text's "(default x)", for a flag whose value
// flag cannot print (a flag.Func).
var defaultInUsage = regexp.MustCompile(`\s*\(default ([^:)]*)\)$`)

// Reference lists each command's flags as Parse declares them, with the
// defaults before any environment variable.
func Reference() []CommandFlags {
	var out []CommandFlags
	for _, cmd := range referenceCommands {
		c := Defaults()
		fs := flag.NewFlagSet("scanner "+string(cmd), flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		target, mode := string(c.Target), string(c.Mode)
		b := &flagBinder{fs: fs, c: &c, target: &target, mode: &mode}
		if err := b.register(cmd); err != nil {
			panic(err) // referenceCommands are all known: TestReference
		}
		cf := CommandFlags{Command: cmd}
		fs.VisitAll(func(f *flag.Flag) {
			fl := Flag{Name: f.Name, Default: f.DefValue, Usage: f.Usage}
			if m := envInUsage.FindStringSubmatch(fl.Usage); m != nil {
				fl.Env = m[1]
				fl.Usage = strings.Replace(fl.Usage, m[0], "", 1)
			}
			if m := defaultInUsage.FindStringSubmatch(fl.Usage); m != nil && fl.Default == "" {
				fl.Default = m[1]
				fl.Usage = strings.TrimSuffix(fl.Usage, m[0])
			}
			cf.Flags = append(cf.Flags, fl)
		})
		out = append(out, cf)
	}
	return out
}

// The markers of the generated reference in docs/configuration.md; the
// prose around them is written by hand.
const (
	ReferenceBegin = "<!-- BEGIN GENERATED: go generate ./internal/config (from the flags of internal/config); do not edit by hand -->"
	ReferenceEnd   = "<!-- END GENERATED -->"
)

// ReferenceMarkdown is the flag reference: a table per command (flag,
// variable, default, help) and one of the variables no flag sets.
func ReferenceMarkdown() string {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	code := func(s string) string {
		if s == "" {
			return ""
		}
		return "`" + s + "`"
	}
	for _, cf := range Reference() {
		fmt.Fprintf(&b, "\n### scanner %s\n\n", cf.Command)
		if len(cf.Flags) == 0 {
			b.WriteString("No flags.\n")
			continue
		}
		b.WriteString("| flag | variable | default | |\n|---|---|---|---|\n")
		for _, f := range cf.Flags {
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			env := ""
			for i, v := range strings.Split(f.Env, ", else ") {
				if i > 0 {
					env += ", else "
				}
				env += code(v)
			}
			fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s |\n", dash, f.Name, env, cell(code(f.Default)), cell(f.Usage))
		}
	}
	b.WriteString("\n### Variables no flag sets\n\n| variable | commands | |\n|---|---|---|\n")
	for _, v := range EnvOnly {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, v.Commands, cell(v.Usage))
	}
	return b.String()
}

// SpliceReference returns doc with the text between its markers replaced
// by ReferenceMarkdown.
func SpliceReference(doc string) (string, error) {
	i := strings.Index(doc, ReferenceBegin)
	j := strings.Index(doc, ReferenceEnd)
	if i < 0 || j < i {
		return "", errors.New("no " + ReferenceBegin + " … " + ReferenceEnd + " block")
	}
	return doc[:i+len(ReferenceBegin)] + "\n" + ReferenceMarkdown() + "\n" + doc[j:], nil
}
