package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// fetch writes the content of src into inc (resuming what inc already
// holds), verifies it, and returns its length. It runs three steps, each
// tested on its own: openRange asks for the bytes still missing (Range,
// redirects, a CDN URL signed afresh), copyWithin takes them within the size
// caps, and verify checks them against the size and hash the Hub announced.
// Between them, receive resumes broken transfers as tries allows. On a hash
// or size mismatch inc is deleted; on a broken transfer or cancellation it
// is kept for the next attempt.
//
// The whole fetch, resumes included, has a deadline relative to the file's
// size (fileDeadline): a server that drips the bytes slowly enough to keep
// the stall watchdog quiet still cannot hold a download for longer.
func (d *download) fetch(ctx context.Context, src *source, inc string) (int64, error) {
	p, err := openPartial(inc, src)
	if err != nil {
		return 0, err
	}
	defer p.f.Close()
	size := src.size
	if size < 0 {
		size = d.limit(src)
	}
	limit := d.c.fileDeadline(size)
	fctx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf(
		"%w: %s did not arrive within %s (slower than %s/s on average)", ErrDeadline, sizeText(size), limit.Round(10*time.Millisecond), sizeText(d.c.minRate)))
	defer cancel()
	if err := d.receive(fctx, p); err != nil {
		if ctx.Err() == nil && fctx.Err() != nil {
			return 0, context.Cause(fctx)
		}
		return 0, err
	}
	if err := p.f.Sync(); err != nil {
		return 0, err
	}
	checked, err := verify(*src, p.have, p.sum(), p.f)
	if errors.Is(err, ErrIntegrity) {
		return 0, p.discard(err)
	}
	if err != nil {
		return 0, err
	}
	if !checked {
		d.c.log.Debug("hub: etag is neither sha256 nor git sha1, content not verified", "model", d.id, "etag", src.etag)
	}
	return p.have, nil
}

// partial is a blob being written to blobs/<etag>.incomplete: its first
// have bytes are a prefix of the blob src describes.
type partial struct {
	path     string
	f        *os.File // positioned at have
	have     int64
	h        hash.Hash // running sha256 of the have bytes for an LFS blob (etag = sha256); nil otherwise
	src      *source
	resigned bool // the CDN URL was signed afresh already (once per fetch)
}

// openPartial opens (or creates) path for src, ready to resume at its end:
// a file longer than src's announced size cannot be a prefix of it and
// starts over; an LFS blob's running hash takes in the bytes already there.
func openPartial(path string, src *source) (*partial, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	p := &partial{path: path, f: f, src: src}
	if sha256RE.MatchString(src.etag) {
		p.h = sha256.New()
	}
	if err := p.resume(); err != nil {
		f.Close()
		return nil, err
	}
	return p, nil
}

func (p *partial) resume() error {
	var err error
	if p.have, err = p.f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	if p.src.size >= 0 && p.have > p.src.size {
		return p.restart()
	}
	if p.have > 0 && p.h != nil {
		if _, err := p.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(p.h, p.f, p.have); err != nil {
			return fmt.Errorf("rehash %s: %w", p.path, err)
		}
	}
	return nil
}

// restart empties p: the next bytes are the blob's first.
func (p *partial) restart() error {
	p.have = 0
	if p.h != nil {
		p.h.Reset()
	}
	if err := p.f.Truncate(0); err != nil {
		return err
	}
	_, err := p.f.Seek(0, io.SeekStart)
	return err
}

// discard deletes p's file (its bytes cannot become the blob) and returns err.
func (p *partial) discard(err error) error {
	p.f.Close()
	os.Remove(p.path)
	return err
}

// complete reports whether p holds the whole blob of a known size.
func (p *partial) complete() bool { return p.src.size >= 0 && p.have == p.src.size }

// writer appends to p's file and its running hash.
func (p *partial) writer() io.Writer {
	if p.h != nil {
		return io.MultiWriter(p.f, p.h)
	}
	return p.f
}

// sum is the sha256 of p's bytes for an LFS blob, nil otherwise.
func (p *partial) sum() []byte {
	if p.h == nil {
		return nil
	}
	return p.h.Sum(nil)
}

// receive fills p until it holds the blob: it opens the missing range,
// copies it within the caps and, when the transfer breaks on the network,
// waits (backoff) and resumes where it broke, as long as tries allows.
func (d *download) receive(ctx context.Context, p *partial) error {
	c := d.c
	var tr tries
	for !p.complete() {
		resp, err := d.openRange(ctx, p, &tr)
		if err != nil {
			return err
		}
		n, err := copyWithin(p.writer(), resp.Body, p.have, p.src.size, d.limit(p.src))
		resp.Body.Close()
		p.have += n
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrTooLarge) || errors.Is(err, ErrIntegrity):
			return p.discard(err)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		var pe *os.PathError
		if errors.As(err, &pe) || !isNetErr(err) {
			return err // the disk, not the network
		}
		if tr.broke(n) {
			return fmt.Errorf("transfer broken at byte %d of %d, giving up: %w", p.have, p.src.size, err)
		}
		wait := c.backoff(tr.attempt())
		c.log.Warn("hub: transfer broken, resuming", "model", d.id, "url", c.safeURL(p.src.url),
			"at_byte", p.have, "size", p.src.size, "wait", wait, "error", c.redact(err.Error()))
		if err := c.sleep(ctx, wait); err != nil {
			return err
		}
	}
	return nil
}

// limit is the most bytes src's file may have: its cap, within the
// client's MaxFileBytes.
func (d *download) limit(src *source) int64 {
	if src.max > 0 {
		return min(src.max, d.c.maxFile)
	}
	return d.c.maxFile
}

// tries counts one fetch's setbacks: stuck is attempts in a row that moved
// no byte (progress resets it), broken is every broken transfer. A fetch
// gives up after maxTries attempts in a row without progress, or after
// 4×maxTries breaks in all, so a connection that keeps breaking but keeps
// moving still finishes a large file, and one that is dead does not loop.
type tries struct{ stuck, broken int }

// wrongPart records an answer for the wrong part of the file; it reports
// whether to give up.
func (t *tries) wrongPart() bool {
	t.stuck++
	return t.stuck >= maxTries
}

// broke records a transfer that broke after moving n bytes; it reports
// whether to give up.
func (t *tries) broke(n int64) bool {
	if n > 0 {
		t.stuck = 0
	} else {
		t.stuck++
	}
	t.broken++
	return t.stuck >= maxTries || t.broken > 4*maxTries
}

// attempt is the retry number the backoff before the next attempt is for.
func (t *tries) attempt() int { return max(t.stuck, 1) }

// openRange asks for the bytes of the blob that p lacks: GET src.url, with
// Range: bytes=<have>- when p holds a prefix, following redirects (the token
// goes to the Hub only). It sets p right by what the answer says: a 416, or
// a 200 that ignores Range, starts over from byte 0; a 206 for another part
// starts over and counts against tr (ErrIntegrity, p discarded, when it
// keeps happening); an expired CDN URL (403, 410 or 400 off the Hub) is
// signed afresh once, by asking the Hub again. A size learnt from the
// answer that is over the file cap is ErrTooLarge (p discarded). It returns
// the answer whose body continues p at byte have; p must not be complete.
func (d *download) openRange(ctx context.Context, p *partial, tr *tries) (*http.Response, error) {
	for {
		hdr := http.Header{"Accept-Encoding": {"identity"}}
		if p.have > 0 {
			hdr.Set("Range", "bytes="+strconv.FormatInt(p.have, 10)+"-")
		}
		resp, _, _, err := d.c.follow(ctx, http.MethodGet, p.src.url, hdr, 0) // fetch bounds the whole file
		if err != nil {
			if err := d.askAgain(ctx, p, err); err != nil {
				return nil, err
			}
			continue
		}
		ok, err := p.accept(resp, d.limit(p.src), tr)
		if err != nil {
			return nil, err
		}
		if ok {
			return resp, nil
		}
	}
}

// askAgain decides whether the request for p's range that failed with err
// may be sent again, and prepares it: after a 416 p starts over; after an
// expired CDN URL (once per fetch) src gets a fresh one from the Hub, which
// must still name the same blob. It returns nil to ask again, else the error
// to give up with.
func (d *download) askAgain(ctx context.Context, p *partial, err error) error {
	var he *Error
	if !errors.As(err, &he) {
		return err
	}
	switch s := he.Status; {
	case s == http.StatusRequestedRangeNotSatisfiable && p.have > 0:
		return p.restart()
	case !d.c.sameOrigin(p.src.url) && !p.resigned &&
		(s == http.StatusForbidden || s == http.StatusGone || s == http.StatusBadRequest):
		p.resigned = true
		fresh, err := d.resolve(ctx, p.src.resolve)
		if err != nil {
			return err
		}
		if fresh.etag != p.src.etag {
			return fmt.Errorf("the file changed while downloading (etag %s, now %s): %w", p.src.etag, fresh.etag, ErrIntegrity)
		}
		p.src.url = fresh.url
		return nil
	}
	return err
}

// accept checks that resp's body continues p at byte have, and sets p
// right when it does not (see openRange). It returns false, with resp's
// body closed, when the range must be asked for again.
func (p *partial) accept(resp *http.Response, maxFile int64, tr *tries) (bool, error) {
	src := p.src
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != p.have || (src.size >= 0 && total >= 0 && total != src.size) {
			resp.Body.Close()
			if err := p.restart(); err != nil {
				return false, err
			}
			if tr.wrongPart() {
				return false, p.discard(fmt.Errorf("the server answers Range requests with the wrong part: %w", ErrIntegrity))
			}
			return false, nil
		}
	default:
		if p.have > 0 { // the server ignored Range and sends it all
			if err := p.restart(); err != nil {
				resp.Body.Close()
				return false, err
			}
		}
		if src.size < 0 && resp.ContentLength >= 0 {
			src.size = resp.ContentLength
		}
	}
	if src.size > maxFile {
		resp.Body.Close()
		return false, p.discard(fmt.Errorf("%d bytes, over the %d-byte file limit: %w", src.size, maxFile, ErrTooLarge))
	}
	return true, nil
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

// copyWithin copies body into w, which holds the first have bytes of a
// blob of size bytes (-1 when unknown); no blob may pass maxFile bytes. It
// reads at most one byte more than the blob can take, to catch a server
// that sends too much. It returns the bytes written, and:
//
//   - nil when the blob is complete: size reached, or, with size unknown, a
//     clean end of body;
//   - ErrTooLarge (over maxFile) or ErrIntegrity (over size): the bytes
//     cannot become the blob;
//   - io.ErrUnexpectedEOF for a clean end short of size;
//   - else the read error (a broken or stalled transfer, to resume at
//     have+n) or the write error (the disk).
func copyWithin(w io.Writer, body io.Reader, have, size, maxFile int64) (int64, error) {
	limit := maxFile - have + 1
	if size >= 0 {
		limit = size - have + 1
	}
	n, err := io.Copy(w, io.LimitReader(body, limit))
	switch got := have + n; {
	case got > maxFile:
		return n, fmt.Errorf("more than %d bytes, over the file limit: %w", maxFile, ErrTooLarge)
	case size >= 0 && got > size:
		return n, fmt.Errorf("the server sent more than the announced %d bytes: %w", size, ErrIntegrity)
	case err != nil:
		return n, err
	case size >= 0 && got < size:
		return n, io.ErrUnexpectedEOF // a clean end, but short
	}
	return n, nil
}

// verify checks the n bytes of content against what the Hub announced in
// src: the size, when known, and the etag: an LFS blob's is its sha256
// (sum, the running sha256 of the bytes as they were written), a git file's
// its git blob sha1 (computed here from content). It reports whether the
// content could be checked (an etag of any other form cannot), and an error
// wrapping ErrIntegrity on a mismatch.
func verify(src source, n int64, sum []byte, content io.ReadSeeker) (bool, error) {
	if src.size >= 0 && n != src.size {
		return false, fmt.Errorf("%d bytes, the Hub announced %d: %w", n, src.size, ErrIntegrity)
	}
	switch {
	case sha256RE.MatchString(src.etag):
		if got := hex.EncodeToString(sum); got != src.etag {
			return false, fmt.Errorf("sha256 %s, the Hub announced %s: %w", got, src.etag, ErrIntegrity)
		}
		return true, nil
	case sha1RE.MatchString(src.etag):
		got, err := gitBlobSHA1(content, n)
		if err != nil {
			return false, err
		}
		if got != src.etag {
			return false, fmt.Errorf("git blob sha1 %s, the Hub announced %s: %w", got, src.etag, ErrIntegrity)
		}
		return true, nil
	}
	return false, nil
}

// gitBlobSHA1 computes git's object id of the first n bytes of r:
// sha1("blob <n>\x00" + content), the ETag the Hub gives files stored in git.
func gitBlobSHA1(r io.ReadSeeker, n int64) (string, error) {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", n)
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if _, err := io.CopyN(h, r, n); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fileDeadline is the total time a download of size bytes may take: the
// request timeout, plus the size at the slowest average rate accepted.
func (c *Client) fileDeadline(size int64) time.Duration {
	return c.reqLimit + time.Duration(float64(max(size, 0))/float64(c.minRate)*float64(time.Second))
}
