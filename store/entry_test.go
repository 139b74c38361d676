package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// TestAbsurdFiguresAreRefused: a result whose figure is out of its range
// (a negative time, a fraction above 1, a float that prints as 309 digits)
// is refused with the field named, and nothing is stored.
func TestAbsurdFiguresAreRefused(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a")
	for field, edit := range map[string]func(r *compat.Result){
		"duration_s":             func(r *compat.Result) { r.DurationS = -4 },
		"metrics.mfu":            func(r *compat.Result) { r.Metrics.MFU = compat.Ptr(1e300) },
		"metrics.top1_agreement": func(r *compat.Result) { r.Metrics.Top1Agreement = compat.Ptr(7.0) },
		"metrics.tokens_per_s":   func(r *compat.Result) { r.Metrics.TokensPerS = compat.Ptr(1.5e308) },
		"runtime.device":         func(r *compat.Result) { r.Runtime.Device = strings.Repeat("d", 1<<20) },
	} {
		r := result(compat.TargetTPU, compat.StatusPass, at(1))
		edit(&r)
		_, err := s.RecordResult(ctx, "org/a", r)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s out of range: %v; want ErrInvalid naming %s", field, err, field)
		}
	}
	if h, err := s.History(ctx, "org/a", "", 0); err != nil || len(h) != 0 {
		t.Errorf("%d results stored (%v), want none", len(h), err)
	}
}

// TestTextIsCleanedWhereItEntersTheStore: ESC, BEL and C1 in a result's
// message and log tail (a harness's coloured output) never reach the pages
// or the CSV: the store keeps the text without them.
func TestTextIsCleanedWhereItEntersTheStore(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a")
	r := result(compat.TargetTPU, compat.StatusFail, at(1))
	r.Message = compat.Ptr("\x1b[31mRuntimeError\x1b[0m: boom\x07\u009b2J")
	r.LogTail = "\x1b[1;33mwarning\x1b[m: slow\r\nTraceback\u0085\n"
	r.Stages = []compat.StageRun{{Stage: compat.StageLoad, Note: "n\x1b]0;title\x07ote"}}
	record(t, s, "org/a", r)
	h, err := s.History(ctx, "org/a", "", 1)
	if err != nil || len(h) != 1 {
		t.Fatal(h, err)
	}
	got := h[0]
	if got.Message == nil || *got.Message != "RuntimeError: boom" {
		t.Errorf("message %q", strOf(got.Message))
	}
	if got.LogTail != "warning: slow\nTraceback\n" || got.Stages[0].Note != "note" {
		t.Errorf("log tail %q, note %q", got.LogTail, got.Stages[0].Note)
	}
	m, err := s.GetModel(ctx, "org/a", compat.TargetTPU)
	if err != nil || m.Result == nil || strings.ContainsAny(strOf(m.Result.Message), "\x1b\x07\u009b") {
		t.Errorf("current result %+v %v", m.Result, err)
	}
}

func strOf(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestTimesAfter2262NeverWrap: a time past what int64 nanoseconds hold is
// refused on a result, and never wraps into the past anywhere the store
// converts one (a model's last_modified from the Hub, a scan's start).
func TestTimesAfter2262NeverWrap(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a")
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := s.RecordResult(ctx, "org/a", result(compat.TargetTPU, compat.StatusPass, far))
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "tested_at") {
		t.Errorf("a result tested in 2300: %v; want ErrInvalid naming tested_at", err)
	}
	if rts, _ := s.Runtimes(ctx, ""); len(rts) != 0 {
		t.Errorf("runtimes %+v: the refused result made one", rts)
	}
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/far", SHA: "s", LastModified: far}}); err != nil {
		t.Fatal(err)
	}
	m, err := s.GetModel(ctx, "org/far", "")
	if err != nil {
		t.Fatal(err)
	}
	if m.LastModified.Year() < 2262 {
		t.Errorf("last_modified 2300 stored as %v: it wrapped", m.LastModified)
	}
	id, err := s.StartScan(ctx, store.Scan{Trigger: "test", StartedAt: far})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := s.GetScan(ctx, id); err != nil || sc.StartedAt.Year() < 2262 {
		t.Errorf("a scan started in 2300 reads back as %v (%v): it wrapped", sc.StartedAt, err)
	}
}
