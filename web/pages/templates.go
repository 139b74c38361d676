package pages

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

//go:embed templates
var templateFS embed.FS

// pageNames are the pages; each is templates/{name}.html on top of
// templates/layout.html.
var pageNames = []string{"table", "model", "methodology", "error", "runtimes", "compare", "request", "ops"}

// pages holds the parsed page templates.
type pages struct {
	t map[string]*template.Template
}

// parsePages parses every page once, at start-up; a missing or broken
// template is an error here, never at request time.
func parsePages(funcs template.FuncMap) (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).Option("missingkey=error").
			ParseFS(templateFS, "templates/layout.html", "templates/readiness.html", "templates/serving.html", "templates/watch.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		for _, block := range []string{"title", "content"} {
			if t.Lookup(block) == nil {
				return nil, fmt.Errorf("web: template %s defines no %q", name, block)
			}
		}
		p.t[name] = t
	}
	return p, nil
}

// layout is what every page passes to templates/layout.html.
type layout struct {
	// Refresh, when > 0, reloads the page after that many seconds (the first
	// scan, a queued request): app.js does, with a button to stop it.
	Refresh int
	// Canonical is the page's canonical path, "" for none.
	Canonical string
	// Feeds are the page's own feeds (a model's), besides the site's.
	Feeds []show.Link
}

// render executes page name with data and sends it as HTML, keeping the
// status already set on c.
func (h *Handler) render(c *fiber.Ctx, name string, data any) error {
	b, err := h.renderPage(name, data)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(b)
}

// renderPage executes page name with data.
func (h *Handler) renderPage(name string, data any) ([]byte, error) {
	t, ok := h.pages.t[name]
	if !ok {
		return nil, fmt.Errorf("web: no page %q", name)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("web: render %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// funcs are the template helpers. They only format: data is prepared by
// the handlers, and html/template escapes whatever they return.
func (h *Handler) funcs() template.FuncMap {
	return template.FuncMap{
		"asset":      func(name string) (string, error) { return h.assets.url(name) },
		"version":    func() string { return h.version },
		"tone":       chipClass,
		"num":        show.Num,
		"bytes":      show.Bytes,
		"count":      show.Count,
		"pct":        show.Pct,
		"share":      func(f float64) string { return show.Pct(&f) },
		"when":       show.When,
		"iso":        func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"modelPath":  show.ModelPath,
		"hubModel":   h.Hub.Model,
		"hubTree":    h.Hub.Tree,
		"short":      show.ShortSHA,
		"runtime":    show.Runtime,
		"str":        func(p *string) string { return show.Deref(p) },
		"prediction": show.Prediction,
		"words":      show.Words,
		"tokPerS":    func(p *float64) string { return show.Num(p, 1) },
		"targetName": show.TargetName,
		"isArch":     func(m *compat.Mode) bool { return m != nil && *m == compat.ModeArch },
		"chips":      chips,
		"measured":   show.MeasuredChips,
		"breakID":    show.BreakID,
		"evidence":   compat.EvidenceOf,
		// modeEvidence is what one mode's verdict rests on (train: the table's Train column).
		"modeEvidence": compat.EvidenceOfMode,
		"evidenceOf":   compat.EvidenceOfEvent,
		"sharded":      show.ShardedOn,
		"mark":         markOf,
		"countOf":      paramCount,
		"bytesOf":      func(n int64) string { return show.Bytes(&n) },
		"tera":         func(f float64) float64 { return f / 1e12 },
		"giga":         func(f float64) float64 { return f / 1e9 },
		"versions":     show.Versions,
		"sub":          func(a, b int) int { return a - b },
		"known":        h.Known.Issue,
	}
}
