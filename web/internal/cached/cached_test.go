package cached

import (
	"fmt"
	"testing"
	"time"
)

// Map serves a value only for the change time it was computed at,
// never keeps a value over a tenth of its budget, and never holds more than
// its budget however many keys come.
func TestMap(t *testing.T) {
	t1, t2 := time.Unix(100, 0), time.Unix(200, 0)
	c := Map[string, string]{MaxBytes: 10_000}
	if _, ok := c.Get("a", t1); ok {
		t.Fatal("empty cache hit")
	}
	c.Put("a", t1, "A", 10)
	if v, ok := c.Get("a", t1); !ok || v != "A" {
		t.Errorf("get after put: %q %v", v, ok)
	}
	if _, ok := c.Get("a", t2); ok {
		t.Error("value served for another change time")
	}

	// Over a tenth of the budget: not kept, and nothing else is lost.
	c.Put("big", t1, "B", 5_000)
	if _, ok := c.Get("big", t1); ok {
		t.Error("a value of half the budget was kept")
	}
	if _, ok := c.Get("a", t1); !ok {
		t.Error("a refused value evicted the others")
	}

	// Many keys of nearly a tenth each (900 bytes): never more than the
	// budget held at once (at most 11 of them), and the newest always held.
	for i := range 200 {
		key := fmt.Sprint("k", i)
		c.Put(key, t1, key, 900)
		if _, ok := c.Get(key, t1); !ok {
			t.Fatalf("the newest value %s is not held", key)
		}
		held := 0
		for j := range i + 1 {
			if _, ok := c.Get(fmt.Sprint("k", j), t1); ok {
				held++
			}
		}
		if held*900 > c.MaxBytes {
			t.Fatalf("after %d puts of 900 bytes each, %d held: over the budget of %d", i+1, held, c.MaxBytes)
		}
	}

	// Putting the same key again replaces it and does not count it twice.
	r := Map[string, int]{MaxBytes: 10_000}
	r.Put("other", t1, 1, 500)
	for i := range 100 {
		r.Put("same", t1, i, 500)
	}
	if v, ok := r.Get("same", t1); !ok || v != 99 {
		t.Errorf("replaced value: %d %v", v, ok)
	}
	if _, ok := r.Get("other", t1); !ok {
		t.Error("re-putting one key evicted another: its old sizes were counted")
	}
}

// The budget's edges: a value of exactly a tenth of the budget is kept (only
// larger ones are refused), and the cache fills to exactly its budget before
// it starts over. Sizes are given net of the cache's overhead per entry.
func TestMapBudgetEdges(t *testing.T) {
	t1 := time.Unix(100, 0)
	overhead := Overhead
	c := Map[string, int]{MaxBytes: 10_000}
	c.Put("tenth", t1, 1, 1_000-overhead)
	if _, ok := c.Get("tenth", t1); !ok {
		t.Error("a value of exactly a tenth of the budget was refused")
	}
	c.Put("over", t1, 2, 1_001-overhead)
	if _, ok := c.Get("over", t1); ok {
		t.Error("a value over a tenth of the budget was kept")
	}

	full := Map[string, int]{MaxBytes: 10_000}
	for i := range 10 {
		full.Put(fmt.Sprint("k", i), t1, i, 1_000-overhead)
	}
	for i := range 10 {
		if _, ok := full.Get(fmt.Sprint("k", i), t1); !ok {
			t.Errorf("k%d lost while the cache held no more than its budget", i)
		}
	}
	if full.Bytes() != full.MaxBytes {
		t.Errorf("ten values of a tenth each: %d bytes counted, want %d", full.Bytes(), full.MaxBytes)
	}
	full.Put("k10", t1, 10, 1_000-overhead)
	if _, ok := full.Get("k0", t1); ok {
		t.Error("an eleventh tenth did not start the cache over")
	}
	if _, ok := full.Get("k10", t1); !ok || full.Bytes() != 1_000 {
		t.Errorf("after starting over: newest held %v, %d bytes counted", ok, full.Bytes())
	}
}
