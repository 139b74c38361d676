package hub

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Download fetches files of model id at commit sha into the Hub cache and
// returns the snapshot folder (SnapshotDir), where every requested file is
// then present.
//
// Files must pass AllowedFile; sha must be a full commit id: downloads are
// pinned, never "main". Files already in the snapshot are not requested
// again, once their blobs are checked against their hashes (verify.go: a
// blob changed since it was downloaded is fetched again). Like huggingface_hub, each file is first asked about with HEAD
// {endpoint}/{id}/resolve/{sha}/{file} (size, etag, CDN location), so the
// size caps are checked before any content moves; then the content is
// fetched, LFS files from the Hub's CDN without the token. Content is
// streamed to blobs/<etag>.incomplete (resumed with Range after a broken
// transfer, also across runs), checked against the size and hash the Hub
// announced (sha256 = X-Linked-Etag for LFS files, git blob sha1 = ETag for
// the others), renamed to blobs/<etag>, and linked from
// snapshots/<sha>/<file> by a relative symlink, as huggingface_hub does.
// refs/main is written with sha when this client saw the Hub report sha as
// main's head (ListModels, or ModelInfo at main).
//
// Each file is capped at the smaller of Options.MaxFileBytes and its
// kind's cap (FileCap: a few MiB for JSON, more for tokenizers); the caps
// are checked against the announced size before the transfer and against
// the bytes as they come.
//
// Up to Options.Concurrency files are fetched at once; the first error
// cancels the rest and is returned (an *Error for Hub answers, or one
// matching ErrTooLarge, ErrIntegrity, ErrNotAllowed). Locks in
// <cache>/.locks, shared with huggingface_hub, keep concurrent processes
// from writing the same blob.
func (c *Client) Download(ctx context.Context, id, sha string, files []string) (snapshotDir string, err error) {
	if err := compat.ValidateModelID(id); err != nil {
		return "", fmt.Errorf("hub: %w", err)
	}
	if err := validateCommit(sha); err != nil {
		return "", err
	}
	if c.cacheDir == "" {
		return "", errors.New("hub: download: no cache directory configured")
	}
	var want []string
	for _, f := range files {
		if !AllowedFile(f) {
			return "", fmt.Errorf("hub: download %s: %q: %w", id, f, ErrNotAllowed)
		}
		if !slices.Contains(want, f) {
			want = append(want, f)
		}
	}
	d := &download{c: c, id: id, sha: sha, repo: RepoDir(c.cacheDir, id)}
	snap := SnapshotDir(c.cacheDir, id, sha)
	var todo []string
	for _, f := range want {
		n, ok, err := d.cachedFile(snap, f) // checked against its hash (verify.go)
		if err != nil {
			return "", fmt.Errorf("hub: download %s/%s: %w", id, f, err)
		}
		if ok {
			d.used += n
			continue
		}
		todo = append(todo, f)
	}
	if d.used > c.maxModel {
		return "", fmt.Errorf("hub: download %s: %d bytes already cached, over the %d-byte model limit: %w", id, d.used, c.maxModel, ErrTooLarge)
	}

	if len(todo) > 0 {
		// Phase 1: ask the Hub about every file (HEAD, no content), as
		// huggingface_hub does, so that the size caps (FileCap, by kind)
		// are checked before any content moves or anything is stored.
		srcs := make([]*source, len(todo))
		err := d.each(ctx, todo, func(ctx context.Context, i int, f string) error {
			src, err := d.resolve(ctx, d.resolveURL(f))
			if err != nil {
				return fmt.Errorf("hub: download %s/%s: %w", id, f, err)
			}
			src.name, src.max = f, min(c.maxFile, FileCap(f))
			if src.size > src.max {
				return fmt.Errorf("hub: download %s: %w", id, &CapError{File: f, Size: src.size, Cap: src.max})
			}
			srcs[i] = src
			return nil
		})
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(snap, 0o755); err != nil {
			return "", fmt.Errorf("hub: download %s: %w", id, err)
		}
		createCachedirTag(c.cacheDir)
		var known int64
		for _, src := range srcs {
			known += max(src.size, 0)
		}
		if err := d.reserve(known); err != nil {
			return "", fmt.Errorf("hub: download %s: %w", id, err)
		}
		// Phase 2: fetch what is not in blobs/ yet, and link.
		err = d.each(ctx, todo, func(ctx context.Context, i int, f string) error {
			if err := d.file(ctx, f, srcs[i]); err != nil {
				return fmt.Errorf("hub: download %s/%s: %w", id, f, err)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	if c.isMain(id, sha) {
		if err := writeRef(d.repo, "main", sha); err != nil {
			return "", fmt.Errorf("hub: download %s: %w", id, err)
		}
	}
	return snap, nil
}

// download is one Download call's shared state.
type download struct {
	c    *Client
	id   string
	sha  string
	repo string // models--ns--name

	mu   sync.Mutex
	used int64 // bytes counted against MaxModelBytes
}

func (d *download) reserve(n int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used+n > d.c.maxModel {
		return fmt.Errorf("%d more bytes would bring the model to %d, over the %d-byte model limit: %w", n, d.used+n, d.c.maxModel, ErrTooLarge)
	}
	d.used += n
	return nil
}

// each runs fn for every file, Options.Concurrency at a time; the first
// error cancels the others and is returned.
func (d *download) each(ctx context.Context, files []string, fn func(ctx context.Context, i int, f string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, d.c.conc)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i, f := range files {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			if err := fn(ctx, i, f); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hub: download %s: %w", d.id, err)
	}
	return nil
}

// source is where a file's content is, and what the Hub said it is.
type source struct {
	name    string   // the repo file
	etag    string   // normalized; the blob's name
	size    int64    // announced size; -1 when unknown
	max     int64    // the file's cap (FileCap within MaxFileBytes); 0: MaxFileBytes
	url     *url.URL // content location: the CDN, or the (final) resolve URL
	resolve *url.URL // the resolve URL, to ask again for a fresh CDN URL
}

func (d *download) resolveURL(name string) *url.URL {
	u, _ := url.Parse(d.c.base + "/" + escapeID(d.id) + "/resolve/" + d.sha + "/" + escapePath(name))
	return u
}

// file puts one resolved file into blobs/ (unless there already) and links
// it into the snapshot.
func (d *download) file(ctx context.Context, name string, src *source) error {
	c := d.c
	blob := filepath.Join(d.repo, "blobs", src.etag)
	pointer := pointerPath(SnapshotDir(c.cacheDir, d.id, d.sha), name)
	if done, err := d.linkCached(blob, pointer); done { // another revision's blob
		return err
	}
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, filepath.Join(c.cacheDir, ".locks", repoFolderName(d.id), src.etag+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if done, err := d.linkCached(blob, pointer); done { // written by another process meanwhile
		return err
	}
	announced := src.size
	n, err := d.fetch(ctx, src, blob+".incomplete")
	limit := d.limit(src)
	if errors.Is(err, ErrTooLarge) && src.size >= 0 && src.size <= limit {
		return err // announced at exactly the cap, and more came (below the cap that is ErrIntegrity): copyWithin says so
	}
	if errors.Is(err, ErrTooLarge) {
		size := src.size
		if size <= limit {
			size = -1
		}
		return &CapError{File: name, Size: size, Cap: limit}
	}
	if err != nil {
		return err
	}
	if announced < 0 {
		if err := d.reserve(n); err != nil {
			os.Remove(blob + ".incomplete")
			return err
		}
	}
	if err := os.Rename(blob+".incomplete", blob); err != nil {
		return err
	}
	d.markVerified(blob) // fetch checked it against its name
	c.log.Debug("hub: downloaded", "model", d.id, "file", name, "bytes", n, "etag", src.etag)
	return link(blob, pointer)
}

// resolve asks the Hub about a file with HEAD, like huggingface_hub's
// get_hf_file_metadata: it follows redirects on the Hub (a 307 rename) and
// stops at the first redirect off the Hub (the CDN), whose answer carries
// the LFS metadata (X-Linked-Etag, X-Linked-Size). The CDN never gets the
// token.
func (d *download) resolve(ctx context.Context, u *url.URL) (*source, error) {
	c := d.c
	start := u
	hdr := http.Header{"Accept-Encoding": {"identity"}}
	for range maxRedirects + 1 {
		resp, err := c.send(ctx, http.MethodHead, u, hdr, c.reqLimit)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		if isRedirect(resp.StatusCode) {
			next, err := location(resp, u)
			if err != nil {
				return nil, err
			}
			if c.sameOrigin(next) {
				u = next
				continue
			}
			src, err := d.meta(resp, -1)
			if err != nil {
				return nil, err
			}
			src.url, src.resolve = next, start
			return src, nil
		}
		src, err := d.meta(resp, resp.ContentLength)
		if err != nil {
			return nil, err
		}
		src.url, src.resolve = u, start
		return src, nil
	}
	return nil, fmt.Errorf("more than %d redirects resolving %s", maxRedirects, c.safeURL(u))
}

var etagRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// meta reads a resolve answer's headers: the blob name from X-Linked-Etag
// or ETag, the size from X-Linked-Size or the body length, and checks that
// X-Repo-Commit, when present, is the pinned commit.
func (d *download) meta(resp *http.Response, bodyLen int64) (*source, error) {
	raw := firstHeader(resp.Header, "X-Linked-Etag", "ETag")
	etag := normalizeEtag(raw)
	if etag == "" {
		return nil, fmt.Errorf("the answer has no ETag: is %s a Hub endpoint? %w", d.c.base, ErrIntegrity)
	}
	if !etagRE.MatchString(etag) {
		return nil, fmt.Errorf("the answer's ETag %q cannot name a blob: %w", truncate(etag, 80), ErrIntegrity)
	}
	if commit := resp.Header.Get("X-Repo-Commit"); commit != "" && commit != d.sha {
		return nil, fmt.Errorf("the Hub served commit %q for pinned commit %s: %w", truncate(commit, 80), d.sha, ErrIntegrity)
	}
	size := bodyLen
	if v := resp.Header.Get("X-Linked-Size"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad X-Linked-Size %q: %w", truncate(v, 40), ErrIntegrity)
		}
		size = n
	}
	return &source{etag: etag, size: size}, nil
}

// normalizeEtag strips the weak prefix and quotes: W/"abc" → abc.
func normalizeEtag(v string) string {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(v, "W/")
	return strings.Trim(v, `"`)
}

var (
	sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	sha1RE   = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// link makes pointer a relative symlink to blob, atomically replacing
// whatever was there (huggingface_hub's _create_symlink).
func link(blob, pointer string) error {
	if err := os.MkdirAll(filepath.Dir(pointer), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		return err
	}
	if cur, err := os.Readlink(pointer); err == nil && cur == rel {
		return nil
	}
	tmp := pointer + ".tmp-" + rand.Text()[:8]
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, pointer); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
