package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/google-pytorch/torchtpu-scanner/internal/scan"
)

// console is stderr during a scan. On a terminal the progress bar keeps the
// last line to itself: a log line is printed above it (the bar is erased,
// the line written, the bar drawn again), and the bar is redrawn in place,
// fitted to the terminal's width. Elsewhere (logs, CI) each model gets a
// plain line and log lines pass through as they are.
type console struct {
	w   io.Writer
	fd  int // the terminal, to ask its width; -1 when w is none
	mu  sync.Mutex
	bar string // the bar as drawn on the last line; "" when none is
}

func newConsole(w io.Writer) *console {
	c := &console{w: w, fd: -1}
	if f, ok := w.(*os.File); ok {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			c.fd = int(f.Fd())
		}
	}
	return c
}

func (c *console) tty() bool { return c != nil && c.fd >= 0 }

// logLevel is the level of the scan's log lines: on a terminal, only
// warnings and errors unless -v (the bar tells the rest); elsewhere as
// configured.
func logLevel(configured slog.Level, tty, verbose bool) slog.Level {
	if tty && !verbose {
		return max(configured, slog.LevelWarn)
	}
	return configured
}

// Write prints one log record (a line, as slog writes it) above the bar.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tty() || c.bar == "" {
		return c.w.Write(p)
	}
	line := string(p)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	_, err := io.WriteString(c.w, "\r\033[K"+line+c.bar)
	return len(p), err
}

// update shows a scan's progress: the bar redrawn on a terminal, a plain
// line per model elsewhere.
func (c *console) update(u scan.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	status := "unchanged"
	if u.Result != nil {
		status = string(u.Result.Status)
	}
	if !c.tty() {
		if u.ModelID != "" {
			fmt.Fprintf(c.w, "[%d/%d] %s %s\n", u.Done, u.Planned, printable(u.ModelID), status)
		}
		return
	}
	c.bar = barLine(u.Done, u.Planned, printable(u.ModelID), status, c.width())
	io.WriteString(c.w, "\r\033[K"+c.bar)
}

// finish leaves the last bar on screen and moves below it.
func (c *console) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty() && c.bar != "" {
		io.WriteString(c.w, "\n")
		c.bar = ""
	}
}

// width is the terminal's width in columns, 80 when it does not say.
func (c *console) width() int {
	if ws, err := unix.IoctlGetWinsize(c.fd, unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		return int(ws.Col)
	}
	return 80
}

// Bar geometry: the bar's and the name's widths shrink, in that order of
// preference, down to these before the line is cut.
const (
	barMax, barMin   = 30, 5
	nameMax, nameMin = 40, 12
)

// barLine is "[#####     ] 5/37 org/name status" in fewer than width
// characters (the last column is left free: writing it makes some
// terminals wrap). The name is cut first, then the bar; what still does not
// fit is cut at the end. Lengths count characters, not bytes.
func barLine(done, planned int, name, status string, width int) string {
	room := width - 1
	counts := fmt.Sprintf("%d/%d", done, planned)
	fixed := len("[] ") + len(counts) + len(" ") + len(" ") + utf8.RuneCountInString(status)
	bar := barMax
	nameW := min(utf8.RuneCountInString(name), nameMax)
	if over := fixed + bar + nameW - room; over > 0 {
		nameW = max(min(nameW, nameMin), nameW-over)
	}
	if over := fixed + bar + nameW - room; over > 0 {
		bar = max(barMin, bar-over)
	}
	filled := 0
	if planned > 0 {
		filled = bar * min(done, planned) / planned
	}
	line := "[" + strings.Repeat("#", filled) + strings.Repeat(" ", bar-filled) + "] " + counts + " " +
		cutRunes(name, nameW) + " " + status
	return cutRunes(line, room)
}

// cutRunes is s cut to at most n characters, the last one "…" when cut.
func cutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// printable replaces the characters of s that could act on a terminal
// (C0 and C1 controls, DEL) with "?".
//
// TODO(merge): the termsafe package (issue 10, item 4) is the one rule for
// this; call termsafe.Line here once it is merged, and delete this.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return '?'
		}
		return r
	}, s)
}
