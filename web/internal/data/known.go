package data

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/knownissues"
)

// This file shows where a failure signature is tracked (--known-issues,
// internal/knownissues decides which entry a signature falls under):
// wherever a signature is shown, its known issue is too, or "not tracked
// yet" (templates/watch.html, "known-issue"); the API's known_issue.

// Known is the known-issues table in use (--known-issues) and the data
// version of its last replacement: every page, answer and ETag made with
// the old table is stale from then on.
type Known struct {
	table atomic.Pointer[knownissues.Table]
	at    atomic.Int64 // unix nanoseconds; 0 while the table is the first one
}

// NewKnown holds t.
func NewKnown(t knownissues.Table) *Known {
	k := &Known{}
	k.table.Store(&t)
	return k
}

// Table is the table in use.
func (k *Known) Table() *knownissues.Table { return k.table.Load() }

// Set replaces the table (serve reloads the file on SIGHUP) and moves the
// data version of st (the store Versioned wraps) forward.
func (k *Known) Set(ctx context.Context, st Store, t knownissues.Table) {
	k.table.Store(&t)
	next := time.Now().UnixNano()
	if c, err := st.Changed(ctx); err == nil && !c.IsZero() {
		next = max(next, c.UnixNano()+1)
	}
	for {
		old := k.at.Load()
		if k.at.CompareAndSwap(old, max(next, old+1)) {
			return
		}
	}
}

// Versioned is st whose data version (Changed) also moves with the
// known-issues table: the later of the store's last change and the
// table's last replacement.
func (k *Known) Versioned(st Store) Store { return knownVersion{Store: st, at: &k.at} }

// knownVersion is Versioned's store.
type knownVersion struct {
	Store
	at *atomic.Int64 // unix nanoseconds; 0 while the table is the first one
}

func (k knownVersion) Changed(ctx context.Context) (time.Time, error) {
	c, err := k.Store.Changed(ctx)
	if err != nil {
		return c, err
	}
	if at := k.at.Load(); at != 0 && (c.IsZero() || at > c.UnixNano()) {
		return time.Unix(0, at).UTC(), nil
	}
	return c, nil
}

// Issue is the template helper: the entry of a signature (a string or
// *string), nil for none.
func (k *Known) Issue(sig any) *compat.KnownIssue {
	switch v := sig.(type) {
	case string:
		return k.Table().Match(v)
	case *string:
		return k.Table().MatchPtr(v)
	}
	return nil
}

// Result sets what the site adds to a result as it serves it: its known
// issue and its evidence (compat.EvidenceOf).
func (k *Known) Result(r *compat.Result) {
	if r != nil {
		r.KnownIssue = k.Table().MatchPtr(r.Signature)
		e := compat.EvidenceOf(r)
		r.Evidence = &e
		if len(r.Modes) > 0 { // a copy: the result may be a cached one's
			modes := make(map[string]compat.Verdict, len(r.Modes))
			for k, v := range r.Modes {
				me := compat.EvidenceOfMode(r, k)
				v.Evidence = &me
				modes[k] = v
			}
			r.Modes = modes
		}
		if r.TPUOps != nil && r.Target != compat.TargetTPU { // a copy: the result may be a cached one's
			p := *r.TPUOps
			pe := compat.EvidenceOfPrediction(p)
			p.Evidence = &pe
			r.TPUOps = &p
		}
	}
}

// Results sets the known issues of results.
func (k *Known) Results(rs []compat.Result) {
	for i := range rs {
		k.Result(&rs[i])
	}
}

// Events sets the known issues and the evidence of status changes.
func (k *Known) Events(es []compat.Event) {
	for i := range es {
		es[i].KnownIssue = k.Table().MatchPtr(es[i].Signature)
		e := compat.EvidenceOfEvent(es[i])
		es[i].Evidence = &e
	}
}
