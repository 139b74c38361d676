package hub

import (
	"errors"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestParseLinks(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		next   string
	}{
		{"hub", []string{`<https://huggingface.co/api/models?limit=1000&cursor=eyJ0IjoxfQ%3D%3D>; rel="next"`},
			"https://huggingface.co/api/models?limit=1000&cursor=eyJ0IjoxfQ%3D%3D"},
		{"unquoted rel", []string{`<https://h/a?p=2>; rel=next`}, "https://h/a?p=2"},
		{"several links, next last", []string{`<https://h/a?p=1>; rel="prev", <https://h/a?p=3>; rel="next"`}, "https://h/a?p=3"},
		{"several header values", []string{`<https://h/a?p=1>; rel="first"`, `<https://h/a?p=2>; rel="next"`}, "https://h/a?p=2"},
		{"rel list", []string{`<https://h/a?p=2>; rel="last next"`}, "https://h/a?p=2"},
		{"comma and semicolon in the url", []string{`<https://h/a?f=a,b;c>; rel="next"`}, "https://h/a?f=a,b;c"},
		{"quoted comma in a param", []string{`<https://h/x>; title="a, b"; rel="prev", <https://h/y>; rel="next"`}, "https://h/y"},
		{"escaped quote", []string{`<https://h/x>; title="say \"hi\", ok"; rel=next`}, "https://h/x"},
		{"case and spaces", []string{`  < https://h/z > ;  REL = "Next" `}, "https://h/z"},
		{"first rel wins", []string{`<https://h/z>; rel="prev"; rel="next"`}, ""},
		{"relative", []string{`</api/models?cursor=abc>; rel="next"`}, "/api/models?cursor=abc"},
		{"an empty link first", []string{`<>; rel="prev", <https://h/y>; rel="next"`}, "https://h/y"},
		{"a url ending in a comma", []string{`<https://h/a?f=a,>; rel="next"`}, "https://h/a?f=a,"},
		{"a param value that is a '<'", []string{`<https://h/a>; x=<, <https://h/b>; rel="next"`}, "https://h/b"},
		{"no blank before a param", []string{`<https://h/x>;rel=next`}, "https://h/x"},
		{"tabs around a param", []string{"<https://h/x>;\trel\t=\tnext"}, "https://h/x"},
		{"a trailing separator and blanks", []string{`<https://h/x>; rel="next"; `}, "https://h/x"},
		{"an unterminated quote runs to the end", []string{`<https://h/x>; rel="next`}, "https://h/x"},
		{"a backslash last in a quote", []string{`<https://h/x>; rel=next; title="a\`}, "https://h/x"},
		{"a quoted value ending in a comma", []string{`<https://h/x>; title="x,"; rel="next"`}, "https://h/x"},
		{"a url ending in a semicolon, then junk", []string{`<https://h/a;> x=1; rel="next"`}, "https://h/a;"},
		{"no next", []string{`<https://h/a>; rel="prev"`}, ""},
		{"empty", nil, ""},
		{"garbage", []string{`rel="next"`, `<unterminated; rel="next"`, `;;,,<`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextLink(tt.values); got != tt.next {
				t.Fatalf("nextLink = %q, want %q", got, tt.next)
			}
		})
	}
}

func FuzzParseLink(f *testing.F) {
	for _, s := range []string{
		`<https://huggingface.co/api/models?cursor=abc>; rel="next"`,
		`<a>; rel=prev, <b>; rel="next"; title="x, y"`,
		`<a>; title="\"", <b>; rel=next`,
		`<`, `>`, `;`, `"`, `<a>;rel`, `<a>; rel=`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		links := ParseLinks([]string{s})
		for _, l := range links {
			if strings.ContainsRune(l.URL, '>') {
				t.Fatalf("URL %q contains '>'", l.URL)
			}
		}
		// A well-formed next link survives anything after a comma.
		u := strings.Map(func(r rune) rune {
			if r == '<' || r == '>' || r == ' ' {
				return -1
			}
			return r
		}, s)
		if got := nextLink([]string{`<` + u + `>; rel="next", ` + s}); got != strings.TrimSpace(u) {
			t.Fatalf("next %q, want %q", got, u)
		}
	})
}

func TestParseRateLimit(t *testing.T) {
	tests := []struct {
		name         string
		rl, policy   string
		ok           bool
		want         RateLimit
		lowerBoundOK bool
	}{
		{"hub", `"api";r=489;t=189`, `"fixed window";"api";q=500;w=300`, true,
			RateLimit{Resource: "api", Remaining: 489, Reset: 189 * time.Second, Limit: 500, Window: 300 * time.Second}, false},
		{"spent", `"resolvers";r=0;t=55`, "", true, RateLimit{Resource: "resolvers", Remaining: 0, Reset: 55 * time.Second}, false},
		{"spaces and order", `"api" ; t = 5 ; r = 3`, `"fixed window"; "api"; w=60; q=100`, true,
			RateLimit{Resource: "api", Remaining: 3, Reset: 5 * time.Second, Limit: 100, Window: time.Minute}, false},
		{"policy for another resource first", `"api";r=1;t=2`, `"fixed window";"pages";q=100;w=300, "fixed window";"api";q=500;w=300`, true,
			RateLimit{Resource: "api", Remaining: 1, Reset: 2 * time.Second, Limit: 500, Window: 300 * time.Second}, false},
		{"missing t", `"api";r=1`, "", false, RateLimit{}, false},
		{"negative", `"api";r=-1;t=5`, "", false, RateLimit{}, false},
		{"not numbers", `"api";r=x;t=y`, "", false, RateLimit{}, false},
		{"absent", "", "", false, RateLimit{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.rl != "" {
				h.Set("RateLimit", tt.rl)
			}
			if tt.policy != "" {
				h.Set("RateLimit-Policy", tt.policy)
			}
			got, ok := ParseRateLimit(h)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzParseRateLimit(f *testing.F) {
	f.Add(`"api";r=489;t=189`, `"fixed window";"api";q=500;w=300`)
	f.Add(`"api";r=0;t=0`, ``)
	f.Add(`r=1;t=2`, `q=1;w=1`)
	f.Add(`"a";r=99999999999999999999;t=1`, `;;;`)
	f.Add(`,,,"x";t=1;r=1,`, `"y";q=2;w=3,"x";q=4;w=5`)
	f.Fuzz(func(t *testing.T, rl, policy string) {
		h := http.Header{"Ratelimit": {rl}, "Ratelimit-Policy": {policy}}
		got, ok := ParseRateLimit(h)
		if !ok {
			return
		}
		if got.Remaining < 0 || got.Reset < 0 || got.Limit < 0 || got.Window < 0 {
			t.Fatalf("negative value: %+v", got)
		}
		// The pacer copes with any parsed value.
		var p pacer
		now := time.Unix(1_700_000_000, 0)
		p.observe(got, now)
		if d := p.wait(got.Resource, now); d < 0 || d > got.Reset+time.Second {
			t.Fatalf("wait %v for %+v", d, got)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{" 0 ", 0, true},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"-5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(http.Header{"Retry-After": {tt.v}}, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q: got %v %v, want %v %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPacer(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var p pacer
	if d := p.wait("api", now); d != 0 {
		t.Fatalf("unknown bucket waits %v", d)
	}
	p.observe(RateLimit{Resource: "api", Remaining: 400, Reset: 100 * time.Second, Limit: 500}, now)
	if d := p.wait("api", now); d != 0 {
		t.Fatalf("plenty left, yet waits %v", d)
	}
	// 49 left of 500 (under a tenth): spread over the 100 s left.
	p.observe(RateLimit{Resource: "api", Remaining: 49, Reset: 100 * time.Second, Limit: 500}, now)
	d1, d2 := p.wait("api", now), p.wait("api", now)
	if d1 != 0 || d2 != 2*time.Second {
		t.Fatalf("spread waits %v, %v; want 0 then 2s", d1, d2)
	}
	p.observe(RateLimit{Resource: "api", Remaining: 0, Reset: 30 * time.Second}, now)
	if d := p.wait("api", now); d != 31*time.Second {
		t.Fatalf("spent budget waits %v, want 31s", d)
	}
	if d := p.wait("api", now.Add(31*time.Second)); d != 0 {
		t.Fatalf("after the reset waits %v", d)
	}
	if d := p.wait("resolvers", now); d != 0 {
		t.Fatalf("other resource waits %v", d)
	}
}

// FuzzSnapshotDir: an id that compat.ValidateModelID accepts never leads a
// cache path out of the cache, and names its cache folder one-to-one.
func FuzzSnapshotDir(f *testing.F) {
	for _, s := range []string{"gpt2", "org/name", "../x", "a--b", "a/b/c", "a.git", "-x", "x/.", "日本/語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if compat.ValidateModelID(id) != nil {
			return
		}
		if strings.Contains(id, "..") || strings.Contains(id, "--") || strings.Count(id, "/") > 1 || len(id) > 193 {
			t.Fatalf("accepted %q", id)
		}
		// A valid id never leads out of the cache, and maps back to itself.
		cache := filepath.FromSlash("/cache/hub")
		dir := SnapshotDir(cache, id, strings.Repeat("a", 40))
		rel, err := filepath.Rel(cache, dir)
		if err != nil || strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) != 2 {
			t.Fatalf("%q: snapshot %s escapes or nests (%s)", id, dir, rel)
		}
		if back := strings.Replace(strings.TrimPrefix(repoFolderName(id), "models--"), "--", "/", 1); back != id {
			t.Fatalf("%q: folder %s maps back to %q", id, repoFolderName(id), back)
		}
	})
}

func TestAllowedFile(t *testing.T) {
	allowed := []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
		"special_tokens_map.json", "vocab.txt", "vocab.json", "merges.txt", "added_tokens.json", "tokenizer.model",
		"spiece.model", "sentencepiece.bpe.model", "preprocessor_config.json", "processor_config.json",
		"chat_template.jinja", "chat_template.json", "model.safetensors", "model-00001-of-00002.safetensors",
		"model.safetensors.index.json", "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
		"1_Pooling/config.json", "text_encoder/model.safetensors", "qwen.tiktoken", "Config.JSON",
		"spm.model"} // DeBERTa-v3's SentencePiece model: any *.model is protobuf, never unpickled
	refused := []string{"pytorch_model.bin", "model.pt", "model.pth", "model.ckpt", "tf_model.h5", "flax_model.msgpack",
		"model.onnx", "modeling_custom.py", "configuration_x.py", "training_args.bin", "optimizer.pt", "scheduler.pkl",
		"rng_state.pth", "model.gguf", "data.npy", "README.md", ".gitattributes", "../config.json", "/config.json",
		"a//config.json", "./config.json", ".hidden/config.json", "dir\\config.json", "C:config.json", "config.json\n",
		"random.json", "model.safetensors.bak", "model.pkl", "tokenizer.model.bin", ".model", ""}
	for _, f := range allowed {
		if !AllowedFile(f) {
			t.Errorf("%q refused", f)
		}
	}
	for _, f := range refused {
		if AllowedFile(f) {
			t.Errorf("%q allowed", f)
		}
	}
}

func TestWeightFiles(t *testing.T) {
	s := func(name string, size int64) Sibling { return Sibling{Name: name, Size: size} }
	tests := []struct {
		name  string
		sibs  []Sibling
		files []string
		total int64
	}{
		{"single", []Sibling{s("config.json", 1), s("model.safetensors", 100), s("pytorch_model.bin", 100)},
			[]string{"model.safetensors"}, 100},
		{"sharded", []Sibling{s("model-00001-of-00002.safetensors", 10), s("model-00002-of-00002.safetensors", 20),
			s("model.safetensors.index.json", 1), s("consolidated.safetensors", 30), s("fp16/model.safetensors", 5)},
			[]string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"}, 31},
		{"other names", []Sibling{s("diffusion_pytorch_model.safetensors", 7), s("diffusion_pytorch_model.safetensors.index.json", 1)},
			[]string{"diffusion_pytorch_model.safetensors", "diffusion_pytorch_model.safetensors.index.json"}, 8},
		{"pickle only", []Sibling{s("pytorch_model.bin", 100), s("config.json", 1)}, nil, 0},
		{"only in sub-folders", []Sibling{s("onnx/model.safetensors", 3)}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, total := WeightFiles(tt.sibs)
			if !slices.Equal(files, tt.files) || total != tt.total {
				t.Fatalf("got %v %d, want %v %d", files, total, tt.files, tt.total)
			}
		})
	}
}

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		v            string
		start, total int64
		ok           bool
	}{
		{"bytes 100-199/1000", 100, 1000, true},
		{"bytes 0-0/*", 0, -1, true},
		{"bytes */1000", 0, 0, false},
		{"items 1-2/3", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		start, total, ok := parseContentRange(tt.v)
		if start != tt.start || total != tt.total || ok != tt.ok {
			t.Errorf("%q: %d %d %v", tt.v, start, total, ok)
		}
	}
}

func TestNormalizeEtag(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: "abc", `W/"abc"`: "abc", `abc`: "abc", ` "a" `: "a", `""`: ""} {
		if got := normalizeEtag(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

func TestIsRepoPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/api/models":                     false,
		"/api/models/":                    false,
		"/api/models/gpt2":                true,
		"/api/models/a/b/revision/main":   true,
		"/a/b/resolve/main/config.json":   true,
		"/api/resolve-cache/models/a/b/c": true,
		"/api/collections":                false,
	} {
		if got := isRepoPath(p); got != want {
			t.Errorf("%s: %v", p, got)
		}
	}
}

func TestBrief(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), "plain"},
		{
			errors.New(`hub: list models: GET https://huggingface.co/api/models?sort=downloads&limit=1000&expand%5B%5D=sha&expand%5B%5D=gated: dial tcp 1.2.3.4:443: connect: connection refused (after 5 tries)`),
			`hub: list models: GET https://huggingface.co/api/models?…: dial tcp 1.2.3.4:443: connect: connection refused (after 5 tries)`,
		},
		{
			errors.New(`GET http://127.0.0.1:9/api/models?a=1 then "https://x.test/p?q" and http://y.test/no-query`),
			`GET http://127.0.0.1:9/api/models?… then "https://x.test/p?…" and http://y.test/no-query`,
		},
	} {
		if got := Brief(tc.err); got != tc.want {
			t.Errorf("Brief(%v)\n got %q\nwant %q", tc.err, got, tc.want)
		}
	}
}

// TestFileCap: every download has a cap of its kind (the input files'
// from the table the harness reads), and the weights only the client's.
func TestFileCap(t *testing.T) {
	for _, tt := range []struct {
		name   string
		lo, hi int64 // FileCap within [lo, hi]
	}{
		{"tokenizer.json", 16 << 20, 256 << 20},
		{"tokenizer_config.json", 1 << 20, 8 << 20},
		{"preprocessor_config.json", 1 << 20, 8 << 20},
		{"chat_template.jinja", 64 << 10, 4 << 20},
		{"vocab.txt", 1 << 20, 64 << 20},
		{"spm.model", 1 << 20, 64 << 20},
		{"config.json", 1 << 20, 4 << 20},
		{"1_Pooling/config.json", 1 << 20, 4 << 20},
		{"0_Transformer/vocab.txt", 1 << 20, 64 << 20},
		{"0_Transformer/tokenizer.model", 1 << 20, 64 << 20},
		{"Vocab.TXT", 1 << 20, 64 << 20},
		{"model.safetensors.index.json", 16 << 20, 128 << 20},
		{"qwen.tiktoken", 1 << 20, 64 << 20},
		{"model.safetensors", 1 << 40, math.MaxInt64},
		{"model-00001-of-00002.safetensors", 1 << 40, math.MaxInt64},
	} {
		if got := FileCap(tt.name); got < tt.lo || got > tt.hi {
			t.Errorf("FileCap(%q) = %d, want within [%d, %d]", tt.name, got, tt.lo, tt.hi)
		}
	}
}

func TestInputFiles(t *testing.T) {
	var sibs []Sibling
	for _, n := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
		"special_tokens_map.json", "vocab.txt", "merges.txt", "spiece.model", "preprocessor_config.json",
		"processor_config.json", "chat_template.jinja", "generation_config.json", "pytorch_model.bin",
		"tokenization_evil.py", "onnx/tokenizer.json", "1_Pooling/config.json", "README.md", "tokenizer.pkl"} {
		sibs = append(sibs, Sibling{Name: n})
	}
	want := []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "merges.txt",
		"spiece.model", "preprocessor_config.json", "processor_config.json", "chat_template.jinja", "generation_config.json"}
	if got := InputFiles(sibs); !slices.Equal(got, want) {
		t.Errorf("InputFiles = %v\nwant %v", got, want)
	}
	if got := InputFiles(nil); got != nil {
		t.Errorf("InputFiles(nil) = %v", got)
	}
}
