//go:build clients

package clienttest

import (
	"os"
	"testing"
)

// TestServe serves the site until the test times out when
// CLIENTTEST_SERVE names a file to write its URL to (to run a client by
// hand against it); otherwise it does nothing.
func TestServe(t *testing.T) {
	file := os.Getenv("CLIENTTEST_SERVE")
	if file == "" {
		return
	}
	s := serve(t)
	if err := os.WriteFile(file, []byte(s.base), 0o644); err != nil {
		t.Fatal(err)
	}
	select {}
}
