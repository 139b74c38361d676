package hub

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

func TestMaxPages(t *testing.T) {
	tests := []struct {
		limit, pageLen, want int
	}{
		{100, 1000, 3},  // one page needed, +2
		{100, 10, 13},   // 10 needed, +1 (10%), +2
		{1500, 1000, 4}, // 2 needed, +2
		{100000, 1000, 112},
		{7, 0, 9}, // an empty page counts as one model a page
	}
	for _, tt := range tests {
		if got := maxPages(tt.limit, tt.pageLen); got != tt.want {
			t.Errorf("maxPages(%d, %d) = %d, want %d", tt.limit, tt.pageLen, got, tt.want)
		}
	}
}

// TestListingThatNeverEnds: a server that answers every page with a fresh
// next cursor (empty pages, the same page again, or one new model a page)
// must not keep the client paging: the listing fails with
// ErrEndlessListing after a bounded number of requests.
func TestListingThatNeverEnds(t *testing.T) {
	tests := []struct {
		mode     hubtest.Endless
		maxPages int // requests the client may send
	}{
		{hubtest.EndlessEmpty, 2},    // the second page adds nothing
		{hubtest.EndlessRepeat, 2},   // the second page adds nothing new
		{hubtest.EndlessTrickle, 13}, // 100 models at 10 a page: 10 pages + slack
	}
	for _, tt := range tests {
		t.Run(map[hubtest.Endless]string{1: "empty", 2: "repeat", 3: "trickle"}[tt.mode], func(t *testing.T) {
			e := newEnv(t, nil, manyRepos(25)...)
			e.hub.SetPageSize(10)
			e.hub.SetEndlessListing(tt.mode)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got, err := e.c.ListModels(ctx, ListOptions{Limit: 100})
			if !errors.Is(err, ErrEndlessListing) {
				t.Fatalf("ListModels = %d models, %v; want ErrEndlessListing", len(got), err)
			}
			if n := len(e.requests("hub", "/api/models")); n > tt.maxPages || n < 2 {
				t.Errorf("%d listing requests, want 2 to %d", n, tt.maxPages)
			}
			if !strings.Contains(err.Error(), "page") {
				t.Errorf("error %q does not say which page", err)
			}
		})
	}
	t.Run("a normal listing of fewer models than the limit ends", func(t *testing.T) {
		e := newEnv(t, nil, manyRepos(25)...)
		e.hub.SetPageSize(10)
		got, err := e.c.ListModels(context.Background(), ListOptions{Limit: 100})
		if err != nil || len(got) != 25 {
			t.Fatalf("ListModels = %d models, %v; want 25", len(got), err)
		}
		if n := len(e.requests("hub", "/api/models")); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
}

// TestListingDropsInvalidIDs: ids that are not Hub ids (traversal, markup,
// NUL, terminal escapes) never leave ListModels; each is warned about once,
// escaped in the log.
func TestListingDropsInvalidIDs(t *testing.T) {
	evil := []string{"../../etc/passwd", "<script>alert(1)</script>", "org/nul\x00byte", "org/\x1b]0;pwned\x07", "a/b/c", "org/ok--no"}
	repos := manyRepos(3)
	for i, id := range evil {
		repos = append(repos, hubtest.Repo{ID: id, Downloads: int64(2_000_000 - i),
			Files: map[string][]byte{"config.json": []byte(`{}`)}})
	}
	e := newEnv(t, nil, repos...)
	e.hub.SetPageSize(4) // invalid ids on several pages
	got, err := e.c.ListModels(context.Background(), ListOptions{Limit: 100, PipelineTags: nil})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("got %d models, want the 3 valid ones", len(got))
	}
	for _, m := range got {
		if !strings.HasPrefix(m.ID, "org/model-") {
			t.Errorf("listed %q", m.ID)
		}
	}
	logs := e.logs.String()
	if n := strings.Count(logs, "dropped a model whose id is not a Hub id"); n != len(evil) {
		t.Errorf("%d warnings, want %d (one per id):\n%s", n, len(evil), logs)
	}
	if strings.ContainsAny(logs, "\x00\x1b\x07") {
		t.Errorf("the log holds raw control characters:\n%q", logs)
	}
}
