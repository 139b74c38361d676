package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/scan"
)

// screen is a minimal terminal: it renders what a scan writes to a
// terminal of the given width (CR, LF, erase to end of line and printable
// characters) and records every state of the line being drawn. Any other
// control sequence is a failure. Lines are kept whole (a log line may wrap
// on a real terminal; the bar must not, which the frames show).
type screen struct {
	lines  []string // finished lines
	cur    []rune
	col    int
	frames []string // the current line at each CR or LF
	errs   []string
}

func (s *screen) feed(b []byte) {
	for len(b) > 0 {
		switch {
		case bytes.HasPrefix(b, []byte("\033[K")):
			s.cur = s.cur[:min(s.col, len(s.cur))]
			b = b[3:]
			continue
		case b[0] == '\033':
			s.errs = append(s.errs, "unexpected escape "+strings.ToValidUTF8(string(b[:min(len(b), 8)]), "?"))
		case b[0] == '\r':
			s.frames = append(s.frames, string(s.cur))
			s.col = 0
		case b[0] == '\n':
			s.frames = append(s.frames, string(s.cur))
			s.lines = append(s.lines, string(s.cur))
			s.cur, s.col = nil, 0
		default:
			r, n := utf8.DecodeRune(b)
			if s.col < len(s.cur) {
				s.cur[s.col] = r
			} else {
				s.cur = append(s.cur, r)
			}
			s.col++
			b = b[n:]
			continue
		}
		b = b[1:]
	}
}

// scanOnTerminal runs `scanner scan` with stderr on a pseudo-terminal of
// the given width and returns what a person would have seen.
func scanOnTerminal(t *testing.T, width int, extra ...string) *screen {
	t.Helper()
	ids := []string{"term/a-model", "term/warn-model",
		"term/" + strings.Repeat("a-rather-long-model-name-", 3) + "end", "term/another-model"}
	h := hubtest.New(t, llamaRepos(ids...)...)
	dir := t.TempDir()
	args := standinArgs(t, h, filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub"))
	args = append(args[:len(args)-2], extra...) // text logs, as a person gets them
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: uint16(width)}); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(&raw, ptmx) })
	var stdout bytes.Buffer
	code := runWithEnvTo(t, args, &stdout, tty)
	tty.Close()
	wg.Wait()
	if code != 0 {
		t.Fatalf("scan exited %d:\n%s", code, raw.String())
	}
	s := &screen{}
	s.feed(raw.Bytes())
	if len(s.cur) > 0 {
		s.lines = append(s.lines, string(s.cur))
	}
	for _, e := range s.errs {
		t.Error(e)
	}
	return s
}

func runWithEnvTo(t *testing.T, args []string, stdout *bytes.Buffer, stderr *os.File) int {
	t.Setenv("HF_TOKEN", "")
	return run(args, stdout, stderr)
}

var barRE = regexp.MustCompile(`^\[[# ]+\] \d+/\d+ `)

// TestScanOnATerminal: on a terminal, the progress bar keeps the last line
// (log lines are printed above it, never glued to it), only warnings and
// errors are logged unless -v, and the bar fits the terminal's width, a
// long name cut by characters.
func TestScanOnATerminal(t *testing.T) {
	const width = 64
	s := scanOnTerminal(t, width)
	var warns, bars int
	for _, l := range s.lines {
		if strings.Contains(l, "level=") && barRE.MatchString(l) || strings.Count(l, "] ") > 1 {
			t.Errorf("a log line glued to the bar: %q", l)
		}
		if strings.Contains(l, "level=INFO") || strings.Contains(l, "level=DEBUG") {
			t.Errorf("an info line on the terminal without -v: %q", l)
		}
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "did not exit cleanly") {
			warns++
		}
	}
	if warns != 1 {
		t.Errorf("%d warnings about term/warn-model, want 1:\n%s", warns, strings.Join(s.lines, "\n"))
	}
	// The last lines: the final bar, then the scan's summary.
	n := len(s.lines)
	if n < 2 || !barRE.MatchString(s.lines[n-2]) || !strings.Contains(s.lines[n-2], "4/4") ||
		!strings.HasPrefix(s.lines[n-1], "scan ") {
		t.Errorf("the screen does not end with the final bar and the summary:\n%s", strings.Join(s.lines, "\n"))
	}
	var cut bool
	for _, f := range s.frames {
		if !barRE.MatchString(f) {
			continue
		}
		bars++
		if n := utf8.RuneCountInString(f); n >= width {
			t.Errorf("a bar of %d characters on a terminal of %d: %q", n, width, f)
		}
		if strings.Contains(f, "term/a-rather-long") && strings.Contains(f, "…") {
			cut = true
		}
	}
	if bars < 4 {
		t.Errorf("%d bar frames drawn, want one per model at least", bars)
	}
	if !cut {
		t.Errorf("the long name was never shown cut with …: %q", s.frames)
	}
}

// TestScanOnATerminalVerbose: with -v the info lines are shown too, each
// on its own line above the bar.
func TestScanOnATerminalVerbose(t *testing.T) {
	s := scanOnTerminal(t, 100, "-v")
	infos := 0
	for _, l := range s.lines {
		if strings.Contains(l, "level=") && barRE.MatchString(l) {
			t.Errorf("a log line glued to the bar: %q", l)
		}
		if strings.HasPrefix(l, "time=") && strings.Contains(l, "level=INFO") && strings.Contains(l, `msg="probe done"`) {
			infos++
		}
	}
	if infos != 4 {
		t.Errorf("%d 'probe done' info lines with -v, want 4:\n%s", infos, strings.Join(s.lines, "\n"))
	}
}

func TestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		configured   slog.Level
		tty, verbose bool
		want         slog.Level
	}{
		{slog.LevelInfo, true, false, slog.LevelWarn},
		{slog.LevelDebug, true, false, slog.LevelWarn},
		{slog.LevelError, true, false, slog.LevelError},
		{slog.LevelInfo, true, true, slog.LevelInfo},
		{slog.LevelDebug, true, true, slog.LevelDebug},
		{slog.LevelInfo, false, false, slog.LevelInfo},
		{slog.LevelDebug, false, false, slog.LevelDebug},
	} {
		if got := logLevel(tc.configured, tc.tty, tc.verbose); got != tc.want {
			t.Errorf("logLevel(%v, tty %v, -v %v) = %v, want %v", tc.configured, tc.tty, tc.verbose, got, tc.want)
		}
	}
}

func TestBarLine(t *testing.T) {
	long := "org/" + strings.Repeat("é", 60) // two bytes a character
	for _, tc := range []struct {
		done, planned int
		name, status  string
		width         int
		want          string
	}{
		{5, 10, "org/m", "pass", 80, "[###############               ] 5/10 org/m pass"},
		{0, 0, "", "unchanged", 80, "[                              ] 0/0  unchanged"},
		{10, 10, "org/m", "pass", 30, "[##########] 10/10 org/m pass"}, // the bar shrinks to fit
		// The name is cut first (to 40, then as needed down to 12), by characters.
		{1, 2, long, "fail", 100, "[###############               ] 1/2 org/" + strings.Repeat("é", 35) + "… fail"},
		{1, 2, long, "fail", 60, "[###############               ] 1/2 org/" + strings.Repeat("é", 12) + "… fail"},
		// Then the bar, down to 5; then the line is cut.
		{1, 2, long, "fail", 40, "[#######        ] 1/2 org/" + strings.Repeat("é", 7) + "… fail"},
		{1, 2, long, "timeout", 20, "[##   ] 1/2 org/éé…"},
	} {
		got := barLine(tc.done, tc.planned, tc.name, tc.status, tc.width)
		if got != tc.want {
			t.Errorf("barLine(%d/%d %q %q, %d) =\n%q, want\n%q", tc.done, tc.planned, tc.name, tc.status, tc.width, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n >= tc.width {
			t.Errorf("%d characters for a width of %d", n, tc.width)
		}
	}
}

// TestBarLineOnATinyTerminal: a terminal one column wide gets nothing (its
// only column is the one left free).
func TestBarLineOnATinyTerminal(t *testing.T) {
	if got := barLine(1, 2, "org/m", "pass", 1); got != "" {
		t.Errorf("barLine on 1 column = %q, want nothing", got)
	}
	if got := barLine(1, 2, "org/m", "pass", 2); got != "…" {
		t.Errorf("barLine on 2 columns = %q, want …", got)
	}
}

// TestPlainProgress: off a terminal (logs, CI) each model gets a plain
// line, its id escaped; an update without a model (the scan's start) none.
func TestPlainProgress(t *testing.T) {
	var b bytes.Buffer
	c := newConsole(&b)
	if c.tty() {
		t.Fatal("a buffer taken for a terminal")
	}
	c.update(scan.Progress{Planned: 3})
	c.update(scan.Progress{Done: 1, Planned: 3, ModelID: "org/a", Result: &compat.Result{Status: compat.StatusFail}})
	c.update(scan.Progress{Done: 2, Planned: 3, ModelID: "org/b\x1b[2J"})
	c.Write([]byte("time=x level=INFO msg=hello\n"))
	c.finish()
	want := "[1/3] org/a fail\n[2/3] org/b\\x1b[2J unchanged\ntime=x level=INFO msg=hello\n"
	if b.String() != want {
		t.Errorf("plain progress:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestConsoleOnATerminal: a terminal is told by its descriptor (any one,
// 0 included), and its width read from it: 80 when it gives none.
func TestConsoleOnATerminal(t *testing.T) {
	if !(&console{w: io.Discard, fd: 0}).tty() {
		t.Error("descriptor 0 not taken for a terminal")
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	c := newConsole(tty)
	if !c.tty() {
		t.Fatal("a pseudo-terminal not taken for a terminal")
	}
	for _, tc := range []struct{ cols, want int }{{0, 80}, {1, 1}, {57, 57}} {
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: uint16(tc.cols)}); err != nil {
			t.Fatal(err)
		}
		if got := c.width(); got != tc.want {
			t.Errorf("width of a terminal of %d columns = %d, want %d", tc.cols, got, tc.want)
		}
	}
}
