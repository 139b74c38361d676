package worker

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// TestStatusError: every 2xx is success, the protocol's refusals are its
// errors, and anything else (1xx, 3xx, 5xx) is a plain failure, retried.
func TestStatusError(t *testing.T) {
	for _, tc := range []struct {
		code int
		want error // nil: success; errAny: an error that is none of the protocol's
	}{
		{199, errAny},
		{200, nil},
		{204, nil},
		{299, nil},
		{300, errAny},
		{400, ErrRejected},
		{401, errNoToken},
		{403, errWrongToken},
		{404, ErrDisabled},
		{409, ErrConflict},
		{413, ErrRejected},
		{500, errAny},
		{503, errAny},
	} {
		err := statusError(tc.code)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("statusError(%d) = %v, want success", tc.code, err)
		case tc.want == errAny:
			if err == nil || errors.Is(err, ErrRejected) || errors.Is(err, ErrConflict) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrDisabled) {
				t.Errorf("statusError(%d) = %v, want a plain failure", tc.code, err)
			}
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("statusError(%d) = %v, want %v", tc.code, err, tc.want)
		}
	}
	if !errors.Is(errNoToken, ErrUnauthorized) || !errors.Is(errWrongToken, ErrUnauthorized) || errors.Is(errNoToken, errWrongToken) {
		t.Error("401 and 403 must both be ErrUnauthorized, and tell apart which")
	}
}

var errAny = errors.New("any plain failure")

// TestBrief: a server's answer is quoted in an error up to 200 characters
// (blanks around it trimmed), longer ones cut there with an ellipsis.
func TestBrief(t *testing.T) {
	at200 := strings.Repeat("x", 200)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"  \n lease not current \n", "lease not current"},
		{at200, at200},
		{" " + at200 + "\n", at200},
		{at200 + "y", at200 + "…"},
		{strings.Repeat("é", 150), strings.Repeat("é", 100) + "…"}, // 300 bytes: cut at byte 200
	} {
		if got := brief([]byte(tc.in)); got != tc.want {
			t.Errorf("brief(%d bytes) = %q (%d bytes), want %q", len(tc.in), got, len(got), tc.want)
		}
	}
}

// TestPostQuotesTheRefusalAndDecodesTheAnswer: a refusal's error names the
// route, the status and what the server said; a 200 with an answer that is
// not JSON is an error, not an empty success.
func TestPostQuotesTheRefusalAndDecodesTheAnswer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+fleet.PathResult, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "result for a job of another target", http.StatusBadRequest)
	})
	mux.HandleFunc("POST "+fleet.PathRegister, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>a proxy's page</html>"))
	})
	mux.HandleFunc("POST "+fleet.PathHeartbeat, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "bad headers", http.StatusTeapot)
			return
		}
		w.Write([]byte(`{"renewed":["l1"],"lost":["l2"]}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := newClient(srv.URL+"/", "tok", nil)
	err := c.result(t.Context(), fleet.ResultRequest{LeaseID: "l"})
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "(400: result for a job of another target)") ||
		!strings.Contains(err.Error(), fleet.PathResult) {
		t.Errorf("result refused: %v", err)
	}
	if _, err := c.register(t.Context(), fleet.Worker{ID: "w"}); err == nil || !strings.Contains(err.Error(), "answer") {
		t.Errorf("register answered with HTML: %v, want an error", err)
	}
	hb, err := c.heartbeat(t.Context(), "w", []string{"l1", "l2"})
	if err != nil || len(hb.Renewed) != 1 || hb.Renewed[0] != "l1" || len(hb.Lost) != 1 || hb.Lost[0] != "l2" {
		t.Errorf("heartbeat: %+v, %v", hb, err)
	}
}
