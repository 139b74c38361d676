package watch

import (
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestMatch(t *testing.T) {
	reg := Item{ModelID: "Qwen/Qwen3-0.6B", Target: compat.TargetTPU, Kind: "regression"}
	fix := Item{ModelID: "google/gemma-2b", Target: compat.TargetCPU, Kind: "fix"}
	legacy := Item{ModelID: "gpt2", Target: compat.TargetTPU, Kind: "new"}
	rt := Item{Target: compat.TargetTPU, Kind: KindRuntime}
	all := []Item{reg, fix, legacy, rt}
	for _, tc := range []struct {
		name string
		f    Filter
		want []Item
	}{
		{"everything", Filter{}, all},
		{"one model", Filter{Models: []string{"Qwen/Qwen3-0.6B"}}, []Item{reg}},
		{"a model in another case", Filter{Models: []string{"qwen/qwen3-0.6b"}}, []Item{reg}},
		{"two models", Filter{Models: []string{"gpt2", "google/gemma-2b"}}, []Item{fix, legacy}},
		{"a model not there", Filter{Models: []string{"Qwen/Qwen3-1.7B"}}, nil},
		{"a model's prefix is not the model", Filter{Models: []string{"Qwen/Qwen3"}}, nil},
		{"org", Filter{Org: "Qwen"}, []Item{reg}},
		{"org in another case", Filter{Org: "qwen"}, []Item{reg}},
		{"org of a one-part id", Filter{Org: "gpt2"}, nil},
		{"target", Filter{Target: compat.TargetTPU}, []Item{reg, legacy, rt}},
		{"kind", Filter{Kinds: []string{"regression"}}, []Item{reg}},
		{"kinds", Filter{Kinds: []string{"fix", "runtime"}}, []Item{fix, rt}},
		{"runtime kind", Filter{Kinds: []string{KindRuntime}}, []Item{rt}},
		{"all of them", Filter{Models: []string{"Qwen/Qwen3-0.6B"}, Org: "Qwen", Target: compat.TargetTPU, Kinds: []string{"regression"}}, []Item{reg}},
		{"all but one field", Filter{Models: []string{"Qwen/Qwen3-0.6B"}, Org: "Qwen", Target: compat.TargetCPU, Kinds: []string{"regression"}}, nil},
		{"model and another org", Filter{Models: []string{"Qwen/Qwen3-0.6B"}, Org: "google"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Item
			for _, it := range all {
				if tc.f.Match(it) {
					got = append(got, it)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("matched %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  Filter
		err   string
	}{
		{"", Filter{}, ""},
		{"model=a/b&model=c", Filter{Models: []string{"a/b", "c"}}, ""},
		{"model=a/b,c&model=a/b", Filter{Models: []string{"a/b", "c"}}, ""},
		{"org=Qwen&target=tpu&kind=regression&kind=fix", Filter{Org: "Qwen", Target: compat.TargetTPU, Kinds: []string{"regression", "fix"}}, ""},
		{"target=auto", Filter{}, ""},
		{"target=", Filter{}, ""},
		{"q=ignored&limit=3", Filter{}, ""},
		{"kind=runtime", Filter{Kinds: []string{"runtime"}}, ""},
		{"kind=regresion", Filter{}, `kind "regresion": want one of regression, fix, new, change, flaky, train_regression, train_fix, serving_regression, serving_fix, serving_new, runtime`},
		{"target=gpu", Filter{}, "target: unknown target"},
		{"org=a&org=b", Filter{}, "org: give it once"},
		{"target=tpu&target=cpu", Filter{}, "target: give it once"},
		{"model=../etc/passwd", Filter{}, "model: model id"},
		{"model=a/b/c", Filter{}, "model: model id"},
		{"model=%3Cscript%3E", Filter{}, "model: model id"},
		{"org=a/b", Filter{}, "org: model namespace"},
		{"model=" + manyModels(MaxModels+1), Filter{}, "at most 20"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseQuery(q)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Models, tc.want.Models) || got.Org != tc.want.Org || got.Target != tc.want.Target || !slices.Equal(got.Kinds, tc.want.Kinds) {
				t.Errorf("ParseQuery = %+v, want %+v", got, tc.want)
			}
			// The canonical query reads back as the same filter.
			back, err := url.ParseQuery(got.Query())
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseQuery(back)
			if err != nil || again.Query() != got.Query() {
				t.Errorf("Query() %q reads back as %+v (%v)", got.Query(), again, err)
			}
			if got.Empty() != (tc.want.Query() == "") {
				t.Errorf("Empty() = %v for %+v", got.Empty(), got)
			}
		})
	}
}

func manyModels(n int) string {
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("org/m%d", i))
	}
	return strings.Join(ids, ",")
}

func TestDescribe(t *testing.T) {
	f := Filter{Models: []string{"a/b"}, Org: "a", Target: compat.TargetTPU, Kinds: []string{"regression", "fix"}}
	if got, want := f.Describe(), "a/b, models of a, on tpu, regression and fix"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if (Filter{}).Describe() != "" {
		t.Error("the zero filter describes something")
	}
}

const secret = "0123456789abcdef0123"

func TestParseWebhooks(t *testing.T) {
	ws, err := ParseWebhooks([]byte(`[
	  {"url": "https://hooks.example.org/services/T0/B0/XYZ", "secret": "` + secret + `", "filters": {"model": ["Qwen/Qwen3-0.6B"], "kind": ["regression", "fix", "regression"]}},
	  {"name": "ci", "url": "http://127.0.0.1:9000/hook", "secret": "` + secret + `", "filters": {}},
	  {"url": "https://chat.example.org/x", "secret": "` + secret + `"}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 {
		t.Fatalf("%d webhooks", len(ws))
	}
	// An unnamed webhook is labelled by its place in the file, never by a
	// part of its URL (its host may be a credential; /metrics is public).
	if ws[0].Label() != "#1" || ws[1].Label() != "ci" || ws[2].Label() != "#3" || ws[2].Index != 3 {
		t.Errorf("labels %q, %q, %q", ws[0].Label(), ws[1].Label(), ws[2].Label())
	}
	if !slices.Equal(ws[0].Filters.Kinds, []string{"regression", "fix"}) || ws[0].Filters.Models[0] != "Qwen/Qwen3-0.6B" {
		t.Errorf("filters %+v", ws[0].Filters)
	}
	if !ws[2].Filters.Empty() {
		t.Errorf("no filters = %+v, want everything", ws[2].Filters)
	}
	if ws[0].Key() == ws[2].Key() || len(ws[0].Key()) != 24 || strings.Contains(ws[0].Key(), "hooks") {
		t.Errorf("keys %q %q", ws[0].Key(), ws[2].Key())
	}
	// Printed or logged, a webhook shows neither its secret nor its URL's path.
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "webhook", ws[0], "all", ws)
	for _, out := range []string{fmt.Sprint(ws[0]), fmt.Sprintf("%+v", ws[0]), fmt.Sprintf("%#v", ws[0]), fmt.Sprintf("%v", ws), logged.String()} {
		if strings.Contains(out, secret) || strings.Contains(out, "XYZ") || strings.Contains(out, "hooks.example") {
			t.Errorf("printed with its secret or a part of its URL: %s", out)
		}
		if !strings.Contains(out, "#1") {
			t.Errorf("printed without its label: %s", out)
		}
	}
}

// TestUnnamedWebhooksOnOneHostAreApart: two unnamed webhooks on one host
// (different paths) are two webhooks with two labels, not one series.
func TestUnnamedWebhooksOnOneHostAreApart(t *testing.T) {
	ws, err := ParseWebhooks([]byte(`[{"url": "https://h.example/a", "secret": "` + secret + `"}, {"url": "https://h.example/b", "secret": "` + secret + `"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if ws[0].Label() == ws[1].Label() || ws[0].Key() == ws[1].Key() {
		t.Errorf("labels %q and %q, keys %q and %q: want each its own", ws[0].Label(), ws[1].Label(), ws[0].Key(), ws[1].Key())
	}
	// Distinct refuses webhooks made otherwise (not from a file) alike.
	if err := Distinct([]Webhook{{Name: "x", URL: "https://h.example/a"}, {Name: "x", URL: "https://h.example/b"}}); err == nil || !strings.Contains(err.Error(), "webhook #2 (x): the same name as webhook #1") {
		t.Errorf("Distinct: %v", err)
	}
	if err := Distinct(ws); err != nil {
		t.Errorf("Distinct of a parsed file: %v", err)
	}
}

// TestSigningKey: the Standard Webhooks key of a "whsec_" secret is the
// bytes it encodes (as that standard's libraries read it); of any other
// secret, its bytes as written.
func TestSigningKey(t *testing.T) {
	ws, err := ParseWebhooks([]byte(`[{"url": "https://a.example/1", "secret": "` + secret + `"},
	  {"url": "https://a.example/2", "secret": "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(ws[0].SigningKey()); got != secret {
		t.Errorf("a plain secret's key %q, want the secret", got)
	}
	if got := string(ws[1].SigningKey()); got != "0123456789abcdef01234567" {
		t.Errorf("a whsec_ secret's key %q, want the bytes it encodes", got)
	}
}

func TestParseWebhooksRefuses(t *testing.T) {
	ok := `{"url": "https://a.example/h", "secret": "` + secret + `"}`
	for _, tc := range []struct {
		name, file, want string
	}{
		{"not json", `[`, "not a JSON list"},
		{"an object", ok, "not a JSON list"},
		{"empty", `[]`, "no webhook"},
		{"no url", `[{"secret": "` + secret + `"}]`, "webhook #1: url is missing"},
		{"ftp", `[` + ok + `, {"url": "ftp://b.example/h", "secret": "` + secret + `"}]`, `webhook #2 (b.example): url: scheme "ftp" refused`},
		{"file", `[{"url": "file:///etc/passwd", "secret": "` + secret + `"}]`, "webhook #1"},
		{"relative", `[{"url": "/hook", "secret": "` + secret + `"}]`, "webhook #1: url: want an absolute"},
		{"no secret", `[{"url": "https://a.example/h"}]`, "webhook #1 (a.example): secret is missing"},
		{"short secret", `[{"url": "https://a.example/h", "secret": "short"}]`, "shorter than 16"},
		{"bad filter", `[{"url": "https://a.example/h", "secret": "` + secret + `", "filters": {"kind": ["oops"]}}]`, `webhook #1 (a.example): filters: kind "oops"`},
		{"runtime kind", `[{"url": "https://a.example/h", "secret": "` + secret + `", "filters": {"kind": ["fix", "runtime"]}}]`, `webhook #1 (a.example): filters: kind "runtime": a webhook is told of status changes`},
		{"auto target", `[{"url": "https://a.example/h", "secret": "` + secret + `", "filters": {"target": "auto"}}]`, "filters: target"},
		{"kind as a string", `[{"url": "https://a.example/h", "secret": "` + secret + `", "filters": {"kind": "fix"}}]`, `"kind": [kinds]`},
		{"unknown field", `[{"url": "https://a.example/h", "secret": "` + secret + `", "events": ["x"]}]`, `unknown field "events"`},
		{"unknown filter", `[{"url": "https://a.example/h", "secret": "` + secret + `", "filters": {"models": ["a/b"]}}]`, `want url, name and secret`},
		{"duplicate", `[` + ok + `,` + ok + `]`, "webhook #2 (a.example): the same url as webhook #1"},
		{"same name", `[{"name": "x", "url": "https://a.example/1", "secret": "` + secret + `"}, {"name": "x", "url": "https://a.example/2", "secret": "` + secret + `"}]`, "same name"},
		{"the same url but for case and port", `[` + ok + `, {"url": "HTTPS://A.example:443/h", "secret": "` + secret + `"}]`, "webhook #2 (A.example:443): the same url as webhook #1"},
		{"the same url but for an empty path", `[{"url": "https://a.example", "secret": "` + secret + `"}, {"url": "https://a.example/", "secret": "` + secret + `"}]`, "the same url as webhook #1"},
		{"a name that is another's label", `[` + ok + `, {"name": "#1", "url": "https://a.example/2", "secret": "` + secret + `"}]`, "webhook #2 (#1): name: may not start with #"},
		{"whsec_ not in base64", `[{"url": "https://a.example/h", "secret": "whsec_not*base64*at*all"}]`, "webhook #1 (a.example): secret: one that starts with whsec_ must be Standard Webhooks' form"},
		{"whsec_ too short", `[{"url": "https://a.example/h", "secret": "whsec_ZmlmdGVlbi1ieXRlcyEh"}]`, "at least 16 bytes in base64"},
		{"name with a quote", `[{"name": "a\"b", "url": "https://a.example/1", "secret": "` + secret + `"}]`, "name:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWebhooks([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
	// A secret that the decoder would quote in its error stays out of it.
	_, err := ParseWebhooks([]byte(`[{"url": "https://a.example/h", "secret": 12345678901234567890}]`))
	if err == nil || strings.Contains(err.Error(), "12345678901234567890") {
		t.Errorf("err %v", err)
	}
}

// A webhook may ask for the serving changes alone (kinds of their own):
// they pass its filter, the inference's and the train step's do not.
func TestWebhookServingKinds(t *testing.T) {
	ws, err := ParseWebhooks([]byte(`[{"url": "https://hooks.example.org/s", "secret": "` + secret + `",
	  "filters": {"kind": ["serving_regression", "serving_fix"]}}]`))
	if err != nil {
		t.Fatal(err)
	}
	f := ws[0].Filters
	for kind, want := range map[compat.EventKind]bool{
		compat.EventServingRegression: true, compat.EventServingFix: true, compat.EventServingNew: false,
		compat.EventRegression: false, compat.EventTrainRegression: false,
	} {
		if got := f.Match(Item{ModelID: "org/m", Target: compat.TargetTPU, Kind: string(kind)}); got != want {
			t.Errorf("a %s change passes %v, want %v", kind, got, want)
		}
	}
}
