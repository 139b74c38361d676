package harness

import (
	"strings"
	"testing"
)

// TestInputTableExamples: the table's own worked examples (which the
// Python tests check too) hold, and the kinds the issue names are there.
func TestInputTableExamples(t *testing.T) {
	if len(Inputs.Examples) < 5 {
		t.Fatalf("only %d examples", len(Inputs.Examples))
	}
	for _, ex := range Inputs.Examples {
		got, ok := InputFileCap(ex.Name)
		if ok != (ex.MaxBytes > 0) || got != ex.MaxBytes {
			t.Errorf("InputFileCap(%q) = %d, %v; the table's example says %d", ex.Name, got, ok, ex.MaxBytes)
		}
	}
	// Written independently of the table: what the issue lists, and what
	// must never be an input file.
	for name, want := range map[string]bool{
		"tokenizer.json": true, "tokenizer_config.json": true, "special_tokens_map.json": true,
		"vocab.json": true, "vocab.txt": true, "merges.txt": true, "spiece.model": true,
		"sentencepiece.bpe.model": true, "preprocessor_config.json": true, "processor_config.json": true,
		"chat_template.jinja": true, "chat_template.json": true, "generation_config.json": true,
		"config.json": false, "model.safetensors": false, "pytorch_model.bin": false, "tokenizer.pkl": false,
		"tokenization_qwen.py": false, ".model": false, "1_Pooling/config.json": false, "a/tokenizer.json": false,
		".tokenizer.json": false,
	} {
		if _, ok := InputFileCap(name); ok != want {
			t.Errorf("InputFileCap(%q) ok = %v, want %v", name, ok, want)
		}
	}
	// JSON settings stay within a few MiB; the tokenizer itself may be larger.
	if c, _ := InputFileCap("tokenizer_config.json"); c > 8<<20 {
		t.Errorf("tokenizer_config.json cap %d: more than a few MiB", c)
	}
}

func TestParseInputTableRefusesBrokenTables(t *testing.T) {
	for name, data := range map[string]string{
		"not json":  `{`,
		"no kinds":  `{"kinds": []}`,
		"no cap":    `{"kinds": [{"kind": "x", "names": ["a.json"]}]}`,
		"no match":  `{"kinds": [{"kind": "x", "max_bytes": 10}]}`,
		"wrong cap": `{"kinds": [{"kind": "x", "names": ["a.json"], "max_bytes": -1}]}`,
	} {
		if _, err := ParseInputTable([]byte(data)); err == nil || !strings.Contains(err.Error(), "input files table") {
			t.Errorf("%s: %v, want an error", name, err)
		}
	}
}

// TestParseInputTableKinds: a kind may match by names and suffixes together;
// a suffix never matches a file that is only the suffix.
func TestParseInputTableKinds(t *testing.T) {
	tab, err := ParseInputTable([]byte(`{"kinds": [{"kind": "x", "names": ["a.json"], "suffixes": [".model", "_x.json"], "max_bytes": 10}]}`))
	if err != nil {
		t.Fatalf("a kind with one name and one suffix: %v", err)
	}
	for name, want := range map[string]bool{"a.json": true, "sp.model": true, ".model": false, "b.json": false, "a_x.json": true, "_x.json": false} {
		if _, ok := tab.Cap(name); ok != want {
			t.Errorf("Cap(%q) ok = %v, want %v", name, ok, want)
		}
	}
}
