package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// TestCapErrorMessage: a cap error says which file, how large it is when
// that is known, and the cap, in units a person reads.
func TestCapErrorMessage(t *testing.T) {
	tests := []struct {
		err  CapError
		want string
	}{
		{CapError{File: "config.json", Size: 2 << 30, Cap: 4 << 20},
			"config.json is 2.0 GiB, over the 4 MiB cap for a file of its kind"},
		{CapError{File: "tokenizer.json", Size: 3<<20 + 1<<19, Cap: 1 << 20},
			"tokenizer.json is 3.5 MiB, over the 1 MiB cap for a file of its kind"},
		{CapError{File: "vocab.txt", Size: 1536, Cap: 1 << 10},
			"vocab.txt is 1.5 KiB, over the 1.0 KiB cap for a file of its kind"},
		{CapError{File: "merges.txt", Size: 513, Cap: 512},
			"merges.txt is 513 bytes, over the 512 bytes cap for a file of its kind"},
		{CapError{File: "config.json", Size: -1, Cap: 4 << 20},
			"config.json is over the 4 MiB cap for a file of its kind"},
		// Only -1 stands for an unknown size: 0 is a size like any other.
		{CapError{File: "vocab.json", Size: 0, Cap: 0},
			"vocab.json is 0 bytes, over the 0 bytes cap for a file of its kind"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%+v:\n got %q\nwant %q", tt.err, got, tt.want)
		}
		if !errors.Is(&tt.err, ErrTooLarge) {
			t.Errorf("%+v does not match ErrTooLarge", tt.err)
		}
	}
}

func TestSizeText(t *testing.T) {
	for n, want := range map[int64]string{
		0:                      "0 bytes",
		1023:                   "1023 bytes",
		1024:                   "1.0 KiB",
		20070:                  "19.6 KiB",
		1 << 20:                "1 MiB",
		8 << 20:                "8 MiB",
		1<<20 + 1<<19:          "1.5 MiB",
		1<<20 + 1:              "1.0 MiB",
		1 << 30:                "1.0 GiB",
		5<<30 + 1<<29:          "5.5 GiB",
		20 << 30:               "20.0 GiB",
		DefaultMinTransferRate: "512.0 KiB",
	} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestModelCapCountsUnannouncedFiles: a file whose size the Hub did not
// announce counts against MaxModelBytes once it has come, with all it
// brought: a model over the limit is refused, and nothing of that file
// stays in the cache.
func TestModelCapCountsUnannouncedFiles(t *testing.T) {
	for _, tt := range []struct {
		name     string
		maxModel int64
		ok       bool
	}{
		{"over the model limit", 2500, false},
		{"within the model limit", 4000, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := hubtest.Repo{ID: "acme/unsized", Files: map[string][]byte{
				"config.json":    []byte(`{"model_type":"bert"}`),
				"tokenizer.json": []byte("{}"),
			}}
			e := newEnv(t, func(o *Options) { o.MaxModelBytes = tt.maxModel }, repo)
			e.hub.SetHugeFile("acme/unsized", "tokenizer.json", 3000, false)
			sha := e.hub.SHA("acme/unsized")
			snap, err := e.c.Download(context.Background(), "acme/unsized", sha, []string{"config.json", "tokenizer.json"})
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(filepath.Join(snap, "tokenizer.json")); err != nil || fi.Size() != 3000 {
					t.Fatalf("tokenizer.json: %v %v", fi, err)
				}
				return
			}
			if _, isCap := IsCapError(err); !errors.Is(err, ErrTooLarge) || isCap {
				t.Fatalf("err %v, want ErrTooLarge for the model, not a file's cap", err)
			}
			if _, err := os.Lstat(filepath.Join(SnapshotDir(e.cache, "acme/unsized", sha), "tokenizer.json")); !os.IsNotExist(err) {
				t.Errorf("tokenizer.json linked (%v)", err)
			}
			blobs, _ := os.ReadDir(filepath.Join(RepoDir(e.cache, "acme/unsized"), "blobs"))
			for _, b := range blobs {
				if strings.HasPrefix(b.Name(), "huge-") {
					t.Errorf("blob %s of the refused file stayed", b.Name())
				}
			}
		})
	}
}

// TestReadCappedRefusesUnreadKinds: weights, and files the scanner does not
// download, are never read whole: the refusal comes without looking at the
// file, so it reports no size.
func TestReadCappedRefusesUnreadKinds(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	for _, name := range []string{"model.safetensors", "pytorch_model.bin", "modeling_evil.py", "../config.json"} {
		b, err := ReadCapped(missing, name)
		ce, ok := IsCapError(err)
		if b != nil || !ok || ce.File != name || ce.Size != -1 || ce.Cap != 0 {
			t.Errorf("ReadCapped(%q) = %q, %v; want a CapError without a size", name, b, err)
		}
	}
}

// TestDownloadAtTheLimits: a file of exactly MaxFileBytes, and a model of
// exactly MaxModelBytes (fetched, or already cached), are within the
// limits; one byte less of limit is not.
func TestDownloadAtTheLimits(t *testing.T) {
	r := smallModel("acme/tiny")
	var total int64
	for _, f := range smallFiles {
		total += int64(len(r.Files[f]))
	}
	weights := int64(len(r.Files["model.safetensors"]))
	for _, tt := range []struct {
		name            string
		maxFile, maxMod int64
		ok              bool
	}{
		{"the largest file at MaxFileBytes", weights, 0, true},
		{"the largest file one byte over MaxFileBytes", weights - 1, 0, false},
		{"the model at MaxModelBytes", 0, total, true},
		{"the model one byte over MaxModelBytes", 0, total - 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.MaxFileBytes, o.MaxModelBytes = tt.maxFile, tt.maxMod }, r)
			sha := e.hub.SHA("acme/tiny")
			for range 2 { // the second time from the cache
				_, err := e.c.Download(context.Background(), "acme/tiny", sha, smallFiles)
				if tt.ok && err != nil || !tt.ok && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("err %v, want ok %v", err, tt.ok)
				}
				if want := fmt.Sprintf("%d more bytes would bring the model to %d, over the %d-byte model limit", total, total, total-1); tt.maxMod == total-1 && !strings.Contains(err.Error(), want) {
					t.Errorf("err %q, want it to say %q", err, want)
				}
			}
		})
	}
}

// TestDownloadNothingWritesNothing: a Download with no file to fetch asks
// the Hub nothing and leaves the cache as it was.
func TestDownloadNothingWritesNothing(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	snap, err := e.c.Download(context.Background(), "acme/tiny", e.hub.SHA("acme/tiny"), nil)
	if err != nil || snap != SnapshotDir(e.cache, "acme/tiny", e.hub.SHA("acme/tiny")) {
		t.Fatalf("Download of no file = %q, %v", snap, err)
	}
	if entries, _ := os.ReadDir(e.cache); len(entries) != 0 {
		t.Errorf("the cache holds %v after a Download of no file", entries)
	}
	if reqs := e.hub.Requests(); len(reqs) != 0 {
		t.Errorf("requests %+v for no file", reqs)
	}
}

// TestCapLearntFromTheAnswer: a file whose HEAD announced no size, but
// whose content answer does (Content-Length) and is over the file's cap,
// is refused before its body is read, with that size.
func TestCapLearntFromTheAnswer(t *testing.T) {
	sha := strings.Repeat("a", 40)
	const size = 5 << 20
	limit := FileCap("config.json")
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"unsized-config"`)
		w.Header().Set("X-Repo-Commit", sha)
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.WriteHeader(http.StatusOK)
		io.CopyN(w, zeros{}, size)
	}))
	t.Cleanup(s.Close)
	c, err := New(Options{Endpoint: s.URL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Download(context.Background(), "acme/tiny", sha, []string{"config.json"})
	ce, ok := IsCapError(err)
	if !ok || ce.File != "config.json" || ce.Size != size || ce.Cap != limit {
		t.Fatalf("err %v, want a CapError of config.json at %d bytes over %d", err, size, limit)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
