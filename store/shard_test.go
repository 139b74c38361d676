package store_test

import (
	"errors"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// TestShardedResults: a result that does not say how many devices it ran on
// (one from before sharded probes) reads as one; a sharding needs a
// sharded probe, and is tp or fsdp.
func TestShardedResults(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/m")
	record(t, s, "org/m", compat.Result{Target: compat.TargetCPU, Status: compat.StatusPass, TestedAt: at(1)})
	got, err := s.LatestResult(ctx, "org/m", compat.TargetCPU)
	if err != nil || got.DevicesUsed != 1 || got.Sharding != nil {
		t.Fatalf("devices_used %d sharding %v (%v), want 1 and null", got.DevicesUsed, got.Sharding, err)
	}
	for _, bad := range []compat.Result{
		{DevicesUsed: 1, Sharding: compat.Ptr(compat.ShardingTP)},
		{DevicesUsed: 2, Sharding: compat.Ptr(compat.Sharding("pp"))},
		{DevicesUsed: -1},
	} {
		bad.Target, bad.Status, bad.TestedAt = compat.TargetCPU, compat.StatusPass, at(2)
		if _, err := s.RecordResult(ctx, "org/m", bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%d devices, sharding %v: %v, want ErrInvalid", bad.DevicesUsed, bad.Sharding, err)
		}
	}
}
