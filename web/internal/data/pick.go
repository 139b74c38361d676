package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// PickPair chooses the runtimes to compare among rts (every target, newest
// first) from the ?base= and ?head= keys: both as given; head alone with the
// runtime before it on its target; base alone with the newest on its
// target; neither, the two newest runtimes of the default target. A
// malformed key wraps httpx.ErrBadRequest; a runtime without results, or no
// runtime to pair with, wraps httpx.ErrNotFound (ErrTooFewRuntimes by default).
func PickPair(rts []store.RuntimeStats, baseKey, headKey string) (base, head store.RuntimeStats, err error) {
	find := func(name, key string) (store.RuntimeStats, int, error) {
		ref, err := compat.ParseRuntimeKey(key)
		if err != nil {
			return store.RuntimeStats{}, 0, fmt.Errorf("%w: %s: %v", httpx.ErrBadRequest, name, err)
		}
		on := OnTarget(rts, ref.Target)
		for i, st := range on {
			if st.Ref == ref {
				return st, i, nil
			}
		}
		return store.RuntimeStats{}, 0, fmt.Errorf("%w: %s: no results on runtime %s", httpx.ErrNotFound, name, key)
	}
	switch {
	case baseKey != "" && headKey != "":
		if base, _, err = find("base", baseKey); err != nil {
			return base, head, err
		}
		head, _, err = find("head", headKey)
	case headKey != "":
		var i int
		if head, i, err = find("head", headKey); err != nil {
			return base, head, err
		}
		on := OnTarget(rts, head.Ref.Target)
		if i+1 >= len(on) {
			return base, head, fmt.Errorf("%w: no runtime before %s on %s", httpx.ErrNotFound, headKey, head.Ref.Target)
		}
		base = on[i+1]
	case baseKey != "":
		if base, _, err = find("base", baseKey); err != nil {
			return base, head, err
		}
		head = OnTarget(rts, base.Ref.Target)[0]
	default:
		t := DefaultRuntimeTarget(rts)
		on := OnTarget(rts, t)
		if len(on) < 2 {
			return base, head, fmt.Errorf("%w: %w on %s", httpx.ErrNotFound, ErrTooFewRuntimes, show.TargetName(t))
		}
		head, base = on[0], on[1]
	}
	if err == nil && base.Ref == head.Ref {
		err = fmt.Errorf("%w: base and head are the same runtime; compare two", httpx.ErrBadRequest)
	}
	return base, head, err
}

// ResolveCompare picks the runtimes baseKey and headKey name (?base=,
// ?head=: PickPair) and reads a page of their comparison, limit models per
// list from cursor. It also returns every runtime and the data version it
// read.
func (r *Reader) ResolveCompare(ctx context.Context, baseKey, headKey string, limit int, cursor string) (*Comparison, []store.RuntimeStats, time.Time, error) {
	changed, err := r.Changed(ctx)
	if err != nil {
		return nil, nil, changed, fmt.Errorf("web: compare: %w", err)
	}
	rts, err := r.Runtimes(ctx, "", changed)
	if err != nil {
		return nil, nil, changed, fmt.Errorf("web: compare: %w", err)
	}
	base, head, err := PickPair(rts, baseKey, headKey)
	if err != nil {
		return nil, rts, changed, err
	}
	cmp, err := r.Compare(ctx, base, head, limit, cursor, nil, changed)
	if err != nil {
		return nil, rts, changed, fmt.Errorf("web: compare: %w", err)
	}
	return cmp, rts, changed, nil
}

// DefaultRuntimeTarget is the target whose runtimes the site shows when
// none is asked for: the first of compat.Targets (tpu, cpu, cuda) with a
// runtime; "" when there is none.
func DefaultRuntimeTarget(rts []store.RuntimeStats) compat.Target {
	for _, t := range compat.Targets {
		for _, st := range rts {
			if st.Ref.Target == t {
				return t
			}
		}
	}
	return ""
}

// ErrTooFewRuntimes says there is nothing to compare by default.
var ErrTooFewRuntimes = errors.New("fewer than two runtimes with results")
