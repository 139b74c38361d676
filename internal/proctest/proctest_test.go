package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestWith: a child whose command line holds a unique word is found by
// that word, by pid; once it has exited and been reaped it is gone; this
// process, whose command line holds its own flags, is never listed.
func TestWith(t *testing.T) {
	word := fmt.Sprintf("proctest-with-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := sleeper(word)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	got := listedSoon(word, cmd.Process.Pid)
	if !slices.Equal(got, []int{cmd.Process.Pid}) {
		t.Errorf("With(%q) = %v, want [%d]", word, got, cmd.Process.Pid)
	}
	// A word no process has: nothing.
	if got := With(word + "-none"); len(got) != 0 {
		t.Errorf("With(an unused word) = %v, want none", got)
	}
	// Gone once ended and reaped.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if got := With(word); len(got) != 0 {
		t.Errorf("With(%q) after the child was reaped = %v, want none", word, got)
	}
}

// listedSoon is With(word) once it lists pid, or after 5 s. A child just
// started may not be listed at once: exec closes the pipe that ends
// cmd.Start before the new program's command line is set up, and
// /proc/<pid>/cmdline reads empty in between (CI saw it).
func listedSoon(word string, pid int) []int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := With(word)
		if slices.Contains(got, pid) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sleeper is `sleep 30` whose command line holds word: its argv[0] (a
// shell's `sh -c 'sleep 30' word` could exec sleep and lose the word).
func sleeper(word string) *exec.Cmd {
	cmd := exec.Command("sleep", "30")
	cmd.Args[0] = word
	return cmd
}

// TestWithLeavesOutItself: this test binary's command line holds its own
// -test.run flag; it is not listed though it matches, while a child that
// holds the same text is.
func TestWithLeavesOutItself(t *testing.T) {
	self, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	word := strings.Split(strings.TrimRight(string(self), "\x00"), "\x00")[0] // the binary's path
	for _, pid := range With(word) {
		if pid == os.Getpid() {
			t.Fatalf("With(%q) lists this process (%d)", word, pid)
		}
	}
	cmd := sleeper(word)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if got := listedSoon(word, cmd.Process.Pid); !slices.Contains(got, cmd.Process.Pid) || slices.Contains(got, os.Getpid()) {
		t.Errorf("With(own path) = %v, want the child %d and not this process %d", got, cmd.Process.Pid, os.Getpid())
	}
}

// TestWithZombie: a child that has exited but is not yet reaped (a zombie:
// its command line is empty) counts as gone.
func TestWithZombie(t *testing.T) {
	word := "proctest-zombie-" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("sh", "-c", "exit 0", word)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	var b []byte
	testenv.EventuallyShowing(t, "the child to exit", 10*time.Second, func() bool {
		var err error
		if b, err = os.ReadFile(stat); err != nil {
			t.Fatal(err)
		}
		// The state follows the command's name in parentheses.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	}, func() string { return string(b) })
	if got := With(word); len(got) != 0 {
		t.Errorf("With(%q) = %v for a zombie, want none", word, got)
	}
}

// TestBuffer: what is written is read back whole, in order, while writers
// write at the same time (go test -race sees a data race otherwise); Write
// reports every byte written.
func TestBuffer(t *testing.T) {
	var b Buffer
	if b.String() != "" {
		t.Fatalf("a new Buffer holds %q", b.String())
	}
	if n, err := b.Write([]byte("hello ")); n != 6 || err != nil {
		t.Fatalf("Write = %d, %v, want 6, nil", n, err)
	}
	if _, err := fmt.Fprintf(&b, "world %d\n", 42); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "hello world 42\n" {
		t.Fatalf("String = %q", got)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "w%d-%d\n", w, i)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 1+400 {
		t.Fatalf("%d lines, want 401", len(lines))
	}
	next := map[string]int{}
	for _, l := range lines[1:] {
		w, i, _ := strings.Cut(l, "-")
		n, err := strconv.Atoi(i)
		if err != nil || n != next[w] {
			t.Fatalf("line %q out of order (want %s-%d)", l, w, next[w])
		}
		next[w]++
	}
}
