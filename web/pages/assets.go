package pages

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

//go:embed static
var staticFS embed.FS

// asset is one embedded static file, served under a content-hashed name
// (app.3f2a9c1b7d.js) so that it can be cached forever.
type asset struct {
	hashed string
	ctype  string
	body   []byte
}

// assets maps logical names (app.js) to hashed URLs and back.
type assets struct {
	byHashed map[string]*asset
	urls     map[string]string
}

// loadAssets reads static/, appends the palette's CSS to style.css, and
// names every file by its content hash.
func loadAssets() (*assets, error) {
	a := &assets{byHashed: map[string]*asset{}, urls: map[string]string{}}
	entries, err := fs.ReadDir(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("web: assets: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		body, err := staticFS.ReadFile("static/" + name)
		if err != nil {
			return nil, fmt.Errorf("web: assets: %w", err)
		}
		if name == "style.css" {
			body = append([]byte(show.StatusCSS()+"\n"), body...)
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(name)
		hashed := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext
		var ctype string
		switch ext {
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		case ".ico":
			ctype = "image/x-icon"
		default:
			return nil, fmt.Errorf("web: assets: no content type for %s", name)
		}
		a.byHashed[hashed] = &asset{hashed: hashed, ctype: ctype, body: body}
		a.urls[name] = "/static/" + hashed
	}
	for _, need := range []string{"app.js", "style.css"} {
		if _, ok := a.urls[need]; !ok {
			return nil, fmt.Errorf("web: assets: static/%s is missing", need)
		}
	}
	return a, nil
}

// url is the hashed URL of a logical asset name.
func (a *assets) url(name string) (string, error) {
	u, ok := a.urls[name]
	if !ok {
		return "", fmt.Errorf("web: no asset %q", name)
	}
	return u, nil
}

// Asset serves GET /static/{hashed name}, cacheable forever.
func (h *Handler) Asset(c *fiber.Ctx) error {
	a, ok := h.assets.byHashed[c.Params("name")]
	if !ok {
		return fmt.Errorf("%w: no such asset", httpx.ErrNotFound)
	}
	c.Set(fiber.HeaderContentType, a.ctype)
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	return c.Send(a.body)
}

// AssetURL is the hashed URL of a logical asset name ("app.js").
func (h *Handler) AssetURL(name string) (string, error) { return h.assets.url(name) }
