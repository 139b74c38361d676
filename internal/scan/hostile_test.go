package scan

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// hostileScanner is faultScanner with short Hub deadlines.
func hostileScanner(t *testing.T, h *hubtest.Hub) *Scanner {
	t.Helper()
	s, _, _ := faultScanner(t, h)
	client, err := hub.New(hub.Options{Endpoint: h.URL(), CacheDir: s.CacheDir, Logger: quiet,
		StallTimeout: 300 * time.Millisecond, RequestTimeout: time.Second, MinTransferRate: 64 << 10,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	s.Hub = client
	return s
}

// TestScanAgainstAHostileHub runs whole scans against a Hub that
// misbehaves on purpose: each attack ends with a clear record, within
// bounds, and no model is blamed for what the server did.
func TestScanAgainstAHostileHub(t *testing.T) {
	ctx := context.Background()
	opts := Options{Mode: compat.ModeArch, Target: compat.TargetCPU}

	t.Run("a listing that never ends fails the scan", func(t *testing.T) {
		h := hubtest.New(t, faultRepos(4)...)
		h.SetPageSize(2)
		h.SetEndlessListing(hubtest.EndlessRepeat)
		s := hostileScanner(t, h)
		sc, err := s.Run(ctx, opts, Hooks{})
		if !errors.Is(err, ErrHub) || !errors.Is(err, hub.ErrEndlessListing) || sc.Status != store.ScanFailed {
			t.Fatalf("err %v, scan %s: want a failed scan", err, sc.Status)
		}
		if !strings.Contains(sc.Error, "does not end") {
			t.Errorf("scan error %q does not say the listing does not end", sc.Error)
		}
		if n := len(h.Requests()); n > 10 {
			t.Errorf("%d requests to a listing that never ends", n)
		}
	})

	t.Run("ids that are not Hub ids are never stored", func(t *testing.T) {
		repos := faultRepos(2)
		for _, id := range []string{"../../etc/passwd", "<script>x</script>", "evil/\x1b[2J", "nul/\x00"} {
			repos = append(repos, hubtest.Repo{ID: id, Downloads: 1000, Library: "transformers", PipelineTag: "text-generation",
				Files: map[string][]byte{"config.json": []byte(llamaConfig)}})
		}
		h := hubtest.New(t, repos...)
		s := hostileScanner(t, h)
		sc, err := s.Run(ctx, opts, Hooks{})
		if err != nil || sc.Planned != 2 {
			t.Fatalf("scan %+v, %v: want the 2 valid models planned", sc, err)
		}
		models, _, err := s.Store.(*store.SQLite).ListModels(ctx, store.ModelQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range models {
			if compat.ValidateModelID(m.ID) != nil {
				t.Errorf("stored %q", m.ID)
			}
		}
		if len(models) != 2 {
			t.Errorf("%d models stored, want 2", len(models))
		}
	})

	t.Run("a 2 GB config.json is refused, nothing stored", func(t *testing.T) {
		repos := faultRepos(2)
		h := hubtest.New(t, repos...)
		h.SetHugeFile("fault/m-0", "config.json", 2<<30, false)
		s := hostileScanner(t, h)
		if _, err := s.Run(ctx, opts, Hooks{}); err != nil {
			t.Fatal(err)
		}
		r, err := s.Store.LatestResult(ctx, "fault/m-0", compat.TargetCPU)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != compat.StatusError || r.FailureClass == nil || *r.FailureClass != compat.ClassConfigError ||
			r.Message == nil || !strings.Contains(*r.Message, "config.json") || !strings.Contains(*r.Message, "cap") {
			t.Errorf("result %s %v %v, want error/config_error naming config.json and its cap", r.Status, r.FailureClass, deref(r.Message))
		}
		if other, err := s.Store.LatestResult(ctx, "fault/m-1", compat.TargetCPU); err != nil || other.Status != compat.StatusPass {
			t.Errorf("the other model: %v %v", other.Status, err)
		}
		blobs, _ := filepath.Glob(filepath.Join(hub.RepoDir(s.CacheDir, "fault/m-0"), "blobs", "*"))
		if len(blobs) > 0 {
			t.Errorf("stored %v", blobs)
		}
	})

	t.Run("a dripping file ends that model in an error, the scan goes on", func(t *testing.T) {
		h := hubtest.New(t, faultRepos(2)...)
		h.Fault("/fault/m-0/resolve/", hubtest.Drip(50*time.Millisecond).Times(-1))
		s := hostileScanner(t, h)
		start := time.Now()
		if _, err := s.Run(ctx, opts, Hooks{}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("took %s", took)
		}
		r, err := s.Store.LatestResult(ctx, "fault/m-0", compat.TargetCPU)
		if err != nil || r.Status != compat.StatusError || r.Message == nil || !strings.Contains(*r.Message, "deadline") {
			t.Errorf("dripping model: %v %q %v, want an error naming the deadline", r.Status, deref(r.Message), err)
		}
		if other, err := s.Store.LatestResult(ctx, "fault/m-1", compat.TargetCPU); err != nil || other.Status != compat.StatusPass {
			t.Errorf("the other model: %v %v", other.Status, err)
		}
	})
}
