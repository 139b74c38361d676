package hub

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestErrorString: an *Error says the request, the status, and whatever the
// Hub added (code, message, request id), and nothing for what it did not.
func TestErrorString(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{Status: 401, Code: "GatedRepo", Message: "Access to model x is restricted.", URL: "https://huggingface.co/x/resolve/abc/config.json",
			Method: "HEAD", RequestID: "Root=1-abc"},
			"HEAD https://huggingface.co/x/resolve/abc/config.json: 401 Unauthorized (GatedRepo): Access to model x is restricted. [request id Root=1-abc]"},
		{Error{Status: 503, URL: "https://cdn.example/blob"},
			"https://cdn.example/blob: 503 Service Unavailable"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error()\n got %q\nwant %q", got, tt.want)
		}
	}
}

// TestReason: the skip reason an answer carries, and the sentinel errors
// it matches.
func TestReason(t *testing.T) {
	for _, tt := range []struct {
		name     string
		e        Error
		want     compat.Reason
		sentinel error // nil: none
	}{
		{"gated", Error{Status: 403, Code: CodeGatedRepo}, compat.ReasonGated, ErrGated},
		{"missing file", Error{Status: 404, Code: CodeEntryNotFound}, compat.ReasonNotFound, ErrNotFound},
		{"missing revision", Error{Status: 404, Code: CodeRevisionNotFound}, compat.ReasonNotFound, ErrNotFound},
		{"missing repo by code, any URL", Error{Status: 404, Code: CodeRepoNotFound}, compat.ReasonNotFound, ErrNotFound},
		{"disabled, the exact message", Error{Status: 403, Message: " access to this resource is disabled. "}, compat.ReasonDisabled, ErrDisabled},
		{"disabled, another wording on a 403", Error{Status: 403, Message: "This model has been disabled by its owner"}, compat.ReasonDisabled, ErrDisabled},
		{"unavailable for legal reasons", Error{Status: 451, Message: "Unavailable for Legal Reasons"}, compat.ReasonDisabled, ErrDisabled},
		{"a 404 that mentions disabled is not", Error{Status: 404, Message: "disabled", repoURL: true}, compat.ReasonNotFound, ErrNotFound},
		{"a 500 that mentions legal reasons is not", Error{Status: 500, Message: "legal reasons"}, "", nil},
		{"a bare 401 on a repo", Error{Status: 401, Message: "Invalid username or password.", repoURL: true}, compat.ReasonNotFound, ErrNotFound},
		{"a bare 401 elsewhere", Error{Status: 401}, "", ErrUnauthorized},
		{"a bad token on a repo", Error{Status: 401, Message: "Invalid credentials in Authorization header", repoURL: true}, "", ErrUnauthorized},
		{"a bare 404 on a repo", Error{Status: 404, repoURL: true}, compat.ReasonNotFound, ErrNotFound},
		{"a bare 404 elsewhere", Error{Status: 404}, "", nil},
		{"a 403 without a word on the model", Error{Status: 403, repoURL: true}, "", ErrUnauthorized},
		{"rate limited", Error{Status: 429, repoURL: true}, "", ErrRateLimited},
		{"a server error", Error{Status: 502, repoURL: true}, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Reason(); got != tt.want {
				t.Errorf("Reason() = %q, want %q", got, tt.want)
			}
			var err error = &tt.e
			for _, s := range []error{ErrGated, ErrNotFound, ErrDisabled, ErrRateLimited, ErrUnauthorized} {
				if got := errors.Is(err, s); got != (s == tt.sentinel) {
					t.Errorf("errors.Is(%v) = %v", s, got)
				}
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abc", 4, "abc"},
		{"abcd", 3, "abc…"},
		{"", 0, ""},
	} {
		if got := truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// TestServerMessage: the Hub's explanation, from the header or the body.
func TestServerMessage(t *testing.T) {
	for _, tt := range []struct {
		name string
		hdr  http.Header
		body string
		want string
	}{
		{"header first", http.Header{"X-Error-Message": {" Repository not found "}}, `{"error":"other"}`, "Repository not found"},
		{"blank header: the body", http.Header{"X-Error-Message": {"  "}}, `{"error":"Invalid rev id"}`, "Invalid rev id"},
		{"a list of errors", nil, `{"error":["a","b"]}`, "a; b"},
		{"all the fields", nil, `{"error":"e","error_description":"d","errors":[{"message":"m1"},{"message":""},{"message":"m2"}]}`, "e; d; m1; m2"},
		{"plain text", nil, "  upstream timed out \n", "upstream timed out"},
		{"an HTML page says nothing", http.Header{"Content-Type": {"text/HTML; charset=utf-8"}}, "<html>oops</html>", ""},
		{"a long text is cut", nil, strings.Repeat("x", 600), strings.Repeat("x", 500) + "…"},
	} {
		if got := serverMessage(tt.hdr, []byte(tt.body)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestFirstHeader: the first of the named headers that is set.
func TestFirstHeader(t *testing.T) {
	h := http.Header{"X-Amzn-Trace-Id": {"Root=1"}, "X-Amz-Cf-Id": {"cf"}}
	if got := firstHeader(h, "X-Request-Id", "X-Amzn-Trace-Id", "X-Amz-Cf-Id"); got != "Root=1" {
		t.Errorf("firstHeader = %q, want Root=1", got)
	}
	if got := firstHeader(h, "X-Request-Id"); got != "" {
		t.Errorf("firstHeader of an absent header = %q", got)
	}
}
