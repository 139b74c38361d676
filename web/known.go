package web

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

// knownIssues is the table in use.
func (s *Server) knownIssues() *knownissues.Table { return s.known.Load() }

// SetKnownIssues replaces the known-issues table (serve reloads the file on
// SIGHUP). Every page, answer and ETag made with the old table is stale
// from then on: the data version the caches are keyed by moves forward.
func (s *Server) SetKnownIssues(ctx context.Context, t knownissues.Table) {
	s.known.Store(&t)
	next := time.Now().UnixNano()
	if c, err := s.store.Changed(ctx); err == nil && !c.IsZero() {
		next = max(next, c.UnixNano()+1)
	}
	for {
		old := s.knownAt.Load()
		if s.knownAt.CompareAndSwap(old, max(next, old+1)) {
			return
		}
	}
}

// knownVersion is the server's Store, whose data version (Changed) also
// moves with the known-issues table: the later of the store's last change
// and the table's last replacement.
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

// knownIssue is the template helper: the entry of a signature (a string
// or *string), nil for none.
func (s *Server) knownIssue(sig any) *compat.KnownIssue {
	switch v := sig.(type) {
	case string:
		return s.knownIssues().Match(v)
	case *string:
		return s.knownIssues().MatchPtr(v)
	}
	return nil
}

// knowResult sets what the site adds to a result as it serves it: its
// known issue and its evidence (compat.EvidenceOf).
func (s *Server) knowResult(r *compat.Result) {
	if r != nil {
		r.KnownIssue = s.knownIssues().MatchPtr(r.Signature)
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

// knowResults sets the known issues of results.
func (s *Server) knowResults(rs []compat.Result) {
	for i := range rs {
		s.knowResult(&rs[i])
	}
}

// knowEvents sets the known issues and the evidence of status changes.
func (s *Server) knowEvents(es []compat.Event) {
	for i := range es {
		es[i].KnownIssue = s.knownIssues().MatchPtr(es[i].Signature)
		e := compat.EvidenceOfEvent(es[i])
		es[i].Evidence = &e
	}
}

// knowItems sets the known issues of a comparison's list.
func (s *Server) knowItems(items []compareItemJSON) []compareItemJSON {
	for i := range items {
		items[i].KnownIssue = s.knownIssues().MatchPtr(items[i].Signature)
	}
	return items
}
