package web

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
)

// equivGolden holds the answers of the server before the store kept
// tallies and comparisons on the store's fixture database
// (store/testdata/equiv-v6.db.gz, written by the store of schema 6): every
// aggregate JSON route and the CSV export. It was written by that code,
// with WEB_WRITE_EQUIV_GOLDEN=1: first by the server of schema 6, then
// again by main at 30c0e1e (schema 7, watch), whose answers differ from
// schema 6's only by the known_issue fields and by the feed leaving out
// the changes to and from an error (issue 29's rule). Never rewrite it
// with the server it checks, whose answers it pins.
const equivGolden = "testdata/equiv-v6-answers.json"

// equivURLs are the answers pinned: every route that aggregates, and
// every ordered pair of runtimes.
func equivURLs(t *testing.T, db *store.SQLite) []string {
	urls := []string{"/feed.json", "/api/v1/runtimes", "/api/v1/runtimes?target=cpu", "/api/v1/compare",
		"/export.csv", "/export.csv?target=tpu&sort=status", "/export.csv?target=cpu&sort=tokens_per_s&order=asc&status=pass"}
	for _, target := range []string{"auto", "tpu", "cpu", "cuda"} {
		urls = append(urls, "/api/v1/summary?target="+target, "/api/v1/failures?target="+target)
	}
	rts, err := db.Runtimes(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range rts {
		urls = append(urls, "/api/v1/compare?head="+b.Ref.Key())
		for _, h := range rts {
			if b.Ref != h.Ref {
				urls = append(urls, "/api/v1/compare?base="+b.Ref.Key()+"&head="+h.Ref.Key())
			}
		}
	}
	return urls
}

// equivServer serves a copy of the store's fixture database.
func equivServer(t *testing.T) *testServer {
	t.Helper()
	db, err := store.Open(context.Background(), storetest.Unpack(t, "../store/testdata/equiv-v6.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := New(Config{Store: db, Logger: discard, Metrics: metrics.NewRegistry(), APIRate: -1, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{Server: s, db: db}
}

// TestAnswersOnTheFixtureAreSchema6s: the server answers on the fixture
// what the server of schema 6 answered: the same bytes, but for fields
// added since (a JSON answer may have more keys; those it had are equal).
func TestAnswersOnTheFixtureAreSchema6s(t *testing.T) {
	ts := equivServer(t)
	urls := equivURLs(t, ts.db)
	if len(urls) < 50 {
		t.Fatalf("%d urls: the fixture should have 7 runtimes", len(urls))
	}
	got := map[string]string{}
	for _, u := range urls {
		r := ts.do(t, "GET", u, map[string]string{"Host": "scanner.test"})
		got[u] = strconv.Itoa(r.status) + "\n" + r.body
		if strings.HasPrefix(u, "/export.csv") && os.Getenv("WEB_WRITE_EQUIV_GOLDEN") == "" {
			got[u] = withoutAddedColumns(withoutEvidence(t, withoutServing(t, withoutTrainEvidence(t, got[u]))))
		}
	}
	if os.Getenv("WEB_WRITE_EQUIV_GOLDEN") != "" {
		b, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(equivGolden, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(equivGolden)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(urls) {
		t.Errorf("golden has %d answers, %d urls asked", len(want), len(urls))
	}
	for _, u := range urls {
		w, ok := want[u]
		if !ok {
			t.Errorf("%s: not in the golden answers", u)
			continue
		}
		gotStatus, gotBody, _ := strings.Cut(got[u], "\n")
		wantStatus, wantBody, _ := strings.Cut(w, "\n")
		if gotStatus != wantStatus || strings.HasPrefix(u, "/export.csv") || gotBody == wantBody {
			if got[u] != w {
				t.Errorf("%s:\n got %.2000s\nwant %.2000s", u, got[u], w)
			}
			continue
		}
		var g, wv any
		if err := json.Unmarshal([]byte(gotBody), &g); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if err := json.Unmarshal([]byte(wantBody), &wv); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if strings.HasPrefix(u, "/feed.json") {
			withoutFeedEvidence(t, g)
		}
		if path, ok := storetest.KeepsFields(wv, g, "$"); !ok {
			t.Errorf("%s: differs at %s:\n got %.2000s\nwant %.2000s", u, path, got[u], w)
		}
	}
}

// withoutAddedColumns is a CSV answer without the columns added after
// the golden answers were written: the verdict matrix's (modesCSVColumns,
// issue 25) and the known issue's (knownCSVColumns). They are the last
// ones, and empty on the fixture, which has no matrix and no known
// issues; a row where they are not empty keeps them (and fails).
func withoutAddedColumns(answer string) string {
	added := slices.Concat(api.ModesCSVColumns, api.KnownCSVColumns)
	head := "," + strings.Join(added, ",")
	empty := strings.Repeat(",", len(added))
	lines := strings.Split(answer, "\r\n")
	for i, l := range lines {
		if strings.HasSuffix(l, head) { // the header (after the status line)
			lines[i] = strings.TrimSuffix(l, head)
		} else {
			lines[i] = strings.TrimSuffix(l, empty)
		}
	}
	return strings.Join(lines, "\r\n")
}

// withoutTrainEvidence is a CSV answer without its train evidence columns
// (api.TrainEvidenceCSVColumns, issue 37, the last ones), each row's checked
// first against the row's own train verdict: measured for a verdict, none
// for a train step not run.
func withoutTrainEvidence(t *testing.T, answer string) string {
	t.Helper()
	train := slices.Index(api.CSVAllColumns, "train_status")
	return withoutLastColumns(t, answer, api.TrainEvidenceCSVColumns, func(rec, tail []string) {
		if status := compat.Status(rec[train]); status.IsVerdict() && (tail[0] != "measured" || tail[2] == "" || tail[4] == "" || tail[5] == "") ||
			!status.IsVerdict() && !slices.Equal(tail, []string{"none", "", "", "", "", "", ""}) {
			t.Errorf("a row whose train status is %q has the train evidence %v", status, tail)
		}
	})
}

// withoutLastColumns is a CSV answer without its last len(cols) columns,
// its header's checked to be cols and each row's handed to check first.
func withoutLastColumns(t *testing.T, answer string, cols []string, check func(rec, tail []string)) string {
	t.Helper()
	n := len(cols)
	lines := strings.Split(answer, "\r\n")
	rows := 0
	for i, l := range lines {
		prefix := ""
		if i == 0 { // the status line, then the header
			var rest string
			prefix, rest, _ = strings.Cut(l, "\n")
			prefix, l = prefix+"\n", rest
		}
		if l == "" {
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(l)).Read()
		if err != nil || len(rec) < len(api.CSVColumns)+n {
			t.Fatalf("line %d: %v (%d fields): %s", i, err, len(rec), l)
		}
		tail := rec[len(rec)-n:]
		var b bytes.Buffer
		api.WriteCSVRow(&b, tail, nil)
		enc := "," + strings.TrimSuffix(b.String(), "\r\n")
		if !strings.HasSuffix(l, enc) {
			t.Fatalf("line %d does not end in %s: %s", i, enc, l)
		}
		lines[i] = prefix + strings.TrimSuffix(l, enc)
		if i == 0 {
			if !slices.Equal(tail, cols) {
				t.Fatalf("header ends in %v", tail)
			}
			continue
		}
		rows++
		check(rec, tail)
	}
	if rows == 0 {
		t.Error("no row checked")
	}
	return strings.Join(lines, "\r\n")
}

// withoutServing is a CSV answer without its serving columns
// (servingCSVColumns, issue 40, the last ones), each row's checked to be
// empty: the fixture's database read no vLLM-TorchTPU registry, so no
// model's serving is known.
func withoutServing(t *testing.T, answer string) string {
	t.Helper()
	head := "," + strings.Join(api.ServingCSVColumns, ",")
	empty := strings.Repeat(",", len(api.ServingCSVColumns))
	lines := strings.Split(answer, "\r\n")
	for i, l := range lines {
		switch {
		case l == "":
		case strings.HasSuffix(l, head):
			lines[i] = strings.TrimSuffix(l, head)
		case strings.HasSuffix(l, empty):
			lines[i] = strings.TrimSuffix(l, empty)
		default:
			t.Fatalf("line %d does not end in empty serving columns: %s", i, l)
		}
	}
	return strings.Join(lines, "\r\n")
}

// withoutEvidence is a CSV answer without its evidence columns
// (evidenceCSVColumns, issue 37, the last ones), each row's checked first
// against the row's own status and target: measured on its target for a
// verdict, none for anything else (nothing predicts verdicts on the
// fixture).
func withoutEvidence(t *testing.T, answer string) string {
	t.Helper()
	return withoutLastColumns(t, answer, api.EvidenceCSVColumns, func(rec, tail []string) {
		status, target := compat.Status(rec[6]), rec[7]
		if status.IsVerdict() && (tail[0] != "measured" || tail[1] != target || tail[2] == "" || tail[4] == "" || tail[5] == "") ||
			!status.IsVerdict() && !slices.Equal(tail, []string{"none", "", "", "", "", "", ""}) {
			t.Errorf("a %s row on %q has the evidence %v", status, target, tail)
		}
	})
}

// Each status change's evidence in a feed item's content (issue 37).
var (
	feedEvidenceText = regexp.MustCompile(`\n\nEvidence: [^\n]*\.`)
	feedEvidenceHTML = regexp.MustCompile(`<p>Evidence: [^<]*\.</p>`)
)

// withoutFeedEvidence takes out of a decoded JSON Feed what each status
// change's item says of its evidence (added after the golden answers were
// written), checked first: one paragraph in its text and its HTML, and
// its _evidence, measured on the item's target for a verdict, none for
// anything else.
func withoutFeedEvidence(t *testing.T, feed any) {
	t.Helper()
	items, _ := feed.(map[string]any)["items"].([]any)
	changes := 0
	for _, x := range items {
		it := x.(map[string]any)
		if !strings.Contains(it["id"].(string), "/events/") {
			continue
		}
		changes++
		text, html := it["content_text"].(string), it["content_html"].(string)
		if len(feedEvidenceText.FindAllString(text, -1)) != 1 || len(feedEvidenceHTML.FindAllString(html, -1)) != 1 {
			t.Errorf("%s: evidence not said once:\n%s\n%s", it["id"], text, html)
		}
		it["content_text"] = feedEvidenceText.ReplaceAllString(text, "")
		it["content_html"] = feedEvidenceHTML.ReplaceAllString(html, "")
		tags := it["tags"].([]any)
		ev, _ := it["_evidence"].(map[string]any)
		if compat.Status(tags[2].(string)).IsVerdict() != (ev["kind"] == "measured") ||
			ev["kind"] == "measured" && ev["target"] != tags[1] {
			t.Errorf("%s: tags %v, evidence %v", it["id"], tags, ev)
		}
		delete(it, "_evidence") // items are in an array, which must be equal
	}
	if changes == 0 {
		t.Error("no status change in the feed")
	}
}
