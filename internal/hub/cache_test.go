package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteRef: refs/main follows main's head as it moves (huggingface_hub
// rewrites it whenever a download of main's commit happens), and holds the
// bare commit id.
func TestWriteRef(t *testing.T) {
	repo := t.TempDir()
	p := filepath.Join(repo, "refs", "main")
	for _, sha := range []string{strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("b", 40), strings.Repeat("a", 40)} {
		if err := writeRef(repo, "main", sha); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != sha {
			t.Fatalf("after writing %s, refs/main holds %q (%v)", sha, b, err)
		}
	}
}

// TestScanCacheSHA: a cached model's commit is refs/main when it names a
// snapshot that is there, else the most recently written snapshot.
func TestScanCacheSHA(t *testing.T) {
	// The newer snapshot comes first by name: only the times tell them apart.
	older, newer := strings.Repeat("2", 40), strings.Repeat("1", 40)
	tests := []struct {
		name string
		ref  string // refs/main's content; "" for no refs/main
		want string
	}{
		{"refs/main names the older snapshot", older, older},
		{"refs/main names the newer snapshot", newer, newer},
		{"refs/main with a trailing newline", older + "\n", older},
		{"no refs/main: the newest snapshot", "", newer},
		{"refs/main is no commit: the newest snapshot", "main", newer},
		{"refs/main names a missing snapshot: the newest", strings.Repeat("3", 40), newer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			repo := RepoDir(cache, "acme/tiny")
			base := time.Now().Add(-time.Hour)
			for i, sha := range []string{older, newer} {
				snap := filepath.Join(repo, "snapshots", sha)
				if err := os.MkdirAll(snap, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(snap, "config.json"), []byte(`{"model_type":"bert"}`), 0o644); err != nil {
					t.Fatal(err)
				}
				mt := base.Add(time.Duration(i) * time.Minute)
				if err := os.Chtimes(snap, mt, mt); err != nil {
					t.Fatal(err)
				}
			}
			if tt.ref != "" {
				if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(tt.ref), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ScanCache(cache)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].SHA != tt.want {
				t.Fatalf("ScanCache = %+v, want one model at %s", got, tt.want)
			}
			if got[0].Config["model_type"] != "bert" {
				t.Errorf("config %v, want the snapshot's", got[0].Config)
			}
		})
	}
}
