package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
	"github.com/google-pytorch/torchtpu-scanner/web/feeds"
)

func TestFeed(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{PublicURL: "https://compat.example.org/"})
	ts.upsert(t, store.ModelUpsert{ID: "org/model"}, store.ModelUpsert{ID: "gpt2"})
	ts.record(t, "org/model", passOn(compat.TargetTPU, testTime.Add(-2*time.Hour), 100))     // new
	ts.record(t, "org/model", failOn(compat.TargetTPU, testTime.Add(-time.Hour), "aten::x")) // regression
	ts.record(t, "org/model", passOn(compat.TargetTPU, testTime, 100))                       // fix
	ts.record(t, "gpt2", failOn(compat.TargetCPU, testTime, "aten::y"))                      // new (fail)
	if err := ts.db.RecordFlaky(context.Background(), "gpt2", failOn(compat.TargetCPU, testTime.Add(time.Minute), "aten::z"), compat.StatusFail); err != nil {
		t.Fatal(err)
	}

	r := ts.get(t, "/feed.json")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/feed+json") {
		t.Fatalf("%d %s", r.status, r.header.Get("Content-Type"))
	}
	f := decode[feeds.JSONFeed](t, r)
	if f.Version != "https://jsonfeed.org/version/1.1" || f.FeedURL != "https://compat.example.org/feed.json" || f.HomePageURL != "https://compat.example.org/" {
		t.Errorf("feed header: %+v", f)
	}
	titles := map[string]bool{}
	for _, it := range f.Items {
		titles[it.Title] = true
		prefix := "https://compat.example.org/events/"
		if it.Tags[0] == "runtime" { // failOn's runtime lacks transformers and harness: a new runtime
			prefix = "https://compat.example.org/compare?base="
		}
		if !strings.HasPrefix(it.ID, prefix) || it.ContentText == "" || it.ContentHTML == "" {
			t.Errorf("item: %+v", it)
		}
		// A change's id carries the database's epoch (unique across restores).
		if it.Tags[0] != "runtime" && !regexp.MustCompile(`^https://compat\.example\.org/events/[0-9a-f]{16}-[0-9]+$`).MatchString(it.ID) {
			t.Errorf("item id %q, want {base}/events/{epoch}-{n}", it.ID)
		}
		if _, err := time.Parse(time.RFC3339, it.DatePublished); err != nil {
			t.Errorf("date_published %q: %v", it.DatePublished, err)
		}
	}
	for _, want := range []string{
		"Regression: org/model fails on tpu (forward, unsupported_op aten::x)",
		"Fixed: org/model passes on tpu (was fail)",
		"New: org/model passes on tpu",
		"New: gpt2 fails on cpu (forward, unsupported_op aten::y)",
	} {
		if !titles[want] {
			t.Errorf("no item %q in %v", want, titles)
		}
	}
	flaky := false
	for title := range titles {
		flaky = flaky || strings.HasPrefix(title, "Flaky: gpt2 on cpu")
	}
	if !flaky {
		t.Errorf("no flaky item in %v", titles)
	}
	// Ids are stable across requests.
	again := decode[feeds.JSONFeed](t, ts.get(t, "/feed.json"))
	for i := range f.Items {
		if f.Items[i].ID != again.Items[i].ID {
			t.Fatal("feed ids changed between requests")
		}
	}
}

func TestExportCSV(t *testing.T) {
	ts := newTestServer(t, 1100, 1500, Config{})
	r := ts.get(t, "/export.csv")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(r.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("%d %v", r.status, r.header)
	}
	rows, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1101 || strings.Join(rows[0], ",") != strings.Join(api.CSVAllColumns, ",") {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	seen := map[string]bool{}
	for _, row := range rows[1:] {
		if seen[row[0]] {
			t.Fatalf("%s twice", row[0])
		}
		seen[row[0]] = true
	}
	filtered, err := csv.NewReader(strings.NewReader(ts.get(t, "/export.csv?status=untested").body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range filtered[1:] {
		if row[6] != "untested" {
			t.Fatalf("filter ignored: %v", row)
		}
	}
	if len(filtered) < 100 {
		t.Errorf("untested rows: %d", len(filtered))
	}
}

// One export holds at most maxExportRows models however many pages the
// store has left: the store here never runs out (a page of httpx.MaxLimit models
// and a next cursor, always).
func TestExportCSVStopsAtItsCap(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	pages := 0
	page := make([]compat.Model, api.ExportPage)
	for i := range page {
		page[i] = compat.Model{ID: fmt.Sprintf("org/m%d", i)}
	}
	ts.useStore(failingStore{Store: ts.db, list: func(_ context.Context, q store.ModelQuery) ([]compat.Model, string, error) {
		pages++
		return page, "more", nil
	}})
	r := ts.get(t, "/export.csv")
	if r.status != 200 {
		t.Fatalf("%d %.200s", r.status, r.body)
	}
	if rows := strings.Count(r.body, "\n") - 1; rows != api.MaxExportRows || pages != api.MaxExportRows/api.ExportPage {
		t.Errorf("%d rows from %d pages, want %d rows from %d", rows, pages, api.MaxExportRows, api.MaxExportRows/api.ExportPage)
	}
}

// An export is streamed: a store that fails after the first page cuts the
// answer short (its chunked body never ends, which clients see as an
// error) rather than sending a short CSV that looks whole; a store that
// fails on the first page answers 500.
func TestExportCSVCutShort(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	page := []compat.Model{{ID: "org/a"}, {ID: "org/b"}}
	var calls atomic.Int32 // counted in the export's own goroutine
	ts.useStore(failingStore{Store: ts.db, list: func(context.Context, store.ModelQuery) ([]compat.Model, string, error) {
		if calls.Add(1) > 1 {
			return nil, "", errBoom
		}
		return page, "more", nil
	}})
	resp, err := http.Get("http://" + listenOnLoopback(t, ts) + "/export.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || err == nil {
		t.Fatalf("status %d, body read error %v: want 200 and a body cut short", resp.StatusCode, err)
	}
	if n := calls.Load(); !strings.Contains(string(body), "org/b") || n != 2 {
		t.Errorf("the first page was not sent before the failure (%d calls): %q", n, body)
	}
	// The export's goroutine may still be ending: a server of its own for
	// the second case, so that nothing it reads changes under it.
	first := newTestServer(t, 0, 0, Config{})
	first.useStore(failingStore{Store: first.db, list: failList})
	if r := first.get(t, "/export.csv"); r.status != 500 || strings.Contains(r.body, "secret") {
		t.Errorf("first page failing: %d %s", r.status, r.body)
	}
}

// An export reads the store only as fast as its client reads the answer:
// a client that reads the first rows and stops holds the export to the
// pages that fit in the connection's buffers, nowhere near the whole list
// (an export built whole in memory would read every page first); once the
// client reads on, the export runs to its end. The store never runs out
// (a page of long ids and a next cursor, always); the client's receive
// buffer is fixed small so the kernel cannot take the whole answer.
func TestExportCSVReadsAsTheClientReads(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	page := make([]compat.Model, api.ExportPage)
	for i := range page {
		page[i] = compat.Model{ID: fmt.Sprintf("org/m%d-%s", i, strings.Repeat("x", 300))}
	}
	var pages atomic.Int64
	ts.useStore(failingStore{Store: ts.db, list: func(context.Context, store.ModelQuery) ([]compat.Model, string, error) {
		pages.Add(1)
		return page, "more", nil
	}})
	conn, err := net.Dial("tcp", listenOnLoopback(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /export.csv HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	defer resp.Body.Close()
	first := make([]byte, 64<<10)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	// Wait for the export to stall: no new page for half a second.
	deadline := time.Now().Add(10 * time.Second)
	for last := int64(-1); ; {
		now := pages.Load()
		if now == last || time.Now().After(deadline) {
			break
		}
		last = now
		time.Sleep(500 * time.Millisecond)
	}
	all := int64(api.MaxExportRows / api.ExportPage)
	if got := pages.Load(); got < 1 || got > all/4 {
		t.Fatalf("a client that read 64 KB and stopped: the export read %d pages of %d (want at most %d)", got, all, all/4)
	}
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 20); err != nil { // a small window reads the rest slowly
		t.Fatal(err)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, rows := pages.Load(), bytes.Count(append(first, rest...), []byte("\r\n"))-1; got != all || rows != api.MaxExportRows {
		t.Errorf("reading on: %d pages of %d, %d rows of %d", got, all, rows, api.MaxExportRows)
	}
}

// listenOnLoopback serves ts on a loopback port until the test ends and
// returns its address.
func listenOnLoopback(t *testing.T, ts *testServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.Listen(ln)
	t.Cleanup(func() { ts.Shutdown(context.Background()) })
	return ln.Addr().String()
}
