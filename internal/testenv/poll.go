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
	deadline := time.Now().Add(within)
	pause := firstPause
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, mostPause)
	}
}
