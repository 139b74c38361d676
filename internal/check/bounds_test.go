package check

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestCheckServerURL: an https server is asked like an http one; any
// other scheme is refused as a bad --server, before anything is sent.
func TestCheckServerURL(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(modelDetail{Model: compat.Model{ID: "gpt2", Result: passResult()}})
	}))
	defer srv.Close()
	if code, line := Check(context.Background(), srv.URL, "gpt2", compat.TargetTPU, "", "", srv.Client()); code != ExitPass {
		t.Errorf("https: code %d, %q", code, line)
	}
	if code, line := Check(context.Background(), "ftp://x", "gpt2", compat.TargetTPU, "", "", nil); code != ExitUnreachable ||
		!strings.Contains(line, `invalid --server URL "ftp://x"`) {
		t.Errorf("ftp: code %d, %q", code, line)
	}
}

// TestCheckAnswerWithoutID: JSON that is not a model (no id) is named as
// such; an answer that is not JSON says why it could not be read.
func TestCheckAnswerWithoutID(t *testing.T) {
	body := `{}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer srv.Close()
	if code, line := Check(context.Background(), srv.URL, "gpt2", compat.TargetTPU, "", "", nil); code != ExitUnreachable ||
		!strings.HasSuffix(line, "is not a scanner model: no model id") {
		t.Errorf("{}: code %d, %q", code, line)
	}
	body = `[1`
	if code, line := Check(context.Background(), srv.URL, "gpt2", compat.TargetTPU, "", "", nil); code != ExitUnreachable ||
		!strings.Contains(line, "is not a scanner model: unexpected end of JSON input") {
		t.Errorf("[1: code %d, %q", code, line)
	}
}

// TestDetailAndOneLine: a failure with nothing to say about it ends at its
// stage (no dangling colon); a message of exactly the limit is kept whole,
// one rune more is clipped.
func TestDetailAndOneLine(t *testing.T) {
	r := failResult()
	r.FailureClass, r.Op = nil, nil
	if got := detail(*r); got != " at forward" {
		t.Errorf("detail = %q, want %q", got, " at forward")
	}
	at := strings.Repeat("é", 120)
	if got := oneLine(at+"\nsecond", 120); got != at {
		t.Errorf("120 runes: %q", got)
	}
	if got := oneLine(at+"z", 120); got != at+"…" {
		t.Errorf("121 runes: %q", got)
	}
}
