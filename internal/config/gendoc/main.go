// Command gendoc writes the flag reference of docs/configuration.md from
// the flags internal/config declares (config.ReferenceMarkdown), between
// the file's markers; the prose around them stays as written. Run it with
// `go generate ./internal/config`.
package main

import (
	"fmt"
	"os"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc docs/configuration.md")
		os.Exit(2)
	}
	path := os.Args[1]
	doc, err := os.ReadFile(path)
	if err == nil {
		var out string
		if out, err = config.SpliceReference(string(doc)); err == nil {
			err = os.WriteFile(path, []byte(out), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gendoc: %s: %v\n", path, err)
		os.Exit(1)
	}
}
