package hub

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestMeta: what a resolve answer's headers say about a file: its blob name
// and size, and whether it is the pinned commit's.
func TestMeta(t *testing.T) {
	sha := strings.Repeat("a", 40)
	lfs := strings.Repeat("5", 64)
	git := strings.Repeat("1", 40)
	tests := []struct {
		name     string
		hdr      http.Header
		bodyLen  int64
		wantEtag string
		wantSize int64
		err      error
	}{
		{"git file", http.Header{"Etag": {`"` + git + `"`}, "X-Repo-Commit": {sha}}, 42, git, 42, nil},
		{"LFS file: the linked etag and size win", http.Header{"Etag": {`"` + git + `"`}, "X-Linked-Etag": {`"` + lfs + `"`},
			"X-Linked-Size": {"1000"}, "X-Repo-Commit": {sha}}, -1, lfs, 1000, nil},
		{"an empty LFS file", http.Header{"X-Linked-Etag": {lfs}, "X-Linked-Size": {"0"}}, -1, lfs, 0, nil},
		{"no commit header", http.Header{"Etag": {`W/"` + git + `"`}}, 7, git, 7, nil},
		{"size unknown", http.Header{"Etag": {git}}, -1, git, -1, nil},
		{"another commit", http.Header{"Etag": {git}, "X-Repo-Commit": {strings.Repeat("b", 40)}}, 42, "", 0, ErrIntegrity},
		{"no etag", http.Header{"X-Repo-Commit": {sha}}, 42, "", 0, ErrIntegrity},
		{"an etag that cannot name a blob", http.Header{"Etag": {`"../x"`}}, 42, "", 0, ErrIntegrity},
		{"a negative linked size", http.Header{"X-Linked-Etag": {lfs}, "X-Linked-Size": {"-1"}}, -1, "", 0, ErrIntegrity},
		{"a linked size that is no number", http.Header{"X-Linked-Etag": {lfs}, "X-Linked-Size": {"1e3"}}, -1, "", 0, ErrIntegrity},
	}
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := &download{c: c, id: "acme/tiny", sha: sha}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := d.meta(&http.Response{Header: tt.hdr}, tt.bodyLen)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || src != nil {
					t.Fatalf("meta = %+v, %v; want %v", src, err, tt.err)
				}
				return
			}
			if err != nil || src.etag != tt.wantEtag || src.size != tt.wantSize {
				t.Fatalf("meta = %+v, %v; want etag %s, size %d", src, err, tt.wantEtag, tt.wantSize)
			}
		})
	}
}
