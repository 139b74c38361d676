package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/badge"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

func TestBadgeRoutes(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "Qwen/Qwen3-0.6B", Aliases: []string{"Qwen/Old"}}, store.ModelUpsert{ID: "gpt2"})
	ts.record(t, "Qwen/Qwen3-0.6B", passOn(compat.TargetTPU, testTime, 312))
	ts.record(t, "gpt2", failOn(compat.TargetCPU, testTime, "aten::x"))

	svg := func(path, wantText, wantColor string) response {
		t.Helper()
		r := ts.get(t, path)
		if r.status != 200 {
			t.Fatalf("%s: %d", path, r.status)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "image/svg+xml") {
			t.Errorf("%s: content type %s", path, ct)
		}
		if !strings.Contains(r.body, wantText) || !strings.Contains(r.body, `fill="`+wantColor+`"`) {
			t.Errorf("%s: want %q in %s\n%s", path, wantText, wantColor, r.body)
		}
		if r.header.Get("Cache-Control") != "max-age=300" || r.header.Get("ETag") == "" {
			t.Errorf("%s: cache headers %q %q", path, r.header.Get("Cache-Control"), r.header.Get("ETag"))
		}
		if r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("X-Frame-Options") != "" ||
			strings.Contains(r.header.Get("Content-Security-Policy"), "frame-ancestors") {
			t.Errorf("%s: badge not embeddable: %v", path, r.header)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", path)
		}
		return r
	}
	svg("/badge/Qwen/Qwen3-0.6B.svg", `aria-label="TorchTPU: passing · 312 tok/s (measured on 1 × TPU v6e with torch 2.9.0, torch_tpu 0.2.0, transformers 4.57.1, harness 1 on 2026-11-30)"`, show.BadgeFill[show.TonePass])
	svg("/badge/Qwen/Old.svg", "passing · 312 tok/s", show.BadgeFill[show.TonePass])
	svg("/badge/Qwen/Qwen3-0.6B.svg?target=cpu", "PyTorch CPU: untested", show.BadgeFill[show.ToneNeutral])
	svg("/badge/gpt2.svg?target=cpu", "failing · forward", show.BadgeFill[show.ToneFail])
	// Measured on the CPU reference only: the TorchTPU badge says so, grey
	// (issue 37), and so does its endpoint JSON.
	svg("/badge/gpt2.svg", `aria-label="TorchTPU: cpu fail · forward (measured on cpu with torch 2.9.0, torch_tpu 0.2.0 on 2026-11-30)"`, show.BadgeFill[show.ToneNeutral])
	svg("/badge/gpt2.svg?target=tpu", "TorchTPU: cpu fail · forward", show.BadgeFill[show.ToneNeutral])
	if e := decode[badge.Endpoint](t, ts.get(t, "/badge/gpt2.json")); e.Label != "TorchTPU" || e.Message != "cpu fail · forward" || e.Color != "656d76" {
		t.Errorf("cpu-only endpoint: %+v", e)
	}
	svg("/badge/nobody/nothing.svg", "TorchTPU: unknown", show.BadgeFill[show.ToneNeutral])
	svg("/badge/Qwen/Qwen3-0.6B.svg?target=gpu", "unknown", show.BadgeFill[show.ToneNeutral])
	svg("/badge/Qwen/Qwen3-0.6B.svg?style=for-the-badge", `height="28"`, show.BadgeFill[show.TonePass])
	svg("/badge/Qwen/Qwen3-0.6B.svg?style=flat-square", `crispEdges`, show.BadgeFill[show.TonePass])
	svg("/badge/Qwen/Qwen3-0.6B.svg?style=bogus", `rx="3"`, show.BadgeFill[show.TonePass])
	svg("/badge/Qwen/Qwen3-0.6B.svg?label=tpu%20ready", `aria-label="tpu ready: passing`, show.BadgeFill[show.TonePass])

	r := ts.get(t, "/badge/Qwen/Qwen3-0.6B.json")
	e := decode[badge.Endpoint](t, r)
	if r.status != 200 || e.SchemaVersion != 1 || e.Label != "TorchTPU" || e.Message != "passing · 312 tok/s" ||
		e.Color != "1a7f37" || e.CacheSeconds != 300 || r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("endpoint: %d %+v", r.status, e)
	}
	if e := decode[badge.Endpoint](t, ts.get(t, "/badge/unknown/model.json")); e.Message != "unknown" {
		t.Errorf("unknown endpoint: %+v", e)
	}
	if r := ts.get(t, "/badge/gpt2"); r.status != 404 {
		t.Errorf("badge without extension: %d", r.status)
	}

	// A new result shows at once (the cache follows Store.Changed).
	before := ts.get(t, "/badge/gpt2.svg?target=cpu")
	ts.record(t, "gpt2", passOn(compat.TargetCPU, testTime.Add(1), 5))
	after := ts.get(t, "/badge/gpt2.svg?target=cpu")
	if !strings.Contains(after.body, "passing") || before.header.Get("ETag") == after.header.Get("ETag") {
		t.Errorf("badge did not follow the new result:\n%s", after.body)
	}
	if r := ts.get(t, "/badge/gpt2.svg"); !strings.Contains(r.body, "TorchTPU: cpu pass") || strings.Contains(r.body, "passing") {
		t.Errorf("a cpu pass on the TorchTPU badge:\n%s", r.body)
	}
	// Served from the cache: the same bytes.
	if again := ts.get(t, "/badge/gpt2.svg?target=cpu"); again.body != after.body {
		t.Error("cached badge differs")
	}
}

// Badges are readable cross-origin by GET and HEAD only: a POST (never a
// badge request) gets no Access-Control-Allow-Origin.
func TestBadgeCORSByMethod(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	for _, c := range []struct {
		method string
		cors   bool
	}{{http.MethodGet, true}, {http.MethodHead, true}, {http.MethodPost, false}} {
		r := ts.do(t, c.method, "/badge/gpt2.svg", nil)
		if got := r.header.Get("Access-Control-Allow-Origin") == "*"; got != c.cors {
			t.Errorf("%s: %d, CORS %v, want %v", c.method, r.status, got, c.cors)
		}
		if got := r.header.Get("Access-Control-Expose-Headers") != ""; got != c.cors {
			t.Errorf("%s: exposes headers %v, want %v", c.method, got, c.cors)
		}
	}
}

// When the database fails, a badge is still a badge of the asked kind:
// an SVG image or an endpoint JSON saying "unavailable" under the asked
// label, answered 503 and never cached.
func TestBadgeStoreFailure(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.useStore(failingStore{Store: ts.db, changed: failChanged})
	for _, c := range []struct {
		path, ctype string
		check       func(t *testing.T, r response)
	}{
		{"/badge/gpt2.svg", "image/svg+xml", func(t *testing.T, r response) {
			if !strings.HasPrefix(r.body, "<svg") || !strings.Contains(r.body, `aria-label="TorchTPU: unavailable"`) {
				t.Errorf("not an unavailable SVG badge: %s", r.body)
			}
		}},
		{"/badge/gpt2.svg?style=for-the-badge&label=ready", "image/svg+xml", func(t *testing.T, r response) {
			if !strings.Contains(r.body, `height="28"`) || !strings.Contains(r.body, `aria-label="ready: unavailable"`) {
				t.Errorf("style or label lost: %s", r.body)
			}
		}},
		{"/badge/gpt2.json?label=ready", "application/json", func(t *testing.T, r response) {
			if e := decode[badge.Endpoint](t, r); e.SchemaVersion != 1 || e.Label != "ready" || e.Message != "unavailable" {
				t.Errorf("endpoint badge %+v", e)
			}
		}},
	} {
		r := ts.get(t, c.path)
		if r.status != 503 || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %q", c.path, r.status, r.header.Get("Cache-Control"))
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, c.ctype) {
			t.Errorf("%s: content type %q, want %s", c.path, ct, c.ctype)
		}
		c.check(t, r)
	}
}
