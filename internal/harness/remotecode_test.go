package harness

import (
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

// TestRemoteCodeTable holds the Go side to the table's own examples;
// tests/test_tasks.py holds the harness to the same ones.
func TestRemoteCodeTable(t *testing.T) {
	table, err := parseRemoteCode(remoteCodeJSON)
	if err != nil {
		t.Fatal(err)
	}
	remote, not := 0, 0
	for _, ex := range table.Examples {
		if got := table.Why(ex.Tags, ex.Config); got != ex.Remote {
			t.Errorf("tags %v config %v: %q, want %q", ex.Tags, ex.Config, got, ex.Remote)
		}
		if ex.Remote == "" {
			not++
		} else {
			remote++
		}
	}
	if remote == 0 || not == 0 {
		t.Errorf("%d remote and %d plain examples: want both", remote, not)
	}
	// Written here independently of the file: an auto_map beside a model_type
	// transformers implements natively is remote code all the same.
	if got := RemoteCode.Why(nil, map[string]any{"model_type": "llama", "auto_map": map[string]any{"AutoModel": "m.M"}}); got != "config.json has auto_map" {
		t.Errorf("native model_type with auto_map: %q", got)
	}
	if got := RemoteCode.Why([]string{"custom_code"}, nil); got != "tagged custom_code" {
		t.Errorf("tag custom_code: %q", got)
	}
	if _, err := parseRemoteCode([]byte(`{"tags": [], "config_keys": ["auto_map"]}`)); err == nil || !strings.Contains(err.Error(), "no tags") {
		t.Errorf("a table without tags: %v", err)
	}
}

// TestReadinessHintsRemoteCodeByTheTable: the readiness hint remote_code
// fires for exactly the configs the table calls remote code.
func TestReadinessHintsRemoteCodeByTheTable(t *testing.T) {
	for _, ex := range RemoteCode.Examples {
		hinted := slices.ContainsFunc(readiness.Compute(readiness.Input{Config: ex.Config}).Hints,
			func(h readiness.Hint) bool { return h.Code == readiness.HintRemoteCode })
		if want := RemoteCode.ConfigKey(ex.Config) != ""; hinted != want {
			t.Errorf("config %v: remote_code hint %v, want %v", ex.Config, hinted, want)
		}
	}
}
