package requests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
		{"a file of exactly the cap", with(func(m *hub.ModelInfo) { m.Siblings[1].Size = 10 << 30 }), "", ""},
		{"shards of exactly the model cap", with(func(m *hub.ModelInfo) {
			m.Siblings = []hub.Sibling{{Name: "model-00001-of-00002.safetensors", Size: 10 << 30}, {Name: "model-00002-of-00002.safetensors", Size: 10 << 30}}
		}), "", ""},
		{"a byte over the model cap", with(func(m *hub.ModelInfo) {
			m.Siblings = []hub.Sibling{{Name: "model-00001-of-00003.safetensors", Size: 10 << 30}, {Name: "model-00002-of-00003.safetensors", Size: 10 << 30},
				{Name: "model-00003-of-00003.safetensors", Size: 1}}
		}), ReasonTooLarge, "its weights are 20.0 GiB, over the scanner's 20.0 GiB cap per model"},
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
	// A cap of 0 is no cap: 30 GiB in one file passes the one that is 0.
	huge := with(func(m *hub.ModelInfo) { m.Siblings[1].Size = 30 << 30 })
	for _, c := range []Caps{{}, {MaxModelBytes: 40 << 30}, {MaxFileBytes: 40 << 30}} {
		if r := Admit(huge, c); r != nil {
			t.Errorf("caps %+v: %v", c, r)
		}
	}
}

// desk is a desk over a fresh store and a fake Hub with a few repos.
func desk(t *testing.T, queueCap int) (*Desk, *store.SQLite, *hubtest.Hub) {
	t.Helper()
	return deskWith(t, queueCap, func(*Config) {})
}

// deskWith is desk with its config changed by set first.
func deskWith(t *testing.T, queueCap int, set func(*Config)) (*Desk, *store.SQLite, *hubtest.Hub) {
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
	c := Config{Store: db, Hub: client, Caps: Caps{MaxFileBytes: 1 << 20, MaxModelBytes: 2048}, QueueCap: queueCap,
		Logger: slog.New(slog.DiscardHandler)}
	set(&c)
	d, err := New(c)
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

// TestAnUnreachableHubAnswersWithinSeconds: with the Hub client's own
// retries (1, 2, 4, 8 s of backoff on network errors), a question to a Hub
// that cannot be reached still ends within DefaultHubTimeout, as
// ErrHubUnavailable (issue 37: 13-16 s).
func TestAnUnreachableHubAnswersWithinSeconds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: every dial is refused
	client, err := hub.New(hub.Options{Endpoint: endpoint, CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Config{Store: storetest.MustOpen(t), Hub: client, QueueCap: 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = d.Ask(context.Background(), "org/real")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Ask took %v with the Hub unreachable, want at most 5 s", took)
	}
	if !errors.Is(err, ErrHubUnavailable) || ReasonOf(err) != ReasonHubUnavailable {
		t.Errorf("Ask: %v, want ErrHubUnavailable", err)
	}
}

func TestClaimAndDone(t *testing.T) {
	d, db, _ := desk(t, 10)
	ctx := context.Background()
	reqs := askAll(t, d, "org/real", "many/m1", "many/m2")
	ids, models, err := d.Claim(ctx, 2)
	if err != nil || len(ids) != 2 || models[0] != "org/real" || models[1] != "many/m1" {
		t.Fatalf("claim: %v %v %v", ids, models, err)
	}
	scanID := startScan(t, db)
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

// TestAModelTestedMeanwhileIsDone: a request whose model another scan
// tested after it was asked for (a scheduled or admin scan the requests
// gave way to) is done with that result when its own scan finds the
// model unchanged; a model without any result still fails.
func TestAModelTestedMeanwhileIsDone(t *testing.T) {
	d, db, _ := desk(t, 10)
	ctx := context.Background()
	reqs := askAll(t, d, "org/real", "many/m1")
	ids, models, _ := d.Claim(ctx, 2)
	other := startScan(t, db)
	recordPass(t, db, "org/real", &other)
	own := startScan(t, db)
	d.Done(ctx, ids, models, store.Scan{ID: own}, nil, false)
	if r, _ := d.Get(ctx, reqs[0].ID); r.State != store.RequestDone || r.Status != compat.StatusPass || r.ScanID == nil || *r.ScanID != other {
		t.Errorf("the model tested meanwhile: %+v; want done, pass, by scan %d", r, other)
	}
	if r, _ := d.Get(ctx, reqs[1].ID); r.State != store.RequestFailed || !strings.Contains(r.Message, "no result") {
		t.Errorf("the one without a result: %+v", r)
	}
}

func TestNewWantsAPositiveQueueCap(t *testing.T) {
	for _, n := range []int{0, -1} {
		if _, err := New(Config{Store: storetest.MustOpen(t), Hub: &outage{}, QueueCap: n}); err == nil {
			t.Errorf("New accepted a queue cap of %d", n)
		}
	}
	if _, err := New(Config{Store: storetest.MustOpen(t), Hub: &outage{}, QueueCap: 1}); err != nil {
		t.Errorf("a queue cap of 1: %v", err)
	}
}

// TestARenamedModelWithAResultIsRefused: a request under a model's old id
// is refused as tested when its new id has a result.
func TestARenamedModelWithAResultIsRefused(t *testing.T) {
	d, db, _ := desk(t, 10)
	ctx := context.Background()
	recordPass(t, db, "org/new-name", nil)
	if _, _, err := d.Ask(ctx, "org/old-name"); !errors.Is(err, ErrAlreadyTested) || !strings.Contains(err.Error(), "org/new-name") {
		t.Errorf("the old id of a tested model: %v", err)
	}
	if n, _ := db.OpenRequests(ctx); n != 0 {
		t.Errorf("%d requests queued", n)
	}
}

// recordPass records a passing result of model id, in scan scanID (nil:
// none).
func recordPass(t *testing.T, db *store.SQLite, id string, scanID *int64) {
	t.Helper()
	ctx := context.Background()
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: id, SHA: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordResult(ctx, id, compat.Result{Target: compat.TargetCPU, Status: compat.StatusPass, Revision: "x",
		TestedAt: time.Now(), ScanID: scanID, Runtime: compat.Runtime{Torch: "t"}}); err != nil {
		t.Fatal(err)
	}
}

// TestARefusalIsRememberedForItsTTL: the Hub is not asked again about a
// refused id until RefusalTTL has passed (a refusal exactly TTL old still
// stands).
func TestARefusalIsRememberedForItsTTL(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	d, _, h := deskWith(t, 10, func(c *Config) {
		c.RefusalTTL = time.Hour
		c.Now = func() time.Time { return time.Unix(0, now.Load()) }
	})
	for _, step := range []struct {
		at   time.Duration
		asks int // the Hub's questions about the id by then
	}{{0, 1}, {time.Minute, 1}, {time.Hour, 1}, {time.Hour + time.Nanosecond, 2}, {2 * time.Hour, 2}} {
		now.Store(t0.Add(step.at).UnixNano())
		if _, _, err := d.Ask(context.Background(), "nobody/missing"); ReasonOf(err) != ReasonNotFound {
			t.Fatalf("at +%v: %v", step.at, err)
		}
		if n := infoAsks(h)["nobody/missing"]; n != step.asks {
			t.Errorf("at +%v the Hub was asked %d times, want %d", step.at, n, step.asks)
		}
	}
}

// TestOnlyTheNewestRefusalsAreRemembered: past Refusals, the oldest
// refusal is forgotten (its id asks the Hub again); the newest Refusals
// are all kept.
func TestOnlyTheNewestRefusalsAreRemembered(t *testing.T) {
	d, _, h := deskWith(t, 10, func(c *Config) { c.Refusals = 2 })
	ask := func(id string, asks int) {
		t.Helper()
		if _, _, err := d.Ask(context.Background(), id); ReasonOf(err) != ReasonNotFound {
			t.Fatalf("%s: %v", id, err)
		}
		if n := infoAsks(h)[id]; n != asks {
			t.Errorf("%s: the Hub was asked %d times, want %d", id, n, asks)
		}
	}
	ask("nobody/a", 1)
	ask("nobody/b", 1)
	ask("nobody/a", 1) // two remembered
	ask("nobody/b", 1)
	ask("nobody/c", 1) // a, the oldest, is forgotten
	ask("nobody/b", 1)
	ask("nobody/c", 1)
	ask("nobody/a", 2)
}

// finishFails is a store that cannot record the outcome of one request.
type finishFails struct {
	*store.SQLite
	id int64
}

func (f finishFails) FinishRequest(ctx context.Context, id int64, fin store.RequestFinish) error {
	if id == f.id {
		return errors.New("disk I/O error")
	}
	return f.SQLite.FinishRequest(ctx, id, fin)
}

// TestTheDeskLogsWhatHappens: a new request and each finished one are
// logged to Config.Logger with the model; an outcome the store could not
// record is logged as an error, and the other requests still finish.
func TestTheDeskLogsWhatHappens(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	d, db, _ := deskWith(t, 10, func(c *Config) { c.Logger = log })
	ctx := context.Background()
	reqs := askAll(t, d, "org/real", "many/m1", "many/m2")
	d.cfg.Store = finishFails{SQLite: db, id: reqs[1].ID}
	ids, models, err := d.Claim(ctx, 3)
	if err != nil || len(ids) != 3 {
		t.Fatalf("claim: %v %v", ids, err)
	}
	scanID := startScan(t, db)
	recordPass(t, db, "org/real", &scanID)
	d.Done(ctx, ids, models, store.Scan{ID: scanID}, nil, false)
	if r, _ := d.Get(ctx, reqs[2].ID); r.State != store.RequestFailed {
		t.Errorf("the request after the one not recorded: %+v", r)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var r struct {
			Level, Msg, Model, State, Status, Err string
			RequestID                             int64 `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%s %s: %s #%d %s %s %s", r.Level, r.Msg, r.Model, r.RequestID, r.State, r.Status, r.Err))
	}
	want := []string{
		fmt.Sprintf("INFO test requested: org/real #%d   ", reqs[0].ID),
		fmt.Sprintf("INFO test requested: many/m1 #%d   ", reqs[1].ID),
		fmt.Sprintf("INFO test requested: many/m2 #%d   ", reqs[2].ID),
		fmt.Sprintf("INFO test request finished: org/real #%d done pass ", reqs[0].ID),
		fmt.Sprintf("ERROR test request: recording its outcome: many/m1 #%d   disk I/O error", reqs[1].ID),
		fmt.Sprintf("INFO test request finished: many/m2 #%d failed  ", reqs[2].ID),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// askAll asks for a test of each model, which must be queued.
func askAll(t *testing.T, d *Desk, ids ...string) []store.TestRequest {
	t.Helper()
	var reqs []store.TestRequest
	for _, id := range ids {
		r, created, err := d.Ask(context.Background(), id)
		if err != nil || !created {
			t.Fatalf("Ask(%s): %v %v", id, created, err)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

func startScan(t *testing.T, db *store.SQLite) int64 {
	t.Helper()
	id, err := db.StartScan(context.Background(), store.Scan{Trigger: "request", Target: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAScanThatFailedSaysWhy: a request whose scan ended with an error
// (not one to run again) fails with that error.
func TestAScanThatFailedSaysWhy(t *testing.T) {
	d, db, _ := desk(t, 10)
	ctx := context.Background()
	r := askAll(t, d, "org/real")[0]
	ids, models, _ := d.Claim(ctx, 1)
	scanID := startScan(t, db)
	d.Done(ctx, ids, models, store.Scan{ID: scanID}, errors.New("the fleet answered 500"), false)
	if r, _ := d.Get(ctx, r.ID); r.State != store.RequestFailed || r.Message != "the scan could not test it: the fleet answered 500" {
		t.Errorf("%+v", r)
	}
}
