package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// TestRecordErrorsNameTheRecord: a batch that fails names the record at
// fault (by its index) and stores none of the batch; a single RecordResult's
// error carries no batch index.
func TestRecordErrorsNameTheRecord(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a", "org/b")
	bad := result("tpu", "pass", at(2))
	bad.Target = "auto"

	_, err := s.RecordResult(ctx, "org/a", bad)
	if !errors.Is(err, store.ErrInvalid) || strings.Contains(err.Error(), "#") ||
		!strings.HasPrefix(err.Error(), "store: record result: ") || !strings.Contains(err.Error(), `"auto"`) {
		t.Errorf("RecordResult(bad target) = %v; want ErrInvalid naming the target, no batch index", err)
	}

	tests := []struct {
		name  string
		recs  []store.Record
		index string
	}{
		{"second of two", []store.Record{{ModelID: "org/a", Result: result("tpu", "pass", at(1))}, {ModelID: "org/b", Result: bad}}, "#1: "},
		{"first of two", []store.Record{{ModelID: "org/b", Result: bad}, {ModelID: "org/a", Result: result("tpu", "pass", at(1))}}, "#0: "},
		{"alone", []store.Record{{ModelID: "org/b", Result: bad}}, ""},
	}
	for _, tt := range tests {
		_, err := s.RecordResults(ctx, tt.recs)
		if !errors.Is(err, store.ErrInvalid) || (tt.index != "" && !strings.Contains(err.Error(), tt.index)) ||
			(tt.index == "" && strings.Contains(err.Error(), "#")) {
			t.Errorf("%s: RecordResults = %v; want ErrInvalid, index %q", tt.name, err, tt.index)
		}
	}
	for _, id := range []string{"org/a", "org/b"} {
		if h, err := s.History(ctx, id, "", 0); err != nil || len(h) != 0 {
			t.Errorf("%s: %d results stored by failed calls, %v; want none", id, len(h), err)
		}
	}
}
