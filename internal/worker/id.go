package worker

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// NewID names a worker process: its host and 8 random hex digits, fresh at
// every start (a restarted worker never inherits its predecessor's leases).
func NewID(host string) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	host = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '-'
	}, host)
	if len(host) > 63 {
		host = host[:63]
	}
	if host == "" {
		host = "worker"
	}
	return host + "-" + hex.EncodeToString(b[:])
}
