package testenv

import (
	"testing"
	"time"
)

// The pauses between Eventually's questions: the first after 5 ms, each
// next one twice as long, at most 100 ms (a condition that holds soon is
// seen soon; one that asks a server over HTTP stays within its rate limit).
const (
	firstPause = 5 * time.Millisecond
	mostPause  = 100 * time.Millisecond
)

// Eventually asks ok until it holds, and fails the test, naming what it
// waited for, when it still does not after within.
func Eventually(t testing.TB, what string, within time.Duration, ok func() bool) {
	t.Helper()
	eventually(t, what, within, ok, nil)
}

// EventuallyShowing is Eventually that, when it fails, shows too what show
// returns then (a process's output, the state it got to).
func EventuallyShowing(t testing.TB, what string, within time.Duration, ok func() bool, show func() string) {
	t.Helper()
	eventually(t, what, within, ok, show)
}

func eventually(t testing.TB, what string, within time.Duration, ok func() bool, show func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	pause := firstPause
	for !ok() {
		if time.Now().After(deadline) {
			if show != nil {
				t.Fatalf("timed out after %v waiting for %s:\n%s", within, what, show())
			} else {
				t.Fatalf("timed out after %v waiting for %s", within, what)
			}
		}
		time.Sleep(pause)
		pause = min(2*pause, mostPause)
	}
}
