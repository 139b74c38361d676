package probe

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestTailBufferKeepsTheLastBytes: after any sequence of writes the buffer
// gives the last limit bytes written, and never holds more than 2*limit.
func TestTailBufferKeepsTheLastBytes(t *testing.T) {
	tests := [][]int{
		{6, 6, 6}, // over half of max each: the trim must keep max-len(p), not more
		{3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
		{7, 1, 7, 1, 7, 1},
		{8},
		{9, 2},
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		{5, 5, 5, 5},
	}
	const limit = 8
	for _, sizes := range tests {
		tb := newTailBuffer(limit)
		var all []byte
		for i, n := range sizes {
			p := bytes.Repeat([]byte{byte('a' + i%26)}, n)
			all = append(all, p...)
			if got, err := tb.Write(p); got != n || err != nil {
				t.Fatalf("%v: write %d: %d, %v", sizes, i, got, err)
			}
			want := all[max(0, len(all)-limit):]
			if !bytes.Equal(tb.Bytes(), want) {
				t.Errorf("%v after write %d: %q; want the last %d bytes %q", sizes, i, tb.Bytes(), limit, want)
			}
			if cap(tb.buf) > 2*limit {
				t.Errorf("%v after write %d: holds %d bytes of memory; want at most %d", sizes, i, cap(tb.buf), 2*limit)
			}
		}
	}
}

// TestStageTrackerMatchesOnlyALineStart: a stage named past the first
// stageLineMax bytes of a line is not taken, however the line arrives.
func TestStageTrackerMatchesOnlyALineStart(t *testing.T) {
	for _, parts := range []int{1, 3, 50} {
		var s stageTracker
		fmt.Fprintf(&s, "stage=load\n")
		line := strings.Repeat("x", stageLineMax+100) + " stage=forward\n"
		step := (len(line) + parts - 1) / parts
		for i := 0; i < len(line); i += step {
			s.Write([]byte(line[i:min(i+step, len(line))]))
		}
		if s.last != compat.StageLoad {
			t.Errorf("in %d parts: stage %q; want %q (the later one is past the line's first %d bytes)", parts, s.last, compat.StageLoad, stageLineMax)
		}
		if len(s.line) > stageLineMax {
			t.Errorf("in %d parts: holds %d bytes of a line; want at most %d", parts, len(s.line), stageLineMax)
		}
	}
}

// TestContainsFold: the stage tracker's prefilter finds the lower-case word
// in any case, anywhere in the line (its very end included), and nowhere
// else; a prefilter that says yes too often only costs time, so this is
// checked here, not through the tracker.
func TestContainsFold(t *testing.T) {
	for _, tc := range []struct {
		b    string
		want bool
	}{
		{"stage", true},
		{"STAGE", true},
		{"the Stage: load", true},
		{"at the very end: stage", true},
		{"xstage", true},
		{"", false},
		{"stag", false},
		{"stag e", false},
		{"tage:", false},
		{"no such word here", false},
		{"stAgf", false},
	} {
		if got := containsFold([]byte(tc.b), "stage"); got != tc.want {
			t.Errorf("containsFold(%q, \"stage\") = %v; want %v", tc.b, got, tc.want)
		}
	}
}
