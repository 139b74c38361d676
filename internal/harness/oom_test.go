package harness

import (
	"regexp"
	"strings"
	"testing"
)

// TestOOMTableExamples holds the runner to the shared out-of-memory table's
// own examples (oom_markers.json); tests/test_signatures.py holds the
// harness to the same ones, so Go and Python call the same texts OOM.
func TestOOMTableExamples(t *testing.T) {
	data, err := files.ReadFile(oomTablePath)
	if err != nil {
		t.Fatal(err)
	}
	table, res, err := parseOOMTable(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Examples.OOM) == 0 || len(table.Examples.NotOOM) == 0 {
		t.Fatalf("the table has %d oom and %d not_oom examples: want both", len(table.Examples.OOM), len(table.Examples.NotOOM))
	}
	for _, text := range table.Examples.OOM {
		if OOMMarker([]byte("Traceback (most recent call last):\n"+text+"\n")) == "" {
			t.Errorf("not called out of memory: %q", text)
		}
	}
	for _, text := range table.Examples.NotOOM {
		if m := OOMMarker([]byte(text)); m != "" {
			t.Errorf("called out of memory (marker %q): %q", m, text)
		}
	}
	for i, re := range res {
		matched := false
		for _, text := range table.Examples.OOM {
			matched = matched || re.MatchString(text)
		}
		if !matched {
			t.Errorf("marker %q matches none of the oom examples: add one", table.Markers[i].Pattern)
		}
	}
}

// TestOOMMarkerOnlyInTheTail checks the window OOMMarker reads: the last
// 8 KiB of the stderr tail, and the marker's own text as the runner quotes it.
func TestOOMMarkerOnlyInTheTail(t *testing.T) {
	old := "UserWarning: CUDA out of memory earlier, retried\n"
	tests := []struct {
		name, tail, want string
	}{
		{"at the end", "stage=load start\nMemoryError\n", "MemoryError"},
		{"case of the text kept", "RuntimeError: Ran Out Of Memory in memory space hbm\n", "Out Of Memory"},
		{"further up than 8 KiB", old + strings.Repeat("x", 8<<10) + "\nSegmentation fault\n", ""},
		{"within the last 8 KiB", strings.Repeat("x", 8<<10) + old, "out of memory"},
		{"none", "ValueError: bad config\n", ""},
	}
	for _, tc := range tests {
		if got := OOMMarker([]byte(tc.tail)); got != tc.want {
			t.Errorf("%s: marker %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestHarnessReadsTheOOMTable keeps the harness on the shared table: its
// markers must be the ones loaded from oom_markers.json, not a list of its own.
func TestHarnessReadsTheOOMTable(t *testing.T) {
	src, err := files.ReadFile("harness_failures.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"oom_markers.json"`, `_OOM_PATTERNS = _load_oom_markers()`} {
		if !strings.Contains(string(src), want) {
			t.Errorf("harness_failures.py lacks %s", want)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^_OOM_PATTERNS\s*=`).FindAll(src, -1)); n != 1 {
		t.Errorf("harness_failures.py assigns _OOM_PATTERNS %d times, want once (from the table)", n)
	}
	if _, err := files.ReadFile(oomTablePath); err != nil {
		t.Errorf("the table is not embedded with the harness: %v", err)
	}
}
