package watch

import (
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestDescribeOneField: a filter naming one thing describes that thing
// alone (no empty parts before or after it).
func TestDescribeOneField(t *testing.T) {
	for _, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{Target: compat.TargetTPU}, "on tpu"},
		{Filter{Org: "google"}, "models of google"},
		{Filter{Models: []string{"a/b"}}, "a/b"},
		{Filter{Kinds: []string{"fix"}}, "fix"},
	} {
		if got := tc.f.Describe(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}

// TestWebhookBounds: each cap accepts its own value and refuses one more
// (one less for the secret's least length); a refusal quotes a value of 80
// bytes whole and clips a longer one.
func TestWebhookBounds(t *testing.T) {
	hook := func(fields string) string {
		return `{"url": "https://a.example/h", "secret": "` + secret + `"` + fields + `}`
	}
	models := func(n int) string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = `"org/m` + strings.Repeat("x", i) + `"`
		}
		return `, "filters": {"model": [` + strings.Join(ids, ",") + `]}`
	}
	pad := func(body string, n int) string { return body + strings.Repeat(" ", n-len(body)) }
	for _, tc := range []struct {
		name, file, wantErr string // "" = accepted
	}{
		{"a file of exactly the cap", pad("["+hook("")+"]", MaxWebhooksFileBytes), ""},
		{"a file a byte over", pad("["+hook("")+"]", MaxWebhooksFileBytes+1), "over the"},
		{"20 models", "[" + hook(models(20)) + "]", ""},
		{"21 models", "[" + hook(models(21)) + "]", "model: 21 ids, at most 20"},
		{"a name of 64 bytes", "[" + hook(`, "name": "`+strings.Repeat("n", 64)+`"`) + "]", ""},
		{"a name of 65 bytes", "[" + hook(`, "name": "`+strings.Repeat("n", 65)+`"`) + "]", "name: at most 64"},
		{"a secret of 16 bytes", `[{"url": "https://a.example/h", "secret": "` + secret[:16] + `"}]`, ""},
		{"a secret of 15 bytes", `[{"url": "https://a.example/h", "secret": "` + secret[:15] + `"}]`, "shorter than 16 bytes"},
		{"the same name twice", `[` + hook(`, "name": "ci"`) + `, {"name": "ci", "url": "https://b.example/h", "secret": "` + secret + `"}]`,
			"webhook #2 (ci): the same name as webhook #1"},
		{"a kind of 80 bytes", "[" + hook(`, "filters": {"kind": ["`+strings.Repeat("k", 80)+`"]}`) + "]", `"` + strings.Repeat("k", 80) + `"`},
		{"a kind of 81 bytes", "[" + hook(`, "filters": {"kind": ["`+strings.Repeat("k", 81)+`"]}`) + "]", `"` + strings.Repeat("k", 80) + `…"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWebhooks([]byte(tc.file))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}
