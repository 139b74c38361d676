package web

import (
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// This file shows where a failure signature is tracked (--known-issues,
// internal/knownissues decides which entry a signature falls under):
// wherever a signature is shown, its known issue is too, or "not tracked
// yet" (templates/watch.html, "known-issue"); the API's known_issue.

// knownIssue is the template helper: the entry of a signature (a string
// or *string), nil for none.
func (s *Server) knownIssue(sig any) *compat.KnownIssue {
	switch v := sig.(type) {
	case string:
		return s.known.Match(v)
	case *string:
		return s.known.MatchPtr(v)
	}
	return nil
}

// knowResult sets what the site adds to a result as it serves it: its
// known issue and its evidence (compat.EvidenceOf).
func (s *Server) knowResult(r *compat.Result) {
	if r != nil {
		r.KnownIssue = s.known.MatchPtr(r.Signature)
		e := compat.EvidenceOf(r)
		r.Evidence = &e
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
		es[i].KnownIssue = s.known.MatchPtr(es[i].Signature)
		e := compat.EvidenceOfEvent(es[i])
		es[i].Evidence = &e
	}
}

// knowItems sets the known issues of a comparison's list.
func (s *Server) knowItems(items []compareItemJSON) []compareItemJSON {
	for i := range items {
		items[i].KnownIssue = s.known.MatchPtr(items[i].Signature)
	}
	return items
}
