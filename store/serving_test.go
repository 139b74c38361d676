package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

func TestServingRegistryRoundTrip(t *testing.T) {
	s := storetest.MustOpen(t)
	if _, err := s.ServingRegistry(ctx, serving.Version); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("before any: %v", err)
	}
	before, _ := s.Changed(ctx)
	r := serving.Registry{Version: "1.0", VLLMVersion: "0.9", Archs: map[string]compat.ServingKind{"A": compat.ServingGeneration, "B": compat.ServingPooling}}
	if err := s.PutServingRegistry(ctx, r); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.Changed(ctx); !after.After(before) {
		t.Errorf("a stored registry did not move the data's version (%v, %v): pages would keep old cells", before, after)
	}
	// a second read of the release replaces the first; another release stays apart
	r.Archs = map[string]compat.ServingKind{"A": compat.ServingMultimodal}
	if err := s.PutServingRegistry(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := s.PutServingRegistry(ctx, serving.Registry{Version: "2.0", Archs: map[string]compat.ServingKind{"C": compat.ServingGeneration}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ServingRegistry(ctx, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "1.0" || got.VLLMVersion != "0.9" || len(got.Archs) != 1 || got.Archs["A"] != compat.ServingMultimodal {
		t.Errorf("read back %+v", got)
	}
	for _, bad := range []serving.Registry{{Version: "3"}, {Archs: r.Archs}, {Version: "3", Archs: map[string]compat.ServingKind{"X": "chat"}}} {
		if err := s.PutServingRegistry(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("put %+v: %v", bad, err)
		}
	}
	if _, err := s.ServingRegistry(ctx, "3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused registry was kept: %v", err)
	}
}

// The table's serve filter keeps what serving.Declare says of each model,
// for every value of the filter.
func TestListModelsServe(t *testing.T) {
	s := storetest.MustOpen(t)
	archs := map[string][]string{
		"org/llama": {"LlamaForCausalLM"},
		"org/bert":  {"BertModel"},
		"org/gemma": {"Gemma3ForConditionalGeneration"},
		"org/bart":  {"BartForConditionalGeneration"},
		"org/first": {"Custom", "BertModel", "LlamaForCausalLM"}, // the first listed decides: pooling
		"org/none":  nil,                                         // no architectures: in no list
	}
	var ids []string
	for id := range archs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	upsert(t, s, ids...)
	for _, id := range ids {
		r := rd(1, [4]int{1, 1, 1, 1})
		r.Architectures = archs[id]
		setReadiness(t, s, id, "sha-"+id, 1, true, r)
	}
	serve := func(v string) ([]string, error) {
		models, _, err := s.ListModels(ctx, store.ModelQuery{Serve: v, Sort: "downloads", Limit: 100})
		var out []string
		for _, m := range models {
			out = append(out, m.ID)
		}
		slices.Sort(out)
		return out, err
	}
	// before the release's registry is read, nothing is declared either way
	for _, v := range []string{"generation", "pooling", "multimodal", store.ServeNone} {
		if got, err := serve(v); err != nil || len(got) != 0 {
			t.Errorf("serve=%s without a registry: %v %v", v, got, err)
		}
	}
	reg := serving.Registry{Version: serving.Version, Archs: map[string]compat.ServingKind{
		"LlamaForCausalLM": compat.ServingGeneration, "BertModel": compat.ServingPooling, "Gemma3ForConditionalGeneration": compat.ServingMultimodal}}
	if err := s.PutServingRegistry(ctx, reg); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, id := range ids {
		c, ok := serving.Declare(reg, id, archs[id], nil)
		switch {
		case !ok:
		case c.Served:
			want[string(*c.Kind)] = append(want[string(*c.Kind)], id)
		default:
			want[store.ServeNone] = append(want[store.ServeNone], id)
		}
	}
	if fmt.Sprint(want) != "map[generation:[org/llama] multimodal:[org/gemma] none:[org/bart] pooling:[org/bert org/first]]" {
		t.Fatalf("the fixture no longer reaches every branch: %v", want)
	}
	for _, v := range []string{"generation", "pooling", "multimodal", store.ServeNone} {
		got, err := serve(v)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[v]) {
			t.Errorf("serve=%s: %v, want %v (serving.Declare)", v, got, want[v])
		}
	}
	if got, _ := serve(""); len(got) != len(ids) {
		t.Errorf("no filter: %v", got)
	}
	if _, err := serve("chat"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("serve=chat: %v", err)
	}
	_, next, err := s.ListModels(ctx, store.ModelQuery{Serve: "pooling", Limit: 1})
	if err != nil || next == "" {
		t.Fatalf("page: %q %v", next, err)
	}
	if _, _, err := s.ListModels(ctx, store.ModelQuery{Serve: "generation", Limit: 1, Cursor: next}); err != nil {
		t.Errorf("cursor across serve filters: %v", err)
	}
}

// ?serve= on the measured tier: pass and fail are the judged measured
// verdicts, declared the models declared served that have none (never
// measured, the scanner's error, not judged for want of a reference), as
// the table's vLLM cell shows them; the declared kinds and none are as
// before, measured or not.
func TestListModelsServeMeasured(t *testing.T) {
	s := storetest.MustOpen(t)
	ids := []string{"org/bart", "org/err", "org/never", "org/noref", "org/oom", "org/pass"}
	upsert(t, s, ids...)
	for _, id := range ids {
		r := rd(1, [4]int{1, 1, 1, 1})
		r.Architectures = []string{"LlamaForCausalLM"}
		if id == "org/bart" {
			r.Architectures = []string{"BartForConditionalGeneration"}
		}
		setReadiness(t, s, id, "sha-"+id, 1, true, r)
	}
	if err := s.PutServingRegistry(ctx, serving.Registry{Version: serving.Version,
		Archs: map[string]compat.ServingKind{"LlamaForCausalLM": compat.ServingGeneration}}); err != nil {
		t.Fatal(err)
	}
	for id, st := range map[string]string{"org/err": "error", "org/noref": "skipped", "org/oom": "oom", "org/pass": "pass"} {
		m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: st}
		if st == "skipped" {
			m.Reason = compat.Ptr(compat.ServingReasonNoReference)
		}
		if err := s.PutServingResult(ctx, id, m); err != nil {
			t.Fatal(err)
		}
	}
	for v, want := range map[string][]string{
		store.ServePass:     {"org/pass"},
		store.ServeFail:     {"org/oom"},
		store.ServeDeclared: {"org/err", "org/never", "org/noref"},
		"generation":        {"org/err", "org/never", "org/noref", "org/oom", "org/pass"},
		store.ServeNone:     {"org/bart"},
	} {
		models, _, err := s.ListModels(ctx, store.ModelQuery{Serve: v, Sort: "downloads", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range models {
			got = append(got, m.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("serve=%s: %v, want %v", v, got, want)
		}
	}
	if got := store.ServeValues(); !slices.Equal(got, []string{"pass", "fail", "declared", "generation", "multimodal", "pooling", "none"}) {
		t.Errorf("ServeValues() = %v", got)
	}
}
