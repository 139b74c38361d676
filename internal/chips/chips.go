// Package chips decides which of a host's devices each probe holds, so that
// a host runs sharded and one-device probes side by side without ever
// giving one device to two probes, and a probe waiting for several devices
// is not starved by a stream of one-device probes. Assign is the rule, pure
// and table-tested; Pool applies it to probes that come and go.
package chips

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Assign decides which waiting probes start now. busy[i] says device i is
// held; want[k] is how many devices the k-th waiting probe needs, in the
// order the probes asked. It returns, for each waiting probe, the devices
// it gets now (ascending), or nil while it waits.
//
// The rules:
//   - a probe of n devices gets an aligned block of them, devices
//     [b·n, (b+1)·n) (a TPU host's slices are contiguous, aligned chips);
//   - the probes are served in order: a probe starts on a block that is all
//     free and that no earlier waiting probe has reserved; among such
//     blocks it takes the one whose surroundings are busiest (the aligned
//     regions of 2n, 4n, … devices around it, nearest first, then the
//     lowest), so that whole free regions stay whole for larger probes;
//   - a probe that cannot start reserves the block with the fewest busy
//     devices among those no earlier probe reserved (the lowest on a tie):
//     no later probe may start there, so its devices only ever free up,
//     and the probe starts once they have. That is what keeps one-device
//     probes from starving a sharded one;
//   - a probe that asks for none, or for more devices than there are,
//     never starts (Pool refuses it).
func Assign(busy []bool, want []int) [][]int {
	d := len(busy)
	taken := slices.Clone(busy) // busy, or given in this call
	reserved := make([]bool, d) // held for an earlier waiting probe
	out := make([][]int, len(want))
	for k, n := range want {
		if n < 1 || n > d {
			continue
		}
		if b, ok := bestFree(taken, reserved, n); ok {
			out[k] = block(b, n)
			for _, c := range out[k] {
				taken[c] = true
			}
			continue
		}
		if b, ok := leastBusy(taken, reserved, n); ok {
			for _, c := range block(b, n) {
				reserved[c] = true
			}
		}
	}
	return out
}

// block is the devices of aligned block b of size n.
func block(b, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = b*n + i
	}
	return out
}

// count is how many of [from, to) are set in s.
func count(s []bool, from, to int) int {
	n := 0
	for _, v := range s[from:min(to, len(s))] {
		if v {
			n++
		}
	}
	return n
}

// bestFree is the free, unreserved aligned block of size n whose
// surroundings are busiest; false when there is none.
func bestFree(taken, reserved []bool, n int) (int, bool) {
	best, found := 0, false
	var bestScore []int
	for b := 0; (b+1)*n <= len(taken); b++ {
		if count(taken, b*n, (b+1)*n) > 0 || count(reserved, b*n, (b+1)*n) > 0 {
			continue
		}
		score := surroundings(taken, b*n, n)
		if !found || slices.Compare(score, bestScore) > 0 {
			best, bestScore, found = b, score, true
		}
	}
	return best, found
}

// surroundings counts the busy devices of the aligned regions of 2n, 4n, …
// devices (up to the whole host) that hold the block starting at start.
func surroundings(taken []bool, start, n int) []int {
	var score []int
	for size := 2 * n; ; size *= 2 {
		from := start - start%size
		score = append(score, count(taken, from, from+size))
		if size >= len(taken) {
			return score
		}
	}
}

// leastBusy is the aligned block of size n, none of whose devices an
// earlier probe reserved, with the fewest busy devices (the lowest on a
// tie); false when every block overlaps a reservation.
func leastBusy(taken, reserved []bool, n int) (int, bool) {
	best, bestBusy := -1, n+1
	for b := 0; (b+1)*n <= len(taken); b++ {
		if count(reserved, b*n, (b+1)*n) > 0 {
			continue
		}
		if busy := count(taken, b*n, (b+1)*n); busy < bestBusy {
			best, bestBusy = b, busy
		}
	}
	return best, best >= 0
}

// Pool hands out the devices of one host by Assign, to probes in the order
// they ask. It is safe for concurrent use.
type Pool struct {
	mu      sync.Mutex
	busy    []bool
	waiting []*Ticket
}

// NewPool is a pool of n devices, all free.
func NewPool(n int) *Pool { return &Pool{busy: make([]bool, max(n, 1))} }

// Ticket is one probe's place in the pool's queue.
type Ticket struct {
	p     *Pool
	n     int
	given chan []int // receives the devices once, when granted
}

// Ask queues a probe of n devices behind those that asked before; its
// devices come by Wait. n must be 1 to the pool's size.
func (p *Pool) Ask(n int) (*Ticket, error) {
	if n < 1 || n > len(p.busy) {
		return nil, fmt.Errorf("chips: a probe of %d devices on a host of %d", n, len(p.busy))
	}
	t := &Ticket{p: p, n: n, given: make(chan []int, 1)}
	p.mu.Lock()
	p.waiting = append(p.waiting, t)
	p.assignLocked()
	p.mu.Unlock()
	return t, nil
}

// Wait returns the ticket's devices once they are granted. When ctx ends
// first, the ticket leaves the queue (devices granted meanwhile go back)
// and ctx's error is returned.
func (t *Ticket) Wait(ctx context.Context) ([]int, error) {
	select {
	case c := <-t.given:
		return c, nil
	case <-ctx.Done():
	}
	p := t.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.waiting, t); i >= 0 {
		p.waiting = slices.Delete(p.waiting, i, i+1)
		p.assignLocked() // the probes behind it may start now
		return nil, ctx.Err()
	}
	// Granted just as ctx ended: give the devices back.
	p.releaseLocked(<-t.given)
	return nil, ctx.Err()
}

// Release gives devices back and starts whoever can start now.
func (p *Pool) Release(devices []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(devices)
}

func (p *Pool) releaseLocked(devices []int) {
	for _, c := range devices {
		p.busy[c] = false
	}
	p.assignLocked()
}

// Available is how many devices a probe asking now could start on: the
// free devices, or none while a probe waits (they are its, or reserved).
func (p *Pool) Available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiting) > 0 {
		return 0
	}
	return len(p.busy) - count(p.busy, 0, len(p.busy))
}

// assignLocked grants what Assign says and drops the granted tickets from
// the queue. p.mu is held.
func (p *Pool) assignLocked() {
	if len(p.waiting) == 0 {
		return
	}
	want := make([]int, len(p.waiting))
	for i, t := range p.waiting {
		want[i] = t.n
	}
	grants := Assign(p.busy, want)
	keep := p.waiting[:0]
	for i, t := range p.waiting {
		if grants[i] == nil {
			keep = append(keep, t)
			continue
		}
		for _, c := range grants[i] {
			p.busy[c] = true
		}
		t.given <- grants[i]
	}
	clear(p.waiting[len(keep):])
	p.waiting = keep
}
