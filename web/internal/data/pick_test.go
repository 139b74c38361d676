package data

import (
	"errors"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// testTime is the tests' now.
var testTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func ref(t compat.Target, torch, tt, tf, h string) compat.RuntimeRef {
	return compat.RuntimeRef{Target: t, Torch: torch, TorchTPU: tt, Transformers: tf, Harness: h}
}

func stats(r compat.RuntimeRef, day int) store.RuntimeStats {
	at := testTime.Add(time.Duration(day) * 24 * time.Hour)
	return store.RuntimeStats{Ref: r, FirstSeen: at, LastSeen: at}
}

func TestPickPair(t *testing.T) {
	tpu1, tpu2, tpu3 := ref("tpu", "2", "0.1", "5", "1"), ref("tpu", "2", "0.2", "5", "1"), ref("tpu", "2", "0.3", "5", "1")
	cpu1, cpu2 := ref("cpu", "2", "", "5", "1"), ref("cpu", "2.1", "", "5", "1")
	// Newest first, targets interleaved as the store gives them.
	all := []store.RuntimeStats{stats(cpu2, 9), stats(tpu3, 8), stats(tpu2, 5), stats(cpu1, 2), stats(tpu1, 1)}
	for _, c := range []struct {
		name             string
		rts              []store.RuntimeStats
		base, head       string
		wantBase, wantHd compat.RuntimeRef
		wantErr          error
	}{
		{"default: tpu's two newest", all, "", "", tpu2, tpu3, nil},
		{"default without tpu: cpu", []store.RuntimeStats{stats(cpu2, 9), stats(cpu1, 2)}, "", "", cpu1, cpu2, nil},
		{"both given", all, tpu1.Key(), tpu3.Key(), tpu1, tpu3, nil},
		{"both given, reversed", all, tpu3.Key(), tpu1.Key(), tpu3, tpu1, nil},
		{"across targets", all, cpu1.Key(), tpu3.Key(), cpu1, tpu3, nil},
		{"head alone: the one before it", all, "", tpu2.Key(), tpu1, tpu2, nil},
		{"base alone: the newest on its target", all, cpu1.Key(), "", cpu1, cpu2, nil},
		{"head alone, the first", all, "", tpu1.Key(), compat.RuntimeRef{}, compat.RuntimeRef{}, httpx.ErrNotFound},
		{"base alone, the newest", all, tpu3.Key(), "", compat.RuntimeRef{}, compat.RuntimeRef{}, httpx.ErrBadRequest},
		{"same twice", all, tpu2.Key(), tpu2.Key(), compat.RuntimeRef{}, compat.RuntimeRef{}, httpx.ErrBadRequest},
		{"malformed", all, "tpu~<x>", tpu2.Key(), compat.RuntimeRef{}, compat.RuntimeRef{}, httpx.ErrBadRequest},
		{"unknown", all, ref("tpu", "9", "9", "9", "9").Key(), tpu2.Key(), compat.RuntimeRef{}, compat.RuntimeRef{}, httpx.ErrNotFound},
		{"one runtime only", []store.RuntimeStats{stats(tpu1, 1)}, "", "", compat.RuntimeRef{}, compat.RuntimeRef{}, ErrTooFewRuntimes},
		{"none", nil, "", "", compat.RuntimeRef{}, compat.RuntimeRef{}, ErrTooFewRuntimes},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, h, err := PickPair(c.rts, c.base, c.head)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("error %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil || b.Ref != c.wantBase || h.Ref != c.wantHd {
				t.Errorf("= %v, %v, %v; want %v, %v", b.Ref.Key(), h.Ref.Key(), err, c.wantBase.Key(), c.wantHd.Key())
			}
		})
	}
}
