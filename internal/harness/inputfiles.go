// Package harness holds, for Go code, the data tables that the Python
// harness in this folder reads too, so that the two sides cannot disagree.
// The harness itself (harness.py and its modules, with every *.json here)
// is embedded and run by internal/probe.
//
// input_files.json is the table of a model's tokenizer and processor files:
// which a full-mode probe may use to build real inputs, and the most bytes
// each may have. internal/hub downloads them by it (hub.InputFiles,
// hub.FileCap) and harness_real_inputs.py reads them by it.
package harness

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed input_files.json
var inputFilesJSON []byte

// InputKind is one kind of input file: the base names it matches, exactly
// or by suffix, and its cap.
type InputKind struct {
	Kind     string   `json:"kind"`
	Names    []string `json:"names"`
	Suffixes []string `json:"suffixes"`
	MaxBytes int64    `json:"max_bytes"`
}

// InputExample is a worked case of the table: InputFileCap(Name) = MaxBytes.
type InputExample struct {
	Name     string `json:"name"`
	MaxBytes int64  `json:"max_bytes"`
}

// InputTable is input_files.json.
type InputTable struct {
	Kinds    []InputKind    `json:"kinds"`
	Examples []InputExample `json:"examples"`
}

// ParseInputTable reads an input_files.json; every kind must match
// something and have a positive cap.
func ParseInputTable(data []byte) (InputTable, error) {
	var t InputTable
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("input files table: %w", err)
	}
	if len(t.Kinds) == 0 {
		return t, fmt.Errorf("input files table: no kinds")
	}
	for _, k := range t.Kinds {
		if k.MaxBytes <= 0 || len(k.Names)+len(k.Suffixes) == 0 {
			return t, fmt.Errorf("input files table: kind %q matches nothing or has no cap", k.Kind)
		}
	}
	return t, nil
}

// Inputs is the embedded table; a table that does not parse panics at
// start-up (and fails the package's tests) rather than fetch wrong.
var Inputs = must(ParseInputTable(inputFilesJSON))

// Cap returns the cap of the repo file name when it is an input file, and
// whether it is one. Only top-level files count, matched by their exact
// (case-sensitive) name, as transformers looks for them.
func (t InputTable) Cap(name string) (int64, bool) {
	if name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return 0, false
	}
	for _, k := range t.Kinds {
		for _, n := range k.Names {
			if name == n {
				return k.MaxBytes, true
			}
		}
		for _, s := range k.Suffixes {
			if strings.HasSuffix(name, s) && len(name) > len(s) {
				return k.MaxBytes, true
			}
		}
	}
	return 0, false
}

// InputFileCap is Inputs.Cap: the cap of an input file, and whether name
// is one.
func InputFileCap(name string) (int64, bool) { return Inputs.Cap(name) }
