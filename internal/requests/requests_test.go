package requests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

var llama = map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama"}

func TestAdmit(t *testing.T) {
	caps := Caps{MaxFileBytes: 10 << 30, MaxModelBytes: 20 << 30}
	ok := hub.ModelInfo{ID: "org/ok", PipelineTag: "text-generation", Library: "transformers", Config: llama,
		Siblings: []hub.Sibling{{Name: "config.json", Size: 700}, {Name: "model.safetensors", Size: 5 << 30}}}
	with := func(f func(*hub.ModelInfo)) hub.ModelInfo {
		m := ok
		m.Siblings = append([]hub.Sibling(nil), ok.Siblings...)
		f(&m)
		return m
	}
	for _, tc := range []struct {
		name   string
		info   hub.ModelInfo
		reason string // "" = admitted
		says   string
	}{
		{"a public transformers model", ok, "", ""},
		{"no weights (arch mode)", with(func(m *hub.ModelInfo) { m.Siblings = m.Siblings[:1] }), "", ""},
		{"sentence-transformers with a model_type", with(func(m *hub.ModelInfo) { m.Library = "sentence-transformers"; m.PipelineTag = "feature-extraction" }), "", ""},
		{"private", with(func(m *hub.ModelInfo) { m.Private = true }), ReasonPrivate, "private"},
		{"disabled", with(func(m *hub.ModelInfo) { m.Disabled = true }), ReasonDisabled, "disabled"},
		{"gated", with(func(m *hub.ModelInfo) { m.Gated = true }), ReasonGated, "gated"},
		{"custom code", with(func(m *hub.ModelInfo) { m.Tags = []string{"custom_code"} }), ReasonRemoteCode, "trust_remote_code"},
		{"auto_map", with(func(m *hub.ModelInfo) { m.Config = map[string]any{"model_type": "x", "auto_map": map[string]any{}} }), ReasonRemoteCode, "auto_map"},
		{"another library", with(func(m *hub.ModelInfo) { m.Library = "timm" }), ReasonLibrary, `library "timm" is not transformers`},
		{"no library, no config", with(func(m *hub.ModelInfo) { m.Library = ""; m.Config = nil }), ReasonLibrary, "not a transformers model"},
		{"an untested task", with(func(m *hub.ModelInfo) { m.PipelineTag = "text-to-image" }), ReasonTask, "text-to-image"},
		{"a file over the cap", with(func(m *hub.ModelInfo) { m.Siblings[1].Size = 11 << 30 }), ReasonTooLarge, "model.safetensors is 11.0 GiB, over the scanner's 10.0 GiB cap per file"},
		{"shards over the model cap", with(func(m *hub.ModelInfo) {
			m.Siblings = []hub.Sibling{{Name: "model-00001-of-00003.safetensors", Size: 8 << 30}, {Name: "model-00002-of-00003.safetensors", Size: 8 << 30},
				{Name: "model-00003-of-00003.safetensors", Size: 8 << 30}}
		}), ReasonTooLarge, "its weights are 24.0 GiB, over the scanner's 20.0 GiB cap per model"},
		{"a big file the checkpoint does not use", with(func(m *hub.ModelInfo) {
			m.Siblings = append(m.Siblings, hub.Sibling{Name: "onnx/model.safetensors", Size: 50 << 30})
		}), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Admit(tc.info, caps)
			if tc.reason == "" {
				if r != nil {
					t.Fatalf("refused: %v", r)
				}
				return
			}
			if r == nil || r.Reason != tc.reason || !strings.Contains(r.Message, tc.says) || !errors.Is(r, ErrRefused) {
				t.Fatalf("Admit = %+v, want %s saying %q", r, tc.reason, tc.says)
			}
		})
	}
}

// desk is a desk over a fresh store and a fake Hub with a few repos.
func desk(t *testing.T, queueCap int) (*Desk, *store.SQLite, *hubtest.Hub) {
	t.Helper()
	cfg, _ := json.Marshal(llama)
	repo := func(id string) hubtest.Repo {
		return hubtest.Repo{ID: id, PipelineTag: "text-generation", Library: "transformers", Config: llama,
			Files: map[string][]byte{"config.json": cfg}}
	}
	gated := repo("meta/gated")
	gated.Gated = "manual"
	private := repo("me/private")
	private.Private = true
	timm := hubtest.Repo{ID: "timm/resnet", PipelineTag: "image-classification", Library: "timm", Files: map[string][]byte{"config.json": []byte(`{}`)}}
	big := repo("org/big")
	big.Files["model.safetensors"] = make([]byte, 4096)
	big.LFS = map[string]bool{"model.safetensors": true}
	renamed := repo("org/new-name")
	renamed.RenamedFrom = []string{"org/old-name"}
	repos := []hubtest.Repo{repo("org/real"), repo("org/other"), gated, private, timm, big, renamed}
	for i := range 30 {
		repos = append(repos, repo(fmt.Sprintf("many/m%d", i)))
	}
	h := hubtest.New(t, repos...)
	client, err := hub.New(hub.Options{Endpoint: h.URL(), CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.MustOpen(t)
	d, err := New(Config{Store: db, Hub: client, Caps: Caps{MaxFileBytes: 1 << 20, MaxModelBytes: 2048}, QueueCap: queueCap,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return d, db, h
}

// infoAsks counts the Hub's model-info requests per id.
func infoAsks(h *hubtest.Hub) map[string]int {
	out := map[string]int{}
	for _, r := range h.Requests() {
		if rest, ok := strings.CutPrefix(r.Path, "/api/models/"); ok {
			id, _, _ := strings.Cut(rest, "/revision/")
			out[id]++
		}
	}
	return out
}

func TestAskRefusesWithTheReason(t *testing.T) {
	d, _, h := desk(t, 10)
	ctx := context.Background()
	for _, tc := range []struct {
		id, reason, says string
		kind             error
	}{
		{"meta/gated", ReasonGated, "gated on the Hub", ErrRefused},
		{"nobody/missing", ReasonNotFound, "the Hub has no public model nobody/missing", ErrRefused},
		{"me/private", ReasonNotFound, "no public model", ErrRefused},
		{"timm/resnet", ReasonLibrary, `library "timm" is not transformers`, ErrRefused},
		{"org/big", ReasonTooLarge, "over the scanner's", ErrRefused},
		{"../../etc", ReasonInvalidID, "model id", ErrInvalid},
		{"a/b/c", ReasonInvalidID, "model id", ErrInvalid},
		{"", ReasonInvalidID, "empty model id", ErrInvalid},
	} {
		_, _, err := d.Ask(ctx, tc.id)
		if !errors.Is(err, tc.kind) || ReasonOf(err) != tc.reason || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Ask(%q) = %v (reason %q), want %s saying %q", tc.id, err, ReasonOf(err), tc.reason, tc.says)
		}
	}
	// Asked again: the same answer, without the Hub.
	before := infoAsks(h)
	for _, id := range []string{"meta/gated", "nobody/missing", "NOBODY/MISSING", "timm/resnet"} {
		if _, _, err := d.Ask(ctx, id); !errors.Is(err, ErrRefused) {
			t.Errorf("again %s: %v", id, err)
		}
	}
	if after := infoAsks(h); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the Hub was asked again: %v, then %v", before, after)
	}
	if n := infoAsks(h)["../../etc"] + infoAsks(h)["a/b/c"]; n != 0 {
		t.Errorf("invalid ids reached the Hub")
	}
}

func TestAskQueuesOnePerModel(t *testing.T) {
	d, db, h := desk(t, 10)
	ctx := context.Background()
	notified := 0
	d.cfg.Notify = func() { notified++ }
	r, created, err := d.Ask(ctx, "org/real")
	if err != nil || !created || r.State != store.RequestQueued || r.Position != 1 || r.ModelID != "org/real" {
		t.Fatalf("Ask: %+v %v %v", r, created, err)
	}
	again, created, err := d.Ask(ctx, "org/REAL")
	if err != nil || created || again.ID != r.ID {
		t.Fatalf("again: %+v %v %v", again, created, err)
	}
	if notified != 1 {
		t.Errorf("notified %d times, want once", notified)
	}
	if n := infoAsks(h)["org/real"]; n != 1 {
		t.Errorf("the Hub was asked %d times about org/real", n)
	}
	// A renamed model is requested under its new id.
	r2, _, err := d.Ask(ctx, "org/old-name")
	if err != nil || r2.ModelID != "org/new-name" {
		t.Fatalf("renamed: %+v %v", r2, err)
	}
	// A model with a result is refused as tested.
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/other", SHA: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordResult(ctx, "org/other", compat.Result{Target: compat.TargetCPU, Status: compat.StatusPass, Revision: "x",
		TestedAt: time.Now(), Runtime: compat.Runtime{Torch: "t"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Ask(ctx, "org/other"); !errors.Is(err, ErrAlreadyTested) || ReasonOf(err) != ReasonAlreadyTested {
		t.Errorf("a tested model: %v", err)
	}
	// A model the scanner knows without a result may be asked for.
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: "many/m0", SHA: "y"}}); err != nil {
		t.Fatal(err)
	}
	if _, created, err := d.Ask(ctx, "many/m0"); err != nil || !created {
		t.Errorf("a known, untested model: %v %v", created, err)
	}
}

// TestAFloodStaysBounded: ten thousand made-up ids, each asked twice from
// many goroutines, and more real models than the queue holds: the Hub is
// asked at most once per id, and the queue never passes its cap.
func TestAFloodStaysBounded(t *testing.T) {
	const queueCap = 12
	d, db, h := desk(t, queueCap)
	ctx := context.Background()
	ids := make(chan string, 100)
	go func() {
		for round := range 2 {
			for i := range 10_000 {
				ids <- fmt.Sprintf("flood%d/made-up-%d", i%97, i)
				if i%400 == 0 { // real ones among them, more than the cap
					ids <- fmt.Sprintf("many/m%d", (i/400+round)%30)
				}
			}
		}
		close(ids)
	}()
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for id := range ids {
				_, created, err := d.Ask(ctx, id)
				key := "queued"
				switch {
				case err != nil:
					key = ReasonOf(err)
				case !created:
					key = "existing"
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
				if n, _ := db.OpenRequests(ctx); n > queueCap {
					t.Errorf("%d open requests, over the cap of %d", n, queueCap)
				}
			}
		})
	}
	wg.Wait()
	asks := infoAsks(h)
	for id, n := range asks {
		if n > 1 {
			t.Errorf("the Hub was asked %d times about %s", n, id)
		}
	}
	// Once the queue is full, a request is refused as such before the Hub
	// is asked; until then made-up ids are refused as not found.
	if counts["queued"] != queueCap || counts[ReasonQueueFull] == 0 || counts[ReasonNotFound] == 0 {
		t.Errorf("outcomes %v: want %d queued, some refused as full, some as not found", counts, queueCap)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != 2*(10_000+25) {
		t.Errorf("%d answers, want %d", total, 2*(10_000+25))
	}
	if counts[""] != 0 {
		t.Errorf("%d answers without a reason", counts[""])
	}
	if len(asks) > 10_000+30 {
		t.Errorf("the Hub was asked about %d ids", len(asks))
	}
}

// TestConcurrentAsksShareOneHubQuestion: many at once about one id ask
// the Hub once.
func TestConcurrentAsksShareOneHubQuestion(t *testing.T) {
	d, _, h := desk(t, 10)
	h.Fault("/api/models/", hubtest.Slow(200*time.Millisecond).Times(100))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, _, err := d.Ask(context.Background(), "nobody/slow"); ReasonOf(err) != ReasonNotFound {
				t.Errorf("Ask: %v", err)
			}
		})
	}
	wg.Wait()
	if n := infoAsks(h)["nobody/slow"]; n != 1 {
		t.Errorf("the Hub was asked %d times", n)
	}
}

// outage is a Hub that cannot be reached while down is set.
type outage struct {
	Hub
	down atomic.Bool
}

func (o *outage) ModelInfo(ctx context.Context, id, rev string) (hub.ModelInfo, error) {
	if o.down.Load() {
		return hub.ModelInfo{}, errors.New("dial tcp: connection refused")
	}
	return o.Hub.ModelInfo(ctx, id, rev)
}

func TestAHubOutageIsNotRemembered(t *testing.T) {
	d, _, _ := desk(t, 10)
	o := &outage{Hub: d.cfg.Hub}
	o.down.Store(true)
	d.cfg.Hub = o
	_, _, err := d.Ask(context.Background(), "org/real")
	if !errors.Is(err, ErrHubUnavailable) || ReasonOf(err) != ReasonHubUnavailable || strings.Contains(err.Error(), "dial") {
		t.Fatalf("during an outage: %v", err)
	}
	o.down.Store(false)
	if _, created, err := d.Ask(context.Background(), "org/real"); err != nil || !created {
		t.Errorf("after the outage: %v %v", created, err)
	}
}

func TestClaimAndDone(t *testing.T) {
	d, db, _ := desk(t, 10)
	ctx := context.Background()
	var reqs []store.TestRequest
	for _, id := range []string{"org/real", "many/m1", "many/m2"} {
		r, _, err := d.Ask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	ids, models, err := d.Claim(ctx, 2)
	if err != nil || len(ids) != 2 || models[0] != "org/real" || models[1] != "many/m1" {
		t.Fatalf("claim: %v %v %v", ids, models, err)
	}
	scanID, err := db.StartScan(ctx, store.Scan{Trigger: "request", Target: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/real", SHA: "x"}, {ID: "many/m1", SHA: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordResult(ctx, "org/real", compat.Result{Target: compat.TargetCPU, Status: compat.StatusFail, Revision: "x",
		TestedAt: time.Now(), ScanID: &scanID, Runtime: compat.Runtime{Torch: "t"}}); err != nil {
		t.Fatal(err)
	}
	d.Done(ctx, ids, models, store.Scan{ID: scanID}, nil, false)
	if r, _ := d.Get(ctx, reqs[0].ID); r.State != store.RequestDone || r.Status != compat.StatusFail {
		t.Errorf("the tested one: %+v", r)
	}
	if r, _ := d.Get(ctx, reqs[1].ID); r.State != store.RequestFailed || !strings.Contains(r.Message, "no result") {
		t.Errorf("the one without a result: %+v", r)
	}
	// A scan that could not run puts its requests back in the queue.
	ids, models, _ = d.Claim(ctx, 5)
	d.Done(ctx, ids, models, store.Scan{ID: scanID + 1}, errors.New("hub unreachable: list models"), true)
	if r, _ := d.Get(ctx, reqs[2].ID); r.State != store.RequestQueued || r.Position != 1 || !strings.Contains(r.Message, "hub unreachable") {
		t.Errorf("stopped: %+v", r)
	}
	if ids, _, _ := d.Claim(ctx, 5); len(ids) != 1 {
		t.Errorf("claim after the requeue: %v", ids)
	}
}
