// Package proctest finds processes for tests that must prove none is left
// behind (the runner's and the scanner's process tests), and collects their output.
package proctest

import (
	"bytes"
	"os"
	"strconv"
	"sync"
)

// With lists the live processes, other than this one, whose command line
// contains s (a zombie's command line is empty: it counts as gone).
func With(s string) []int {
	var out []int
	dir, _ := os.ReadDir("/proc")
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(cmd, []byte(s)) {
			out = append(out, pid)
		}
	}
	return out
}

// Buffer collects a process's (or a logger's) output and is safe to read
// while it is being written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
