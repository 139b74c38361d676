package chips

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func bools(s string) []bool {
	out := make([]bool, len(s))
	for i, c := range s {
		out[i] = c == 'x'
	}
	return out
}

// TestAssign has one row per rule; busy is a picture of the host ('x' held,
// '.' free) and every expected grant was worked out by hand.
func TestAssign(t *testing.T) {
	tests := []struct {
		name string
		busy string
		want []int
		got  [][]int
	}{
		{"one-device probes fill the host in order", "..", []int{1, 1, 1}, [][]int{{0}, {1}, nil}},
		{"a sharded probe takes an aligned block", "..", []int{2}, [][]int{{0, 1}}},
		// The 2-device probe reserves the host's only block: chip 1 stays
		// free for it, and the one-device probes behind it wait.
		{"a waiting sharded probe is not overtaken", "x.", []int{2, 1, 1}, [][]int{nil, nil, nil}},
		// Chip 3's region [2,3] is busy, chips 0 and 1's is not: the
		// one-device probe goes to 3 and leaves [0,1] whole.
		{"one-device probes fill busy regions first", "..x.", []int{1, 2}, [][]int{{3}, {0, 1}}},
		{"a whole free half stays whole", ".....x..", []int{1, 4}, [][]int{{4}, {0, 1, 2, 3}}},
		// [2,3] has one busy chip, [0,1] two: the sharded probe reserves
		// [2,3]; the one-device probes may not take chip 3.
		{"the reservation is the least busy block", "xxx.", []int{2, 1, 1}, [][]int{nil, nil, nil}},
		{"once the reserved block is free, the sharded probe starts", "xx..", []int{2, 1}, [][]int{{2, 3}, nil}},
		// Both blocks have one busy chip: the first waiting probe reserves
		// [0,1], the second [2,3]; nothing is left for the third.
		{"each waiting sharded probe reserves its own block", "x..x", []int{2, 2, 1}, [][]int{nil, nil, nil}},
		{"a block that does not fit the host is never used", "...", []int{2, 1}, [][]int{{0, 1}, {2}}},
		{"more devices than the host has, or none, never start", "....", []int{5, 0, 1}, [][]int{nil, nil, {0}}},
		{"the whole host", "....", []int{4, 1}, [][]int{{0, 1, 2, 3}, nil}},
		// Chip 5's region [4,7] is busy: the sharded probe takes [6,7] and
		// leaves the free half [0,3] whole.
		{"a sharded probe fills a busy region first", ".....x..", []int{2}, [][]int{{6, 7}}},
		// Both halves have a busy chip: the 4-device probe reserves the
		// lower, [0,3]; [6,7] is free and reserved by nobody.
		{"a block past a reservation is free to start", "x...x...", []int{4, 2}, [][]int{nil, {6, 7}}},
		// Both blocks have one busy chip: the reservation is the lower,
		// and the one-device probe may take chip 2 but not chip 1.
		{"on a tie the reservation is the lowest block", "x..x", []int{2, 1}, [][]int{nil, {2}}},
		{"nothing waits", "x.", nil, [][]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy := bools(tt.busy)
			before := slices.Clone(busy)
			got := Assign(busy, tt.want)
			if len(got) != len(tt.got) {
				t.Fatalf("%d answers for %d probes", len(got), len(tt.want))
			}
			for i := range got {
				if !slices.Equal(got[i], tt.got[i]) {
					t.Errorf("probe %d (%d devices): %v, want %v", i, tt.want[i], got[i], tt.got[i])
				}
			}
			if !slices.Equal(busy, before) {
				t.Errorf("Assign changed its input: %v", busy)
			}
		})
	}
}

func granted(tk *Ticket) ([]int, bool) {
	select {
	case c := <-tk.given:
		return c, true
	default:
		return nil, false
	}
}

// TestPoolSharded: a probe of two devices that asks while one is held gets
// both once it is released, before a one-device probe that asked after it,
// although a device was free all along.
func TestPoolSharded(t *testing.T) {
	p := NewPool(2)
	ctx := context.Background()
	first, err := p.Acquire(ctx, 1)
	if err != nil || !slices.Equal(first, []int{0}) {
		t.Fatalf("first probe: %v %v", first, err)
	}
	two, _ := p.Ask(2)
	one, _ := p.Ask(1)
	if c, ok := granted(one); ok {
		t.Fatalf("the one-device probe overtook the waiting sharded one: %v", c)
	}
	if _, ok := granted(two); ok {
		t.Fatal("the sharded probe started on one free device")
	}
	p.Release(first)
	c, err := two.Wait(ctx)
	if err != nil || !slices.Equal(c, []int{0, 1}) {
		t.Fatalf("sharded probe: %v %v", c, err)
	}
	if _, ok := granted(one); ok || p.Busy() != 2 {
		t.Fatalf("busy %d while the sharded probe holds both", p.Busy())
	}
	p.Release(c)
	if c, err := one.Wait(ctx); err != nil || len(c) != 1 {
		t.Fatalf("one-device probe: %v %v", c, err)
	}
	if _, err := p.Ask(3); err == nil {
		t.Error("a probe of 3 devices was queued on a host of 2")
	}
}

// TestPoolWithdraw: a probe that stops waiting leaves the queue, and the
// probes behind it may start.
func TestPoolWithdraw(t *testing.T) {
	p := NewPool(2)
	held, _ := p.Acquire(context.Background(), 1)
	two, _ := p.Ask(2)
	one, _ := p.Ask(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := two.Wait(ctx); err == nil {
		t.Fatal("a cancelled wait returned devices")
	}
	c, ok := granted(one)
	if !ok || !slices.Equal(c, []int{1}) {
		t.Fatalf("after the sharded probe left, the one-device probe got %v (%v)", c, ok)
	}
	p.Release(held)
	p.Release(c)
	if p.Busy() != 0 {
		t.Fatalf("%d devices still held", p.Busy())
	}
}

// TestPoolNeverSharesADevice: many probes of 1, 2 and 4 devices come and
// go on a host of 4; no device is ever held by two, none is lost, and every
// probe, the sharded ones included, runs.
func TestPoolNeverSharesADevice(t *testing.T) {
	p := NewPool(4)
	var mu sync.Mutex
	owner := make([]int, 4)
	var wg sync.WaitGroup
	var done sync.Map
	sizes := []int{1, 1, 2, 1, 4, 1, 1, 2}
	for i := range 64 {
		wg.Add(1)
		go func(id, n int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := p.Acquire(ctx, n)
			if err != nil {
				t.Errorf("probe %d (%d devices): %v", id, n, err)
				return
			}
			if len(c) != n {
				t.Errorf("probe %d: %v for %d devices", id, c, n)
			}
			mu.Lock()
			for _, d := range c {
				if owner[d] != 0 {
					t.Errorf("device %d given to probe %d while probe %d holds it", d, id, owner[d]-1)
				}
				owner[d] = id + 1
			}
			mu.Unlock()
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			mu.Lock()
			for _, d := range c {
				owner[d] = 0
			}
			mu.Unlock()
			done.Store(id, n)
			p.Release(c)
		}(i, sizes[i%len(sizes)])
	}
	wg.Wait()
	ran := 0
	done.Range(func(_, _ any) bool { ran++; return true })
	if ran != 64 || p.Busy() != 0 {
		t.Fatalf("%d of 64 probes ran; %d devices still held", ran, p.Busy())
	}
}

func ExampleAssign() {
	// Device 0 is held; a probe of two devices waits ahead of one of one.
	fmt.Println(Assign([]bool{true, false}, []int{2, 1}))
	// Output: [[] []]
}

// The pool as the tests drive it.

// Size is the number of devices.
func (p *Pool) Size() int { return len(p.busy) }

// Acquire is Ask and Wait.
func (p *Pool) Acquire(ctx context.Context, n int) ([]int, error) {
	t, err := p.Ask(n)
	if err != nil {
		return nil, err
	}
	return t.Wait(ctx)
}

// Busy is how many devices are held now.
func (p *Pool) Busy() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return count(p.busy, 0, len(p.busy))
}
