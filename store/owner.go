package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A running scan names the process that runs it (its owner) and that
// process renews the claim every OwnerBeat (RenewScanOwner). Start-up and
// the server's periodic check take over, or mark interrupted, the scans
// whose owner is gone (ownerGone): on this machine a dead pid says so at
// once; anywhere, an owner silent for OwnerTTL is gone. Ownership so never
// rests on a host name alone: a container recreated under a new name (as
// Deployments do) still adopts the scan its predecessor left.

// Owner is a process that runs scans.
type Owner struct {
	Host     string // the host name
	PID      int
	Boot     string // the kernel's boot id: a pid means something only within one boot
	Instance string // random per process: tells a restarted process (same pid, same host) from the old one
}

// The owner heartbeat: a running scan's owner renews it every OwnerBeat;
// one silent for OwnerTTL is gone.
const (
	OwnerBeat = 10 * time.Second
	OwnerTTL  = 45 * time.Second
)

// String is the owner as a scan records it: "host:pid:boot:instance".
func (o Owner) String() string {
	return fmt.Sprintf("%s:%d:%s:%s", o.Host, o.PID, o.Boot, o.Instance)
}

// parseOwner reads a recorded owner: "host:pid:boot:instance", or an older
// binary's "host:pid" (no boot, no instance). ok is false for anything else.
func parseOwner(s string) (o Owner, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 2 && len(parts) != 4 {
		return Owner{}, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || parts[0] == "" {
		return Owner{}, false
	}
	o = Owner{Host: parts[0], PID: pid}
	if len(parts) == 4 {
		o.Boot, o.Instance = parts[2], parts[3]
	}
	return o, true
}

// thisProcess is the owner this process records.
func thisProcess() Owner {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return Owner{Host: host, PID: os.Getpid(), Boot: strings.TrimSpace(string(boot)), Instance: hex.EncodeToString(b[:])}
}

// processOwner is this process, once.
var processOwner = thisProcess()

// ownerGone reports whether owner, which last renewed its scan at seen, is
// gone at now, as seen from me: an unreadable owner, one silent for longer
// than OwnerTTL, and on this machine (same host and boot; an older binary
// recorded neither boot nor instance) one whose pid no longer runs or is
// my own pid under another instance (a restarted container keeps its pid).
// me itself is never gone.
func ownerGone(owner string, seen, now time.Time, me Owner) bool {
	o, ok := parseOwner(owner)
	switch {
	case !ok:
		return true
	case o.Instance != "" && o == me:
		return false
	case now.Sub(seen) > OwnerTTL:
		return true
	case o.Host != me.Host || (o.Boot != "" && o.Boot != me.Boot):
		return false // not this machine: only its silence tells
	case o.PID == me.PID:
		return true
	}
	return errors.Is(syscall.Kill(o.PID, 0), syscall.ESRCH)
}

// ErrNotOwner: the scan is no longer this process's (another adopted it
// after this one fell silent, or it ended).
var ErrNotOwner = errors.New("the scan is not this process's")

// RenewScanOwner renews this process's claim on running scan id (its
// owner_seen); the error wraps ErrNotOwner when the scan is not this
// process's or not running any more.
func (s *SQLite) RenewScanOwner(ctx context.Context, id int64) error {
	res, err := s.w.ExecContext(ctx, sqlRenewOwner, unixNano(s.now()), id, s.me.String())
	if err != nil {
		return fmt.Errorf("store: renew scan %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: renew scan %d: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("store: renew scan %d: %w", id, ErrNotOwner)
	}
	return nil
}
