package hub

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

var smallFiles = []string{"config.json", "tokenizer.json", "1_Pooling/config.json", "model.safetensors"}

func TestDownloadCacheLayout(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, func(o *Options) { o.Token = "hf_secret" }, r)
	e.hub.SetToken("hf_secret")
	ctx := context.Background()
	if _, err := e.c.ListModels(ctx, ListOptions{Limit: 10}); err != nil { // tells the client sha is main
		t.Fatal(err)
	}
	sha := e.hub.SHA("acme/tiny")
	snap, err := e.c.Download(ctx, "acme/tiny", sha, smallFiles)
	if err != nil {
		t.Fatal(err)
	}
	repoDir := filepath.Join(e.cache, "models--acme--tiny")
	if snap != filepath.Join(repoDir, "snapshots", sha) || snap != SnapshotDir(e.cache, "acme/tiny", sha) {
		t.Fatalf("snapshot %s", snap)
	}
	wantLinks := map[string]string{
		"config.json":           "../../blobs/" + hubtest.GitBlobSHA1(r.Files["config.json"]),
		"tokenizer.json":        "../../blobs/" + hubtest.GitBlobSHA1(r.Files["tokenizer.json"]),
		"1_Pooling/config.json": "../../../blobs/" + hubtest.GitBlobSHA1(r.Files["1_Pooling/config.json"]),
		"model.safetensors":     "../../blobs/" + hubtest.SHA256(r.Files["model.safetensors"]),
	}
	for name, want := range wantLinks {
		p := filepath.Join(snap, filepath.FromSlash(name))
		got, err := os.Readlink(p)
		if err != nil || got != want {
			t.Errorf("%s -> %q (%v), want relative link %q", name, got, err, want)
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, r.Files[name]) {
			t.Errorf("%s: content differs (%v)", name, err)
		}
	}
	if ref, err := os.ReadFile(filepath.Join(repoDir, "refs", "main")); err != nil || string(ref) != sha {
		t.Errorf("refs/main = %q, %v; want %s (no newline)", ref, err, sha)
	}
	if _, err := os.Stat(filepath.Join(e.cache, "CACHEDIR.TAG")); err != nil {
		t.Errorf("CACHEDIR.TAG: %v", err)
	}
	blobs, _ := os.ReadDir(filepath.Join(repoDir, "blobs"))
	for _, b := range blobs {
		if strings.HasSuffix(b.Name(), ".incomplete") {
			t.Errorf("left over %s", b.Name())
		}
	}
	if len(blobs) != 4 {
		t.Errorf("%d blobs, want 4", len(blobs))
	}
	// Pinned to the commit, never main; token to the Hub only.
	for _, req := range e.requests("hub", "/acme/tiny/resolve/") {
		if !strings.HasPrefix(req.Path, "/acme/tiny/resolve/"+sha+"/") {
			t.Errorf("resolve not pinned: %s", req.Path)
		}
		if req.Authorization != "Bearer hf_secret" {
			t.Errorf("hub request without the token: %+v", req)
		}
	}
	cdn := e.requests("cdn", "/")
	if len(cdn) != 1 || cdn[0].Authorization != "" || cdn[0].Status != 200 {
		t.Fatalf("CDN requests %+v: want one, without Authorization", cdn)
	}
	var gets int
	for _, req := range e.requests("hub", "/acme/tiny/resolve/") {
		if req.Method == "GET" && req.Status == 200 {
			gets++
		}
	}
	if gets != 3 {
		t.Errorf("%d files fetched from the Hub, want the 3 in git", gets)
	}
}

func TestDownloadSecondTimeNoRequest(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	ctx := context.Background()
	sha := e.hub.SHA("acme/tiny")
	if _, err := e.c.Download(ctx, "acme/tiny", sha, smallFiles); err != nil {
		t.Fatal(err)
	}
	e.hub.ResetLog()
	if _, err := e.c.Download(ctx, "acme/tiny", sha, smallFiles); err != nil {
		t.Fatal(err)
	}
	if reqs := e.hub.Requests(); len(reqs) != 0 {
		t.Fatalf("second download sent %d requests: %+v", len(reqs), reqs)
	}
	// A new commit with the same files: resolved again, but no content moves.
	newSHA := strings.Repeat("c", 40)
	e.hub.SetSHA("acme/tiny", newSHA)
	if _, err := e.c.Download(ctx, "acme/tiny", newSHA, smallFiles); err != nil {
		t.Fatal(err)
	}
	if cdn := e.requests("cdn", "/"); len(cdn) != 0 {
		t.Fatalf("blob already cached, yet %d CDN requests", len(cdn))
	}
	heads := 0
	for _, req := range e.requests("hub", "/") {
		if req.Method != "HEAD" {
			t.Errorf("blob already cached, yet %s %s", req.Method, req.Path)
		}
		heads++
	}
	if heads != len(smallFiles) {
		t.Errorf("%d HEAD requests for the new commit, want %d", heads, len(smallFiles))
	}
}

func TestDownloadRefsMainOnlyWhenMain(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	old := e.hub.SHA("acme/tiny")
	e.hub.SetSHA("acme/tiny", strings.Repeat("d", 40))
	ctx := context.Background()
	if _, err := e.c.ModelInfo(ctx, "acme/tiny", ""); err != nil { // main is now dddd…
		t.Fatal(err)
	}
	if _, err := e.c.Download(ctx, "acme/tiny", old, []string{"config.json"}); err != nil {
		t.Fatal(err)
	}
	refsMain := filepath.Join(RepoDir(e.cache, "acme/tiny"), "refs", "main")
	if _, err := os.Stat(refsMain); !os.IsNotExist(err) {
		t.Fatalf("refs/main written for a commit that is not main (%v)", err)
	}
	// The info of a pinned commit says nothing about main.
	if mi, err := e.c.ModelInfo(ctx, "acme/tiny", old); err != nil || mi.SHA != old {
		t.Fatalf("ModelInfo at %s = %q, %v", old, mi.SHA, err)
	}
	if _, err := e.c.Download(ctx, "acme/tiny", old, []string{"config.json"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(refsMain); !os.IsNotExist(err) {
		t.Fatalf("refs/main written after the info of a pinned commit (%v)", err)
	}
	// main's head, as ModelInfo(main) reported it, is main.
	if _, err := e.c.Download(ctx, "acme/tiny", strings.Repeat("d", 40), []string{"config.json"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(refsMain); err != nil || string(b) != strings.Repeat("d", 40) {
		t.Fatalf("refs/main = %q, %v; want main's head", b, err)
	}
}

func TestDownloadAllowlist(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	sha := e.hub.SHA("acme/tiny")
	for _, f := range []string{"pytorch_model.bin", "modeling_evil.py", "../../etc/passwd", ".gitattributes"} {
		_, err := e.c.Download(context.Background(), "acme/tiny", sha, []string{"config.json", f})
		if !errors.Is(err, ErrNotAllowed) {
			t.Errorf("%s: err = %v, want ErrNotAllowed", f, err)
		}
	}
	if reqs := e.hub.Requests(); len(reqs) != 0 {
		t.Fatalf("%d requests sent for refused files", len(reqs))
	}
	if _, err := e.c.Download(context.Background(), "acme/tiny", "main", []string{"config.json"}); err == nil {
		t.Fatal("a branch name was accepted as a pinned revision")
	}
}

func TestDownloadIntegrity(t *testing.T) {
	tests := []struct {
		name, prefix, file string
	}{
		{"LFS sha256 mismatch", "/lfs/", "model.safetensors"},
		{"git blob sha1 mismatch", "/acme/tiny/resolve/", "config.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil, smallModel("acme/tiny"))
			e.hub.Fault(tt.prefix, hubtest.Corrupt())
			sha := e.hub.SHA("acme/tiny")
			_, err := e.c.Download(context.Background(), "acme/tiny", sha, []string{tt.file})
			if !errors.Is(err, ErrIntegrity) {
				t.Fatalf("err = %v, want ErrIntegrity", err)
			}
			snap := SnapshotDir(e.cache, "acme/tiny", sha)
			if _, err := os.Lstat(filepath.Join(snap, tt.file)); !os.IsNotExist(err) {
				t.Errorf("%s linked despite the mismatch", tt.file)
			}
			blobs, _ := os.ReadDir(filepath.Join(RepoDir(e.cache, "acme/tiny"), "blobs"))
			if len(blobs) != 0 {
				t.Errorf("blobs left: %v", blobs)
			}
		})
	}
}

func TestDownloadResume(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, nil, r)
	e.hub.Fault("/lfs/", hubtest.Truncate(30000))
	sha := e.hub.SHA("acme/tiny")
	snap, err := e.c.Download(context.Background(), "acme/tiny", sha, []string{"model.safetensors"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(snap, "model.safetensors"))
	if err != nil || !bytes.Equal(b, r.Files["model.safetensors"]) {
		t.Fatalf("content differs after resume (%v)", err)
	}
	cdn := e.requests("cdn", "/lfs/")
	if len(cdn) != 2 || cdn[0].Range != "" || cdn[1].Range != "bytes=30000-" || cdn[1].Status != 206 {
		t.Fatalf("CDN requests %+v: want a full GET, then Range bytes=30000-", cdn)
	}
}

// A transfer that keeps breaking gives up, keeps its .incomplete, and the
// next Download resumes from there.
func TestDownloadResumeAcrossRuns(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, nil, r)
	e.hub.Fault("/lfs/", hubtest.Truncate(1000).Times(-1))
	sha := e.hub.SHA("acme/tiny")
	if _, err := e.c.Download(context.Background(), "acme/tiny", sha, []string{"model.safetensors"}); err == nil {
		t.Fatal("want an error while every transfer breaks")
	}
	inc := filepath.Join(RepoDir(e.cache, "acme/tiny"), "blobs", hubtest.SHA256(r.Files["model.safetensors"])+".incomplete")
	fi, err := os.Stat(inc)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("partial blob not kept: %v", err)
	}
	e2 := newEnvShared(t, e, r)
	if _, err := e2.c.Download(context.Background(), "acme/tiny", e2.hub.SHA("acme/tiny"), []string{"model.safetensors"}); err != nil {
		t.Fatal(err)
	}
	cdn := e2.requests("cdn", "/lfs/")
	if len(cdn) != 1 || cdn[0].Range != "bytes="+strconv.FormatInt(fi.Size(), 10)+"-" {
		t.Fatalf("CDN requests %+v: want one Range request from byte %d", cdn, fi.Size())
	}
}

// newEnvShared starts a fresh fake Hub with repo r and a client using the
// cache of e.
func newEnvShared(t *testing.T, e *env, r hubtest.Repo) *env {
	e2 := newEnv(t, nil, r)
	c, err := New(Options{Endpoint: e2.hub.URL(), CacheDir: e.cache, Sleep: e2.waits.sleep})
	if err != nil {
		t.Fatal(err)
	}
	e2.c, e2.cache = c, e.cache
	return e2
}

func TestDownloadSizeCaps(t *testing.T) {
	tests := []struct {
		name        string
		file, model int64
		files       []string
	}{
		{"file over MaxFileBytes", 50000, 0, []string{"model.safetensors"}},
		{"model over MaxModelBytes", 0, 100010, []string{"config.json", "tokenizer.json", "model.safetensors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.MaxFileBytes, o.MaxModelBytes, o.Concurrency = tt.file, tt.model, 1 }, smallModel("acme/tiny"))
			sha := e.hub.SHA("acme/tiny")
			_, err := e.c.Download(context.Background(), "acme/tiny", sha, tt.files)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if cdn := e.requests("cdn", "/"); len(cdn) != 0 {
				t.Errorf("the weights were fetched although X-Linked-Size is over the limit: %+v", cdn)
			}
			if _, err := os.Lstat(filepath.Join(SnapshotDir(e.cache, "acme/tiny", sha), "model.safetensors")); !os.IsNotExist(err) {
				t.Errorf("model.safetensors linked")
			}
		})
	}
}

// TestDownloadKindCaps: a file over its kind's cap (FileCap) is refused
// before any content moves, whatever MaxFileBytes allows, and a file within
// its cap comes; the refusal names the file.
func TestDownloadKindCaps(t *testing.T) {
	capped := "chat_template.jinja"
	limit := FileCap(capped)
	repo := smallModel("acme/tiny")
	repo.Files[capped] = bytes.Repeat([]byte("x"), int(limit)+1)
	repo.Files["tokenizer_config.json"] = []byte(`{"model_max_length": 128}`)
	e := newEnv(t, nil, repo)
	sha := e.hub.SHA("acme/tiny")
	_, err := e.c.Download(context.Background(), "acme/tiny", sha, []string{capped})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), capped) {
		t.Fatalf("err = %v, want ErrTooLarge naming %s", err, capped)
	}
	for _, r := range e.requests("", "/acme/tiny/resolve/") {
		if r.Method != http.MethodHead {
			t.Errorf("%s %s: content asked for although the announced size is over the cap", r.Method, r.Path)
		}
	}
	snap := SnapshotDir(e.cache, "acme/tiny", sha)
	if _, err := os.Lstat(filepath.Join(snap, capped)); !os.IsNotExist(err) {
		t.Errorf("%s linked", capped)
	}
	if _, err := e.c.Download(context.Background(), "acme/tiny", sha, []string{"tokenizer_config.json"}); err != nil {
		t.Fatalf("a file within its cap: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(snap, "tokenizer_config.json")); err != nil || string(b) != `{"model_max_length": 128}` {
		t.Errorf("tokenizer_config.json: %q %v", b, err)
	}
}

func TestDownloadRename(t *testing.T) {
	r := smallModel("new-org/tiny")
	r.RenamedFrom = []string{"old-org/tiny"}
	e := newEnv(t, func(o *Options) { o.Token = "hf_tok" }, r)
	sha := e.hub.SHA("new-org/tiny")
	snap, err := e.c.Download(context.Background(), "old-org/tiny", sha, []string{"config.json", "model.safetensors"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(snap, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	var moved int
	for _, req := range e.requests("hub", "/") {
		if req.Status == 307 {
			moved++
		}
		if req.Authorization != "Bearer hf_tok" {
			t.Errorf("hub request %s without token", req.Path)
		}
	}
	if moved != 2 {
		t.Errorf("%d renames followed, want 2", moved)
	}
	if cdn := e.requests("cdn", "/"); len(cdn) != 1 || cdn[0].Authorization != "" {
		t.Errorf("CDN %+v", cdn)
	}
}

func TestDownloadConcurrentSameModel(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	sha := e.hub.SHA("acme/tiny")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := e.c.Download(context.Background(), "acme/tiny", sha, smallFiles)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	snap := SnapshotDir(e.cache, "acme/tiny", sha)
	for _, f := range smallFiles {
		if _, err := os.Stat(filepath.Join(snap, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestScanCache(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, nil, r, smallModel("gpt2"))
	ctx := context.Background()
	if _, err := e.c.ListModels(ctx, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"acme/tiny", "gpt2"} {
		if _, err := e.c.Download(ctx, id, e.hub.SHA(id), smallFiles); err != nil {
			t.Fatal(err)
		}
	}
	// Noise a real cache has: datasets, locks, a dangling link, a snapshot without refs.
	os.MkdirAll(filepath.Join(e.cache, "datasets--x--y", "snapshots"), 0o755)
	snap := SnapshotDir(e.cache, "gpt2", e.hub.SHA("gpt2"))
	os.Symlink("../../blobs/missing", filepath.Join(snap, "vocab.txt"))
	os.Remove(filepath.Join(RepoDir(e.cache, "gpt2"), "refs", "main"))

	got, err := ScanCache(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []string{"acme/tiny", "gpt2"}) {
		t.Fatalf("ids %v", ids(got))
	}
	m := got[0]
	if m.SHA != e.hub.SHA("acme/tiny") || m.Config["model_type"] != "gpt2" || !m.FilesMetadata {
		t.Fatalf("%+v", m)
	}
	files, total := WeightFiles(m.Siblings)
	if !slices.Equal(files, []string{"model.safetensors"}) || total != int64(len(r.Files["model.safetensors"])) {
		t.Errorf("weights %v %d", files, total)
	}
	for _, s := range m.Siblings {
		if s.Name == "model.safetensors" && s.LFSSHA256 != hubtest.SHA256(r.Files["model.safetensors"]) {
			t.Errorf("LFS sha %+v", s)
		}
	}
	if g := got[1]; g.SHA != e.hub.SHA("gpt2") || len(g.Siblings) != 4 {
		t.Errorf("gpt2 without refs/main: %+v", g)
	}
	if none, err := ScanCache(filepath.Join(e.cache, "absent")); err != nil || len(none) != 0 {
		t.Errorf("missing cache: %v %v", none, err)
	}
}
