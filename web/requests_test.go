package web

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// askServer is a server with test requests on, over a fake Hub with a
// public transformers model, a gated one, one of another library, and
// more public ones (many/m0…); org/tested has a result, org/known is in
// the table without one.
func askServer(t *testing.T, cfg Config, queueCap int) (*testServer, *hubtest.Hub) {
	t.Helper()
	llama := map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama"}
	repo := func(id string) hubtest.Repo {
		return hubtest.Repo{ID: id, PipelineTag: "text-generation", Library: "transformers", Config: llama,
			Files: map[string][]byte{"config.json": []byte(`{"model_type": "llama"}`)}}
	}
	gated := repo("meta/gated")
	gated.Gated = "auto"
	repos := []hubtest.Repo{repo("org/real"), repo("org/known"), gated,
		{ID: "timm/resnet", PipelineTag: "image-classification", Library: "timm", Files: map[string][]byte{"config.json": []byte(`{}`)}}}
	for i := range 10 {
		repos = append(repos, repo(fmt.Sprintf("many/m%d", i)))
	}
	h := hubtest.New(t, repos...)
	client, err := hub.New(hub.Options{Endpoint: h.URL(), CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.MustOpen(t)
	desk, err := requests.New(requests.Config{Store: db, Hub: client, QueueCap: queueCap,
		Caps: requests.Caps{MaxFileBytes: hub.DefaultMaxFileBytes, MaxModelBytes: hub.DefaultMaxModelBytes}, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Requests = db, desk
	ts := newTestServer(t, 0, 0, cfg)
	ts.db = db
	ts.upsert(t, store.ModelUpsert{ID: "org/tested"}, store.ModelUpsert{ID: "org/known"})
	ts.record(t, "org/tested", passOn(compat.TargetCPU, testTime, 10))
	return ts, h
}

// send sends a request with a body through the app.
func (ts *testServer) send(t *testing.T, method, target, body string, header map[string]string) response {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := ts.app.Test(req, 10_000)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (ts *testServer) ask(t *testing.T, model string, header map[string]string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	body, _ := json.Marshal(map[string]string{"model": model})
	return ts.send(t, http.MethodPost, "/api/v1/requests", string(body), h)
}

func TestAskTheAPI(t *testing.T) {
	ts, _ := askServer(t, Config{PublicURL: "https://compat.example.org"}, 10)
	r := ts.ask(t, "org/real", nil)
	if r.status != http.StatusAccepted {
		t.Fatalf("ask: %d %s", r.status, r.body)
	}
	req := decode[map[string]any](t, r)
	id := int64(req["id"].(float64))
	if req["state"] != "queued" || req["position"] != 1.0 || req["model"] != "org/real" || req["started_at"] != nil || req["status"] != nil ||
		req["url"] != fmt.Sprintf("https://compat.example.org/requests/%d", id) || req["model_url"] != "https://compat.example.org/models/org/real" {
		t.Errorf("request %v", req)
	}
	if loc := r.header.Get("Location"); loc != fmt.Sprintf("https://compat.example.org/api/v1/requests/%d", id) {
		t.Errorf("Location %q", loc)
	}
	got := decode[map[string]any](t, ts.get(t, fmt.Sprintf("/api/v1/requests/%d", id)))
	if got["id"] != req["id"] || got["state"] != "queued" || got["position"] != 1.0 {
		t.Errorf("GET: %v", got)
	}
	// Asking again for the model: its open request.
	if again := decode[map[string]any](t, ts.ask(t, "ORG/real", nil)); again["id"] != req["id"] {
		t.Errorf("again: %v", again)
	}
	for _, tc := range []struct {
		model  string
		status int
		reason string
		says   string
	}{
		{"meta/gated", 422, "gated", "gated on the Hub"},
		{"nobody/missing", 422, "not_found", "no public model nobody/missing"},
		{"timm/resnet", 422, "unsupported_library", `library "timm" is not transformers`},
		{"org/tested", 409, "already_tested", "already has a result"},
		{"../etc/passwd", 400, "invalid_id", "model id"},
		{"", 400, "invalid_id", "empty model id"},
	} {
		r := ts.ask(t, tc.model, nil)
		body := decode[map[string]string](t, r)
		if r.status != tc.status || body["reason"] != tc.reason || !strings.Contains(body["error"], tc.says) {
			t.Errorf("%q: %d %v, want %d %s saying %q", tc.model, r.status, body, tc.status, tc.reason, tc.says)
		}
	}
	for _, tc := range []struct {
		name, body, ctype string
		status            int
	}{
		{"a form", "model=org/real", "application/x-www-form-urlencoded", 415},
		{"text", `{"model": "org/real"}`, "text/plain", 415},
		{"no type", `{"model": "org/real"}`, "", 415},
		{"unknown field", `{"model": "org/real", "priority": 1}`, "application/json", 400},
		{"not json", `{"model": `, "application/json; charset=utf-8", 400},
	} {
		r := ts.send(t, http.MethodPost, "/api/v1/requests", tc.body, map[string]string{"Content-Type": tc.ctype})
		if r.status != tc.status || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.status)
		}
	}
	for _, path := range []string{"/api/v1/requests/999", "/api/v1/requests/abc", "/api/v1/requests/0"} {
		if r := ts.get(t, path); r.status != 404 || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	// A cross-origin browser may not post: the preflight grants GET only.
	r = ts.do(t, http.MethodOptions, "/api/v1/requests", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
	if strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight allows POST: %v", r.header)
	}
}

// TestAFloodFromOneClientIsLimited: one client gets its hourly share and
// then 429 with Retry-After, asking the Hub nothing more; another client
// still may ask; and the queue never passes its cap.
func TestAFloodFromOneClientIsLimited(t *testing.T) {
	ts, h := askServer(t, Config{RequestRate: 3, TrustedProxies: []string{"0.0.0.0/32"}}, 4)
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	var codes []int
	for i := range 50 {
		codes = append(codes, ts.ask(t, fmt.Sprintf("flood/made-up-%d", i), from("198.51.100.1")).status)
	}
	if codes[0] != 422 || codes[2] != 422 || codes[3] != 429 || codes[49] != 429 {
		t.Errorf("statuses %v: want three refusals, then 429", codes)
	}
	r := ts.ask(t, "flood/more", from("198.51.100.1"))
	if r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "at most 3 test requests an hour") {
		t.Errorf("limited: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	asked := 0
	for _, q := range h.Requests() {
		if strings.HasPrefix(q.Path, "/api/models/flood/") {
			asked++
		}
	}
	if asked != 3 {
		t.Errorf("the Hub was asked %d times for one client's flood, want 3", asked)
	}
	// Other clients: the queue's cap, then a clear refusal.
	var states []string
	for i := range 6 {
		r := ts.ask(t, fmt.Sprintf("many/m%d", i), from(fmt.Sprintf("198.51.100.%d", 10+i)))
		states = append(states, fmt.Sprint(r.status))
		if r.status == 429 && !strings.Contains(r.body, `"reason":"queue_full"`) {
			t.Errorf("full queue: %s", r.body)
		}
	}
	if want := "202 202 202 202 429 429"; strings.Join(states, " ") != want {
		t.Errorf("statuses %v, want %s (a cap of 4)", states, want)
	}
	if n, _ := ts.db.OpenRequests(t.Context()); n != 4 {
		t.Errorf("%d open requests, cap 4", n)
	}
}

var formField = regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`)

// formOf reads the request form's fields from a page.
func formOf(t *testing.T, page string) url.Values {
	t.Helper()
	if !strings.Contains(page, `<form class="request-test" method="post" action="/requests">`) {
		t.Fatalf("no request form on the page")
	}
	v := url.Values{}
	for _, m := range formField.FindAllStringSubmatch(page, -1) {
		v.Set(m[1], strings.ReplaceAll(m[2], "&#43;", "+"))
	}
	return v
}

func TestTheRequestForm(t *testing.T) {
	ts, _ := askServer(t, Config{}, 10)
	post := func(v url.Values, header map[string]string) response {
		h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
		for k, x := range header {
			h[k] = x
		}
		return ts.send(t, http.MethodPost, "/requests", v.Encode(), h)
	}
	// A model in the table without a result has the form; one with a result has none.
	page := ts.get(t, "/models/org/known").body
	form := formOf(t, page)
	if form.Get("model") != "org/known" || form.Get("token") == "" || form.Get("t") == "" {
		t.Fatalf("form %v", form)
	}
	if strings.Contains(ts.get(t, "/models/org/tested").body, "Request a test") {
		t.Error("a tested model offers a request")
	}

	// Posts from other sites are refused, whatever the token.
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Origin": "https://evil.example"},
		{"Origin": "null"},
	} {
		if r := post(form, h); r.status != 403 || !strings.Contains(r.body, "must come from this site") || !strings.Contains(r.body, "<html") {
			t.Errorf("%v: %d %.200s", h, r.status, r.body)
		}
	}
	// A token for another model, a made-up one, none: refused.
	other := formOf(t, ts.get(t, "/models/new/model").body)
	for name, v := range map[string]url.Values{
		"another model's token": {"model": {"org/known"}, "t": {other.Get("t")}, "token": {other.Get("token")}},
		"a made-up token":       {"model": {"org/known"}, "t": {form.Get("t")}, "token": {strings.Repeat("0", 64)}},
		"no token":              {"model": {"org/known"}},
	} {
		if r := post(v, nil); r.status != 403 || !strings.Contains(r.body, "expired") {
			t.Errorf("%s: %d %.200s", name, r.status, r.body)
		}
	}
	if n, _ := ts.db.OpenRequests(t.Context()); n != 0 {
		t.Fatalf("%d requests queued by refused posts", n)
	}

	// The form from the page itself, as a browser sends it: queued, and its page says where.
	r := post(form, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"})
	if r.status != http.StatusSeeOther || !regexp.MustCompile(`^/requests/\d+$`).MatchString(r.header.Get("Location")) {
		t.Fatalf("post: %d %q %s", r.status, r.header.Get("Location"), r.body)
	}
	status := ts.get(t, r.header.Get("Location"))
	if status.status != 200 || !strings.Contains(status.body, "<strong>queued</strong>, number 1 in the queue") ||
		!strings.Contains(status.body, `<body data-refresh="30">`) || !strings.Contains(status.body, "data-stop-refresh") {
		t.Errorf("request page: %d %s", status.status, status.body)
	}
	// The model's page now shows the request, not the form.
	page = ts.get(t, "/models/org/known").body
	if strings.Contains(page, `<form class="request-test"`) || !strings.Contains(page, "<strong>queued</strong>") {
		t.Errorf("model page after the request")
	}

	// A model the scanner does not know: 404, with the form; asked for, its state.
	unknown := ts.get(t, "/models/org/real")
	if unknown.status != 404 || !strings.Contains(unknown.body, "has not tested this model") {
		t.Fatalf("unknown model: %d", unknown.status)
	}
	if r := post(formOf(t, unknown.body), nil); r.status != http.StatusSeeOther {
		t.Fatalf("post for an unknown model: %d %s", r.status, r.body)
	}
	if again := ts.get(t, "/models/org/real"); again.status != 404 || !strings.Contains(again.body, "number 2 in the queue") || strings.Contains(again.body, `<form class="request-test"`) {
		t.Errorf("unknown model after the request: %d", again.status)
	}
	// A refused request says why, on a page.
	if r := post(formOf(t, ts.get(t, "/models/meta/gated").body), nil); r.status != 422 || !strings.Contains(r.body, "gated on the Hub") {
		t.Errorf("gated: %d %.300s", r.status, r.body)
	}
	// Not an id: a plain 404 page, no form.
	if r := ts.get(t, "/models/a/b/c"); r.status != 404 || strings.Contains(r.body, "request-test") {
		t.Errorf("an invalid id: %d", r.status)
	}
	if r := ts.get(t, "/requests/12345"); r.status != 404 {
		t.Errorf("an unknown request's page: %d", r.status)
	}
}

func TestRequestsOff(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "org/known"})
	if r := ts.send(t, http.MethodPost, "/api/v1/requests", `{"model":"a/b"}`, map[string]string{"Content-Type": "application/json"}); r.status != 404 {
		t.Errorf("POST /api/v1/requests: %d", r.status)
	}
	if r := ts.send(t, http.MethodPost, "/requests", "model=a/b", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); r.status != 404 {
		t.Errorf("POST /requests: %d", r.status)
	}
	if strings.Contains(ts.get(t, "/models/org/known").body, "request-test") || ts.get(t, "/models/org/unknown").status != 404 {
		t.Error("a form without requests")
	}
	if strings.Contains(ts.get(t, "/api/v1/openapi.json").body, "/api/v1/requests") {
		t.Error("the OpenAPI document lists the request routes")
	}
}
