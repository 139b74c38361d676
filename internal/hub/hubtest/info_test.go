package hubtest

import (
	"net/http/httptest"
	"testing"
)

func TestLookup(t *testing.T) {
	h := New(t, repos()...)
	h.SetToken("granted")
	tests := []struct {
		name, id, token string
		want            string // the repo found, or "" for none
		moved           string
		status          int
		code            string
	}{
		{"by id", "org/a", "", "org/a", "", 0, ""},
		{"old id", "old-a", "", "", "org/a", 0, ""},
		{"other letter case", "ORG/A", "", "", "org/a", 0, ""},
		{"missing anonymous", "org/zzz", "", "", "", 401, ""},
		{"missing with a token", "org/zzz", "other", "", "", 404, "RepoNotFound"},
		{"private anonymous", "org/c", "", "", "", 401, ""},
		{"private with another token", "org/c", "other", "", "", 404, "RepoNotFound"},
		{"private with the granted token", "org/c", "granted", "org/c", "", 0, ""},
		{"gated is found (its files decide)", "org/b", "", "org/b", "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/models/"+tt.id, nil)
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			got := h.lookup(r, tt.id)
			id := ""
			if got.repo != nil {
				id = got.repo.ID
			}
			if id != tt.want || got.moved != tt.moved || got.status != tt.status || got.code != tt.code {
				t.Fatalf("lookup(%q) = repo %q, moved %q, status %d, code %q; want %q, %q, %d, %q",
					tt.id, id, got.moved, got.status, got.code, tt.want, tt.moved, tt.status, tt.code)
			}
			w := httptest.NewRecorder()
			answered := got.answer(w, r, func(moved string) string { return "/to/" + moved })
			switch {
			case tt.want != "" && answered:
				t.Fatalf("answered %d for a repo to serve", w.Code)
			case tt.moved != "" && (!answered || w.Code != 307 || w.Header().Get("Location") != "/to/"+tt.moved):
				t.Fatalf("rename answered %v %d %q", answered, w.Code, w.Header().Get("Location"))
			case tt.status != 0 && (!answered || w.Code != tt.status || w.Header().Get("X-Error-Code") != tt.code):
				t.Fatalf("error answered %v %d %q", answered, w.Code, w.Header().Get("X-Error-Code"))
			}
		})
	}
}
