// Package testenv decides what a test does when something it needs from the
// host is missing (an interpreter, a browser, a Python package): a plain
// `go test` skips it with the reason, and `make test`, which sets
// SCANNER_TEST_REQUIRE_ALL=1, fails it, so that a suite that says ok has
// run every test. The harness's pytest suite reads the same variable
// (tests/conftest.py, require).
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// RequireAllVar is the variable `make test` sets to 1.
const RequireAllVar = "SCANNER_TEST_REQUIRE_ALL"

// RequireAll reports whether missing prerequisites fail tests.
func RequireAll() bool { return os.Getenv(RequireAllVar) == "1" }

// Missing ends the test because what it needs is missing: a skip, or a
// failure under RequireAll. The message says what is missing and how to get it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if RequireAll() {
		t.Fatalf("%s (%s=1: every test must run)", msg, RequireAllVar)
		return
	}
	t.Skip(msg)
}
