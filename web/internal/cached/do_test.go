package cached

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"
	"unsafe"

	"github.com/gofiber/fiber/v2"
)

// Do builds a value once per data version, keeps a copy of a string key
// (the caller's may point into a request's buffer), and keeps nothing
// when the build fails.
func TestDoBuildsOncePerVersion(t *testing.T) {
	t1, t2 := time.Unix(100, 0), time.Unix(200, 0)
	c := Map[string, int]{MaxBytes: 10_000}
	builds := 0
	build := func() (int, int, error) { builds++; return builds, 10, nil }
	buf := []byte("key")
	key := unsafeString(buf)
	if v, err := c.Do(key, t1, build); v != 1 || err != nil {
		t.Fatalf("first Do: %d %v", v, err)
	}
	copy(buf, "xyz") // the request's buffer is reused
	if v, _ := c.Do("key", t1, build); v != 1 || builds != 1 {
		t.Errorf("second Do at the same version: %d after %d builds", v, builds)
	}
	if v, _ := c.Do("key", t2, build); v != 2 {
		t.Errorf("Do at a new version: %d, want a new build", v)
	}
	boom := errors.New("boom")
	if _, err := c.Do("bad", t1, func() (int, int, error) { return 7, 10, boom }); !errors.Is(err, boom) {
		t.Errorf("a failed build: %v", err)
	}
	if _, ok := c.Get("bad", t1); ok {
		t.Error("a failed build was kept")
	}
}

// unsafeString is a string over buf, as fiber hands a query's value.
func unsafeString(buf []byte) string { return unsafe.String(&buf[0], len(buf)) }

type version struct {
	at  time.Time
	err error
}

func (v version) Changed(context.Context) (time.Time, error) { return v.at, v.err }

// Check tags the answer by the version and the parts, says fresh only to
// a request that names that tag, and hands the source's error back.
func TestCheck(t *testing.T) {
	at := time.Unix(300, 0)
	src := version{at: at}
	app := fiber.New()
	app.Get("/", func(c *fiber.Ctx) error {
		_, fresh, err := Check(c, src, c.OriginalURL(), c.Query("part"))
		if err != nil {
			return err
		}
		if fresh {
			return Unchanged(c)
		}
		return c.SendString("body")
	})
	get := func(path, inm string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("ETag")
	}
	code, tag := get("/?part=a", "")
	if code != 200 || tag != Tag(at, "/?part=a", "a") {
		t.Fatalf("first answer: %d, ETag %q", code, tag)
	}
	if code, _ := get("/?part=a", tag); code != 304 {
		t.Errorf("If-None-Match of its tag: %d, want 304", code)
	}
	if code, _ := get("/?part=a", "W/"+tag); code != 304 {
		t.Errorf("a weak If-None-Match of its tag: %d, want 304", code)
	}
	if code, other := get("/?part=b", tag); code != 200 || other == tag {
		t.Errorf("another representation: %d, ETag %q (the first's %q)", code, other, tag)
	}
	if Tag(at, "x") == Tag(at.Add(time.Nanosecond), "x") || Tag(at, "x", "") == Tag(at, "x") {
		t.Error("tags of other versions or parts are equal")
	}
	boom := errors.New("boom")
	var got error
	app.Get("/down", func(c *fiber.Ctx) error {
		_, _, got = Check(c, version{err: boom}, "x")
		return nil
	})
	get("/down", "")
	if !errors.Is(got, boom) {
		t.Errorf("the source's error: %v", got)
	}
}
