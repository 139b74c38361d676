package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/cmd/internal/wrk"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// rowOf is a row with these figures under load and with one client.
func rowOf(name string, rps float64, p50 time.Duration, single time.Duration, errs ...string) row {
	r := row{load: result{name, wrk.Result{RPS: rps, P50: p50, P99: 2 * p50}}, single: result{name, wrk.Result{RPS: rps / 10, P50: single, P99: 3 * single}}}
	if len(errs) > 0 {
		r.load.Errors = errs[0]
	}
	if len(errs) > 1 {
		r.single.Errors = errs[1]
	}
	return r
}

func TestReport(t *testing.T) {
	endpoints := []endpoint{{name: "minimal"}, {name: "badge"}, {name: "api", latencyTarget: true},
		{name: "table", latencyTarget: true}, {name: "chart"}}
	ms := time.Millisecond
	for _, tt := range []struct {
		name   string
		rows   []row
		want   []string // each row's target column, in order
		failed bool
	}{
		{"all met", []row{rowOf("minimal", 1000, ms, ms), rowOf("badge", 700, ms, ms), rowOf("api", 50, 20*ms, 10*ms-1),
			rowOf("table", 40, 30*ms, 2*ms), rowOf("chart", 10, 90*ms, 90*ms)},
			[]string{"", "req/s ≥ 0.70× minimal: ok", "p50 (1 client) < 10ms: ok", "p50 (1 client) < 10ms: ok", ""}, false},
		{"badge short", []row{rowOf("minimal", 1000, ms, ms), rowOf("badge", 699, ms, ms), rowOf("api", 50, 20*ms, ms),
			rowOf("table", 40, 30*ms, 2*ms), rowOf("chart", 10, 90*ms, 90*ms)},
			[]string{"", "req/s ≥ 0.70× minimal: MISSED", "p50 (1 client) < 10ms: ok", "p50 (1 client) < 10ms: ok", ""}, true},
		{"table slow", []row{rowOf("minimal", 1000, ms, ms), rowOf("badge", 900, ms, ms), rowOf("api", 50, 20*ms, ms),
			rowOf("table", 40, 30*ms, 10*ms), rowOf("chart", 10, 90*ms, 90*ms)},
			[]string{"", "req/s ≥ 0.70× minimal: ok", "p50 (1 client) < 10ms: ok", "p50 (1 client) < 10ms: MISSED", ""}, true},
		{"errors", []row{rowOf("minimal", 1000, ms, ms), rowOf("badge", 900, ms, ms), rowOf("api", 50, 20*ms, ms),
			rowOf("table", 40, 30*ms, ms), rowOf("chart", 10, 90*ms, 90*ms, "4 non-2xx", "1 non-2xx")},
			[]string{"", "req/s ≥ 0.70× minimal: ok", "p50 (1 client) < 10ms: ok", "p50 (1 client) < 10ms: ok", "(errors: 4 non-2xx 1 non-2xx)"}, true},
		{"errors of one client", []row{rowOf("minimal", 1000, ms, ms), rowOf("badge", 900, ms, ms, "", "Socket errors: connect 1, read 0, write 0, timeout 0"),
			rowOf("api", 50, 20*ms, ms), rowOf("table", 40, 30*ms, ms), rowOf("chart", 10, 90*ms, 90*ms)},
			[]string{"", "req/s ≥ 0.70× minimal: ok (errors: Socket errors: connect 1, read 0, write 0, timeout 0)", "p50 (1 client) < 10ms: ok", "p50 (1 client) < 10ms: ok", ""}, true},
	} {
		var out bytes.Buffer
		failed := report(&out, endpoints, tt.rows, 32)
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		if failed != tt.failed || len(lines) != 6 {
			t.Errorf("%s: failed %v, %d lines: %s", tt.name, failed, len(lines), out.String())
			continue
		}
		if h := strings.Join(strings.Fields(lines[0]), " "); h != "endpoint req/s (c=32) × minimal p50 p99 p50 (1 client) p99 (1 client) target" {
			t.Errorf("%s: heading %q", tt.name, h)
		}
		for i, r := range tt.rows {
			got := strings.TrimSpace(lines[i+1])
			figures := fmt.Sprintf("%s  %.0f  %.2f  %s  %s  %s  %s", r.load.name, r.load.RPS, r.load.RPS/1000,
				wrk.Dur(r.load.P50), wrk.Dur(r.load.P99), wrk.Dur(r.single.P50), wrk.Dur(r.single.P99))
			if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(figures+" "+tt.want[i]), " ") {
				t.Errorf("%s, row %d: %q, want %q", tt.name, i, got, figures+"  "+tt.want[i])
			}
		}
	}
	// The ratio column against the minimal handler's: 700 of 1000 is 0.70.
	var out bytes.Buffer
	report(&out, endpoints[:2], []row{rowOf("minimal", 1000, time.Millisecond, time.Millisecond), rowOf("badge", 700, time.Millisecond, time.Millisecond)}, 8)
	if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), "badge 700 0.70 1.00ms 2.00ms 1.00ms 3.00ms req/s ≥ 0.70× minimal: ok") {
		t.Errorf("%q", out.String())
	}
}

func TestBadgeScript(t *testing.T) {
	for _, tt := range []struct{ models, paths int }{{5, 5}, {999, 999}, {1000, 1000}, {5000, 1000}} {
		dir := t.TempDir()
		script := badgeScript(dir, tt.models)
		if script != filepath.Join(dir, "badges.lua") {
			t.Errorf("script at %s", script)
		}
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		lua := string(b)
		const head, tail = "local paths = {", "}\nrequest = function()\n  return wrk.format(nil, paths[math.random(#paths)])\nend\n"
		if !strings.HasPrefix(lua, head) || !strings.HasSuffix(lua, tail) {
			t.Errorf("%d models: %q", tt.models, lua)
			continue
		}
		paths := strings.Split(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(lua, head), tail), ","), ",")
		if len(paths) != tt.paths {
			t.Errorf("%d models: %d paths, want %d", tt.models, len(paths), tt.paths)
		}
		ids := map[string]bool{}
		for i := range tt.models {
			ids[fmt.Sprintf("%q", "/badge/"+storetest.ModelID(i)+".svg")] = true
		}
		for _, p := range paths {
			if !ids[p] {
				t.Errorf("%d models: %s is none of their badges", tt.models, p)
			}
		}
	}
}

func TestOpenSeeded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "scanner.db")
	db := openSeeded(ctx, path, 20, 40, 2)
	sum, err := db.Summary(ctx, "")
	if err != nil || sum.Models != 20 {
		t.Fatalf("seeded: %+v, %v", sum, err)
	}
	// A model changed, then the database opened again: kept, not seeded over.
	up := store.ModelUpsert{ID: "extra/model", Task: "fill-mask", Library: "transformers", Downloads: 5}
	if err := db.UpsertModels(ctx, []store.ModelUpsert{up}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openSeeded(ctx, path, 50, 100, 2)
	defer db.Close()
	if sum, err := db.Summary(ctx, ""); err != nil || sum.Models != 21 {
		t.Errorf("reopened: %+v, %v", sum, err)
	}
}

func TestAfterWrite(t *testing.T) {
	ctx := context.Background()
	db := storetest.MustOpen(t)
	storetest.MustSeed(t, db, 10, 20)
	var (
		mu   sync.Mutex
		seen []int64
		// slow: which requests (1 to 5) take 150ms.
		slow = map[int]bool{2: true, 4: true}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The write came before the request.
		m, err := db.GetModel(ctx, storetest.ModelID(3), "")
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		seen = append(seen, m.Downloads)
		wait := slow[len(seen)]
		mu.Unlock()
		if wait {
			time.Sleep(150 * time.Millisecond)
		}
	}))
	defer srv.Close()
	median := afterWrite(ctx, db, srv.URL+"/")
	if median <= 0 || median >= 150*time.Millisecond {
		t.Errorf("median %s; three of five requests were fast", median)
	}
	if fmt.Sprint(seen) != "[1000000 1000001 1000002 1000003 1000004]" {
		t.Errorf("downloads seen %v", seen)
	}
	// Three slow of five: the median is slow.
	mu.Lock()
	seen, slow = nil, map[int]bool{1: true, 2: true, 4: true}
	mu.Unlock()
	if median := afterWrite(ctx, db, srv.URL+"/"); median < 150*time.Millisecond {
		t.Errorf("median %s; three of five requests took 150ms", median)
	}
}
