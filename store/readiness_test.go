package store_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// rd is a readiness with params n, needing devices on v5e, v5p, v6e, v7x,
// with the given hint codes.
func rd(n int64, devices [4]int, codes ...string) readiness.Readiness {
	src := readiness.SourceSafetensors
	r := readiness.Readiness{Params: &n, ParamsSource: &src, Hints: []readiness.Hint{}}
	if devices[0] > 0 {
		r.MinDevices = map[string]int{"v5e": devices[0], "v5p": devices[1], "v6e": devices[2], "v7x": devices[3]}
	}
	for _, c := range codes {
		r.Hints = append(r.Hints, readiness.Hint{Code: c, Severity: readiness.SeverityInfo, Text: c + " text"})
	}
	return r
}

func setReadiness(t *testing.T, s *store.SQLite, id, sha string, version int, full bool, r readiness.Readiness) {
	t.Helper()
	if err := s.SetReadiness(ctx, store.ReadinessUpdate{ModelID: id, SHA: sha, Version: version, Full: full, Readiness: r}); err != nil {
		t.Fatal(err)
	}
}

func readinessOf(t *testing.T, s *store.SQLite, id string) *readiness.Readiness {
	t.Helper()
	m, err := s.GetModel(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	return m.Readiness
}

func paramsOf(r *readiness.Readiness) int64 {
	if r == nil || r.Params == nil {
		return -1
	}
	return *r.Params
}

// A readiness from config.json is kept against the listing summary's of
// the same revision and rules; a new revision or rules version replaces it.
func TestSetReadiness(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a")
	if r := readinessOf(t, s, "org/a"); r != nil {
		t.Fatalf("readiness before any: %+v", r)
	}
	steps := []struct {
		name    string
		sha     string
		version int
		full    bool
		params  int64
		want    int64
	}{
		{"summary first", "s1", 1, false, 100, 100},
		{"config replaces summary", "s1", 1, true, 200, 200},
		{"summary does not replace config", "s1", 1, false, 300, 200},
		{"config replaces config", "s1", 1, true, 250, 250},
		{"new revision: summary replaces", "s2", 1, false, 400, 400},
		{"config for it", "s2", 1, true, 500, 500},
		{"new rules: summary replaces", "s2", 2, false, 600, 600},
	}
	for _, st := range steps {
		setReadiness(t, s, "org/a", st.sha, st.version, st.full, rd(st.params, [4]int{1, 1, 1, 1}))
		if got := paramsOf(readinessOf(t, s, "org/a")); got != st.want {
			t.Errorf("%s: params %d, want %d", st.name, got, st.want)
		}
	}
	err := s.SetReadiness(ctx, store.ReadinessUpdate{ModelID: "org/nope", SHA: "x", Version: 1, Readiness: rd(1, [4]int{})})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown model: %v", err)
	}
}

// Writing the same readiness again does not change the data's change time
// (the caches keyed by it stay).
func TestSetReadinessUnchangedKeepsCaches(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a")
	setReadiness(t, s, "org/a", "s1", 1, true, rd(7, [4]int{1, 1, 1, 1}))
	before, err := s.Changed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	setReadiness(t, s, "org/a", "s1", 1, true, rd(7, [4]int{1, 1, 1, 1}))
	after, _ := s.Changed(ctx)
	if !after.Equal(before) {
		t.Errorf("changed %v → %v for an identical readiness", before, after)
	}
	setReadiness(t, s, "org/a", "s1", 1, true, rd(8, [4]int{1, 1, 1, 1}))
	if again, _ := s.Changed(ctx); !again.After(before) {
		t.Errorf("a new readiness did not move the change time (%v, %v)", before, again)
	}
}

// The list carries readiness; ?hint= keeps the models with that hint code.
func TestListModelsHint(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a", "org/b", "org/c", "org/d")
	setReadiness(t, s, "org/a", "sha-org/a", 1, true, rd(1, [4]int{1, 1, 1, 1}, readiness.HintMoEDynamicRouting, readiness.HintDimsNotAligned))
	setReadiness(t, s, "org/b", "sha-org/b", 1, true, rd(2, [4]int{1, 1, 1, 1}, readiness.HintDimsNotAligned))
	setReadiness(t, s, "org/c", "sha-org/c", 1, false, rd(3, [4]int{}, readiness.HintMoEDynamicRouting))
	tests := []struct {
		hint string
		want []string
	}{
		{"", []string{"org/a", "org/b", "org/c", "org/d"}},
		{readiness.HintMoEDynamicRouting, []string{"org/a", "org/c"}},
		{readiness.HintDimsNotAligned, []string{"org/a", "org/b"}},
		{readiness.HintRemoteCode, nil},
	}
	for _, tt := range tests {
		models, _, err := s.ListModels(ctx, store.ModelQuery{Hint: tt.hint, Sort: "downloads"})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range models {
			ids = append(ids, m.ID)
		}
		if !slices.Equal(ids, tt.want) {
			t.Errorf("hint %q: %v, want %v", tt.hint, ids, tt.want)
		}
	}
	models, _, _ := s.ListModels(ctx, store.ModelQuery{Sort: "downloads"})
	if models[0].Readiness == nil || paramsOf(models[0].Readiness) != 1 || models[3].Readiness != nil {
		t.Errorf("list readiness: %+v / %+v", models[0].Readiness, models[3].Readiness)
	}
	if _, _, err := s.ListModels(ctx, store.ModelQuery{Hint: "nope"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("unknown hint: %v", err)
	}
	// a cursor made for one hint is a position with another too
	_, next, err := s.ListModels(ctx, store.ModelQuery{Hint: readiness.HintDimsNotAligned, Limit: 1})
	if err != nil || next == "" {
		t.Fatalf("page: %q %v", next, err)
	}
	if _, _, err := s.ListModels(ctx, store.ModelQuery{Hint: readiness.HintMoEDynamicRouting, Limit: 1, Cursor: next}); err != nil {
		t.Errorf("cursor across hints: %v", err)
	}
}

// The summary counts, among models whose min_devices is known, those that
// need a single device of each generation.
func TestSummaryFit(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a", "org/b", "org/c", "org/d", "org/e")
	setReadiness(t, s, "org/a", "x", 1, true, rd(1, [4]int{1, 1, 1, 1}))
	setReadiness(t, s, "org/b", "x", 1, true, rd(2, [4]int{2, 1, 1, 1}))
	setReadiness(t, s, "org/c", "x", 1, true, rd(3, [4]int{7, 2, 4, 2}))
	setReadiness(t, s, "org/d", "x", 1, false, rd(4, [4]int{})) // min_devices unknown
	sum, err := s.Summary(ctx, compat.TargetTPU)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"v5e": 1, "v5p": 2, "v6e": 2, "v7x": 2}
	if sum.Fit.Known != 3 || len(sum.Fit.One) != 4 {
		t.Fatalf("fit %+v", sum.Fit)
	}
	for g, n := range want {
		if sum.Fit.One[g] != n {
			t.Errorf("%s: %d fit one device, want %d", g, sum.Fit.One[g], n)
		}
	}
}

// A readiness reads back as it was set, on GetModel and in lists; hints
// read back as a list even when none were set (the contract's "hints": []).
func TestReadinessRoundTrip(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a", "org/b", "org/c")
	noHints := rd(3, [4]int{})
	noHints.Hints = nil
	tests := []struct {
		id   string
		set  readiness.Readiness
		want string // JSON of the readiness read back
	}{
		{"org/a", rd(1, [4]int{2, 1, 1, 1}, readiness.HintMoEDynamicRouting, readiness.HintDimsNotAligned),
			`{"params":1,"params_source":"safetensors","weights_bytes_bf16":null,"kv_bytes_per_token":null,` +
				`"min_devices":{"v5e":2,"v5p":1,"v6e":1,"v7x":1},"hints":[` +
				`{"code":"moe_dynamic_routing","severity":"info","text":"moe_dynamic_routing text"},` +
				`{"code":"dims_not_aligned","severity":"info","text":"dims_not_aligned text"}]}`},
		{"org/b", rd(2, [4]int{}),
			`{"params":2,"params_source":"safetensors","weights_bytes_bf16":null,"kv_bytes_per_token":null,"min_devices":null,"hints":[]}`},
		{"org/c", noHints,
			`{"params":3,"params_source":"safetensors","weights_bytes_bf16":null,"kv_bytes_per_token":null,"min_devices":null,"hints":[]}`},
	}
	for _, tt := range tests {
		setReadiness(t, s, tt.id, "sha-"+tt.id, 1, true, tt.set)
		if got := mustJSON(t, readinessOf(t, s, tt.id)); got != tt.want {
			t.Errorf("GetModel %s readiness:\n got %s\nwant %s", tt.id, got, tt.want)
		}
		models, _, err := s.ListModels(ctx, store.ModelQuery{Q: tt.id})
		if err != nil || len(models) != 1 {
			t.Fatalf("list %s: %d models, %v", tt.id, len(models), err)
		}
		if got := mustJSON(t, models[0].Readiness); got != tt.want {
			t.Errorf("ListModels %s readiness:\n got %s\nwant %s", tt.id, got, tt.want)
		}
	}
}
