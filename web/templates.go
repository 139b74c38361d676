package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
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
	Feeds []feedLink
}

// feedLink is a feed a page links in its head.
type feedLink struct {
	Name, Type, Title, Href string
}

// render executes page name with data and sends it as HTML, keeping the
// status already set on c.
func (s *Server) render(c *fiber.Ctx, name string, data any) error {
	b, err := s.renderPage(name, data)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(b)
}

// renderPage executes page name with data.
func (s *Server) renderPage(name string, data any) ([]byte, error) {
	t, ok := s.pages.t[name]
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
func (s *Server) funcs() template.FuncMap {
	return template.FuncMap{
		"asset":      func(name string) (string, error) { return s.assets.url(name) },
		"version":    func() string { return s.version },
		"tone":       chipClass,
		"num":        fmtNum,
		"bytes":      fmtBytes,
		"count":      fmtCount,
		"pct":        fmtPct,
		"share":      func(f float64) string { return fmtPct(&f) },
		"when":       fmtWhen,
		"iso":        func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"modelPath":  modelPath,
		"hubModel":   s.hubModelURL,
		"hubTree":    s.hubTreeURL,
		"short":      shortSHA,
		"runtime":    fmtRuntime,
		"str":        func(p *string) string { return deref(p) },
		"prediction": predictionSummary,
		"words":      words,
		"tokPerS":    func(p *float64) string { return fmtNum(p, 1) },
		"targetName": targetName,
		"isArch":     func(m *compat.Mode) bool { return m != nil && *m == compat.ModeArch },
		"chips":      chips,
		"measured":   measuredChips,
		"breakID":    breakID,
		"evidence":   compat.EvidenceOf,
		// modeEvidence is what one mode's verdict rests on (train: the table's Train column).
		"modeEvidence": compat.EvidenceOfMode,
		"evidenceOf":   compat.EvidenceOfEvent,
		"sharded":      shardedOn,
		"mark":         markOf,
		"countOf":      paramCount,
		"bytesOf":      func(n int64) string { return fmtBytes(&n) },
		"tera":         func(f float64) float64 { return f / 1e12 },
		"giga":         func(f float64) float64 { return f / 1e9 },
		"versions":     fmtVersions,
		"sub":          func(a, b int) int { return a - b },
		"known":        s.knownIssue,
	}
}

// words writes a vocabulary word (a string, or a pointer to one, such as
// *compat.Reason) with spaces for underscores; nil is "".
func words(v any) string {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.String {
		return fmt.Sprint(v)
	}
	return strings.ReplaceAll(rv.String(), "_", " ")
}

// modelPath is the site path of a model page, each part path-escaped.
func modelPath(id string) string { return "/models/" + escapeID(id) }

// escapeID path-escapes each part of an id, keeping the "/".
func escapeID(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// hubModelURL links a model on the Hub.
func (s *Server) hubModelURL(id string) string { return s.hubEndpoint + "/" + escapeID(id) }

// hubTreeURL links a model's revision on the Hub.
func (s *Server) hubTreeURL(id, sha string) string {
	if sha == "" {
		return s.hubModelURL(id)
	}
	return s.hubModelURL(id) + "/tree/" + url.PathEscape(sha)
}

// shortSHA is the first 10 characters of a revision.
func shortSHA(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// dash is shown for values that were not measured: never a made-up 0.
const dash = "—"

// fmtNum formats a measured value with prec decimals, or a dash.
func fmtNum(p *float64, prec int) string {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return dash
	}
	return strconv.FormatFloat(*p, 'f', prec, 64)
}

// fmtBytes formats a byte count in binary units, or a dash.
func fmtBytes(p *int64) string {
	if p == nil {
		return dash
	}
	v := float64(*p)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if math.Abs(v) < 1024 || u == "TiB" {
			if u == "B" {
				return strconv.FormatInt(*p, 10) + " B"
			}
			return strconv.FormatFloat(v, 'f', 1, 64) + " " + u
		}
		v /= 1024
	}
	return dash
}

// fmtCount writes an integer with thousands separators.
func fmtCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtPct writes a fraction as a percentage, or a dash.
func fmtPct(p *float64) string {
	if p == nil || math.IsNaN(*p) {
		return dash
	}
	return strconv.FormatFloat(*p*100, 'f', 1, 64) + " %"
}

// fmtWhen writes a time in UTC, minutes precision, or a dash.
func fmtWhen(t time.Time) string {
	if t.IsZero() {
		return dash
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// fmtRuntime lists the versions that decide retests.
func fmtRuntime(r compat.Runtime) string {
	var parts []string
	for _, kv := range [][2]string{{"vllm-torchtpu", r.VLLMTorchTPU}, {"torch", r.Torch}, {"torch_tpu", r.TorchTPU},
		{"transformers", r.Transformers}, {"harness", r.Harness}, {"python", r.Python}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if r.Device != "" {
		d := r.Device
		if r.DeviceCount > 1 {
			d += " ×" + strconv.Itoa(r.DeviceCount)
		}
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return dash
	}
	return strings.Join(parts, " · ")
}

// targetName is how a target is called on pages (compat.Target.Name).
func targetName(t compat.Target) string { return t.Name() }

// breakID is a model id escaped, with a line-break opportunity (<wbr>)
// after each "/" and "-", so that a narrow screen breaks "org37/model-00117"
// at its parts rather than inside a word (the CSS breaks a word only when
// a part alone is wider than the line).
func breakID(id string) template.HTML {
	var b strings.Builder
	for _, r := range id {
		b.WriteString(template.HTMLEscapeString(string(r)))
		if r == '/' || r == '-' {
			b.WriteString("<wbr>")
		}
	}
	return template.HTML(b.String()) // every rune of id escaped above
}
