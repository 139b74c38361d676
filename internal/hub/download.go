package hub

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Download fetches files of model id at commit sha into the Hub cache and
// returns the snapshot folder (SnapshotDir), where every requested file is
// then present.
//
// Files must pass AllowedFile; sha must be a full commit id: downloads are
// pinned, never "main". Files already in the snapshot are not requested
// again. Like huggingface_hub, each file is first asked about with HEAD
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
// Up to Options.Concurrency files are fetched at once; the first error
// cancels the rest and is returned (an *Error for Hub answers, or one
// matching ErrTooLarge, ErrIntegrity, ErrNotAllowed). Locks in
// <cache>/.locks, shared with huggingface_hub, keep concurrent processes
// from writing the same blob.
func (c *Client) Download(ctx context.Context, id, sha string, files []string) (snapshotDir string, err error) {
	if err := ValidateID(id); err != nil {
		return "", err
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
		if fi, err := os.Stat(pointerPath(snap, f)); err == nil && fi.Mode().IsRegular() {
			d.used += fi.Size()
			continue
		}
		todo = append(todo, f)
	}
	if d.used > c.maxModel {
		return "", fmt.Errorf("hub: download %s: %d bytes already cached, over the %d-byte model limit: %w", id, d.used, c.maxModel, ErrTooLarge)
	}
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return "", fmt.Errorf("hub: download %s: %w", id, err)
	}
	createCachedirTag(c.cacheDir)

	if len(todo) > 0 {
		// Phase 1: ask the Hub about every file (HEAD, no content), as
		// huggingface_hub does, so that the size caps are checked before
		// any content moves.
		srcs := make([]*source, len(todo))
		err := d.each(ctx, todo, func(ctx context.Context, i int, f string) error {
			src, err := d.resolve(ctx, d.resolveURL(f))
			if err != nil {
				return fmt.Errorf("hub: download %s/%s: %w", id, f, err)
			}
			if src.size > c.maxFile {
				return fmt.Errorf("hub: download %s/%s: %d bytes, over the %d-byte file limit: %w", id, f, src.size, c.maxFile, ErrTooLarge)
			}
			srcs[i] = src
			return nil
		})
		if err != nil {
			return "", err
		}
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
	etag    string   // normalized; the blob's name
	size    int64    // announced size; -1 when unknown
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
	if fileExists(blob) {
		return link(blob, pointer)
	}
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, filepath.Join(c.cacheDir, ".locks", repoFolderName(d.id), src.etag+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if fileExists(blob) { // written by another process meanwhile
		return link(blob, pointer)
	}
	announced := src.size
	n, err := d.fetch(ctx, src, blob+".incomplete")
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
	c.log.Debug("hub: downloaded", "model_id", d.id, "file", name, "bytes", n, "etag", src.etag)
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
		resp, err := c.send(ctx, http.MethodHead, u, hdr)
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

// fetch writes the content of src into inc (resuming what inc already
// holds), verifies it, and returns its length. On a hash or size mismatch
// inc is deleted; on a broken transfer or cancellation it is kept for the
// next attempt.
func (d *download) fetch(ctx context.Context, src *source, inc string) (int64, error) {
	c := d.c
	f, err := os.OpenFile(inc, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	lfs := sha256RE.MatchString(src.etag)
	var h hash.Hash
	if lfs {
		h = sha256.New()
	}
	restart := func() error {
		have = 0
		if h != nil {
			h.Reset()
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		_, err := f.Seek(0, io.SeekStart)
		return err
	}
	if src.size >= 0 && have > src.size { // not a prefix of this file
		if err := restart(); err != nil {
			return 0, err
		}
	}
	if have > 0 && h != nil {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
		if _, err := io.CopyN(h, f, have); err != nil {
			return 0, fmt.Errorf("rehash %s: %w", inc, err)
		}
	}
	fail := func(err error) (int64, error) {
		f.Close()
		os.Remove(inc)
		return 0, err
	}

	var resp *http.Response
	stuck, broken, refreshed := 0, 0, false
	for {
		if src.size >= 0 && have == src.size && resp == nil {
			break // complete (a resumed file that was whole already)
		}
		if resp == nil {
			hdr := http.Header{"Accept-Encoding": {"identity"}}
			if have > 0 {
				hdr.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
			}
			r, _, _, err := c.follow(ctx, http.MethodGet, src.url, hdr)
			if err != nil {
				var he *Error
				switch {
				case errors.As(err, &he) && he.Status == http.StatusRequestedRangeNotSatisfiable && have > 0:
					if err := restart(); err != nil {
						return 0, err
					}
					continue
				case errors.As(err, &he) && !c.sameOrigin(src.url) && !refreshed &&
					(he.Status == http.StatusForbidden || he.Status == http.StatusGone || he.Status == http.StatusBadRequest):
					// A signed CDN URL may have expired: ask the Hub for a fresh one.
					refreshed = true
					fresh, err2 := d.resolve(ctx, src.resolve)
					if err2 != nil {
						return 0, err2
					}
					if fresh.etag != src.etag {
						return 0, fmt.Errorf("the file changed while downloading (etag %s, now %s): %w", src.etag, fresh.etag, ErrIntegrity)
					}
					src.url = fresh.url
					continue
				}
				return 0, err
			}
			resp = r
			switch resp.StatusCode {
			case http.StatusPartialContent:
				start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
				if !ok || start != have || (src.size >= 0 && total >= 0 && total != src.size) {
					resp.Body.Close()
					resp = nil
					if err := restart(); err != nil {
						return 0, err
					}
					stuck++
					if stuck >= maxTries {
						return fail(fmt.Errorf("the server answers Range requests with the wrong part: %w", ErrIntegrity))
					}
					continue
				}
			default:
				if have > 0 { // the server ignored Range and sends it all
					if err := restart(); err != nil {
						resp.Body.Close()
						return 0, err
					}
				}
				if src.size < 0 && resp.ContentLength >= 0 {
					src.size = resp.ContentLength
				}
			}
			if src.size > c.maxFile {
				resp.Body.Close()
				return fail(fmt.Errorf("%d bytes, over the %d-byte file limit: %w", src.size, c.maxFile, ErrTooLarge))
			}
		}

		limit := c.maxFile - have + 1
		if src.size >= 0 {
			limit = src.size - have + 1
		}
		var w io.Writer = f
		if h != nil {
			w = io.MultiWriter(f, h)
		}
		n, err := io.Copy(w, io.LimitReader(resp.Body, limit))
		resp.Body.Close()
		resp = nil
		have += n
		if have > c.maxFile {
			return fail(fmt.Errorf("more than %d bytes, over the file limit: %w", c.maxFile, ErrTooLarge))
		}
		if src.size >= 0 && have > src.size {
			return fail(fmt.Errorf("the server sent more than the announced %d bytes: %w", src.size, ErrIntegrity))
		}
		if err == nil {
			if src.size < 0 || have == src.size {
				break
			}
			err = io.ErrUnexpectedEOF // a clean end, but short
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		var pe *os.PathError
		if errors.As(err, &pe) || !isNetErr(err) {
			return 0, err // the disk, not the network
		}
		if n > 0 {
			stuck = 0
		} else {
			stuck++
		}
		broken++
		if stuck >= maxTries || broken > 4*maxTries {
			return 0, fmt.Errorf("transfer broken at byte %d of %d, giving up: %w", have, src.size, err)
		}
		wait := c.backoff(max(stuck, 1))
		c.log.Warn("hub: transfer broken, resuming", "model_id", d.id, "url", c.safeURL(src.url),
			"at_byte", have, "size", src.size, "wait", wait, "error", c.redact(err.Error()))
		if err := c.sleep(ctx, wait); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	switch {
	case lfs:
		if got := hex.EncodeToString(h.Sum(nil)); got != src.etag {
			return fail(fmt.Errorf("sha256 %s, the Hub announced %s: %w", got, src.etag, ErrIntegrity))
		}
	case sha1RE.MatchString(src.etag):
		got, err := gitBlobSHA1(f, have)
		if err != nil {
			return 0, err
		}
		if got != src.etag {
			return fail(fmt.Errorf("git blob sha1 %s, the Hub announced %s: %w", got, src.etag, ErrIntegrity))
		}
	default:
		c.log.Debug("hub: etag is neither sha256 nor git sha1, content not verified", "model_id", d.id, "etag", src.etag)
	}
	return have, nil
}

// gitBlobSHA1 computes git's object id of the file's first n bytes:
// sha1("blob <n>\x00" + content), the ETag the Hub gives files stored in git.
func gitBlobSHA1(f *os.File, n int64) (string, error) {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", n)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if _, err := io.CopyN(h, f, n); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// parseContentRange reads "bytes start-end/total" (total may be "*": -1).
func parseContentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	s, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	total = -1
	if tot = strings.TrimSpace(tot); tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

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

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
