package feeds

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// This file is what watching adds to the feed (feed.go is its source):
// the filters (?model=&org=&target=&kind=, internal/watch decides), each
// signature's known issue in an item's content, and the Atom form of the
// same feed at /feed.atom. The filters are a step over the source's items,
// so any source of them can sit under it.

// feedFormat is how a feed is written.
type feedFormat int

const (
	feedJSON feedFormat = iota // JSON Feed 1.1
	feedAtom                   // Atom 1.0 (RFC 4287)
)

// feedWindow is how many of the newest status changes a feed filtered by
// org, target or kind picks from (one filtered by model reads the model's
// own changes).
const feedWindow = 1000

// Atom serves GET /feed.atom: the feed as Atom 1.0.
func (h *Handler) Atom(c *fiber.Ctx) error { return h.serveFeed(c, feedAtom) }

// serveFeed serves the feed, filtered by the request's query, in format.
func (h *Handler) serveFeed(c *fiber.Ctx, format feedFormat) error {
	q, err := url.ParseQuery(string(c.Request().URI().QueryString()))
	if err != nil {
		return fmt.Errorf("%w: the query: %v", httpx.ErrBadRequest, err)
	}
	f, err := watch.ParseQuery(q)
	if err != nil {
		return fmt.Errorf("%w: %v", httpx.ErrBadRequest, err)
	}
	base := h.Clients.Base(c)
	changed, fresh, err := cached.Check(c, h.Data, base, string(h.Hub), fmt.Sprint(format), f.Query(), cached.Coding(c))
	if err != nil {
		return fmt.Errorf("web: feed: %w", err)
	}
	if fresh {
		return cached.Unchanged(c)
	}
	// The body is cached until the data changes, by its format, the base
	// URL its links use and the filter.
	key := fmt.Sprint(format) + " " + base + "?" + f.Query()
	body, err := cached.Rendered(&h.feeds, key, changed, func() ([]byte, error) {
		return h.renderFeed(c, format, base, f, changed)
	})
	if err != nil {
		return err
	}
	return sendFeed(c, format, body)
}

// renderFeed is the body of the feed in format with filter f, its links
// under base, as the data stands at changed.
func (h *Handler) renderFeed(c *fiber.Ctx, format feedFormat, base string, f watch.Filter, changed time.Time) ([]byte, error) {
	ctx := c.UserContext()
	events, f, err := h.feedEvents(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("web: feed: %w", err)
	}
	items, err := h.feedSource(ctx, base, changed, events)
	if err != nil {
		return nil, fmt.Errorf("web: feed: %w", err)
	}
	items = filterItems(items, f)
	if !f.Empty() && len(items) > feedItems {
		items = items[:feedItems]
	}
	if err := h.annotate(items); err != nil {
		return nil, fmt.Errorf("web: feed: %w", err)
	}
	var body []byte
	switch format {
	case feedAtom:
		body, err = atomDoc(base, f, changed, items)
	default:
		body, err = c.App().Config().JSONEncoder(JSONFeed{
			Version:     "https://jsonfeed.org/version/1.1",
			Title:       feedTitle(f),
			HomePageURL: base + "/",
			FeedURL:     feedURL(base, "/feed.json", f),
			Description: "Regressions, fixes and new results of popular Hugging Face models on TorchTPU.",
			Language:    "en",
			Items:       items,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("web: feed: %w", err)
	}
	return body, nil
}

// sendFeed sends a feed's body in format.
func sendFeed(c *fiber.Ctx, format feedFormat, body cached.Body) error {
	c.Set(fiber.HeaderCacheControl, "max-age=60")
	if format == feedAtom {
		c.Set(fiber.HeaderContentType, "application/atom+xml; charset=utf-8")
	} else {
		c.Set(fiber.HeaderContentType, "application/feed+json; charset=utf-8")
	}
	return body.Send(c)
}

// feedEvents are the status changes a feed with filter f picks from: with
// models named, each one's own newest changes (so that a quiet model's are
// not crowded out by the rest); otherwise the newest of all, more of them
// when other filters will leave some out. A model named by an old id (a
// rename) is looked for under its id: f comes back with the ids the
// events carry.
func (h *Handler) feedEvents(ctx context.Context, f watch.Filter) ([]compat.Event, watch.Filter, error) {
	if len(f.Models) == 0 {
		n := feedItems
		if !f.Empty() {
			n = feedWindow
		}
		evs, err := h.Data.Store.Events(ctx, n)
		return evs, f, err
	}
	var out []compat.Event
	models := slices.Clone(f.Models)
	for i, id := range models {
		evs, err := h.Data.Store.ModelEvents(ctx, id, feedItems)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, f, err
		}
		if len(evs) > 0 {
			models[i] = evs[0].ModelID
		}
		out = append(out, evs...)
	}
	f.Models = models
	return out, f, nil
}

// filterItems keeps the items f passes, in order.
func filterItems(items []Item, f watch.Filter) []Item {
	if f.Empty() {
		return items
	}
	kept := items[:0]
	for _, it := range items {
		if f.Match(it.about) {
			kept = append(kept, it)
		}
	}
	return kept
}

// knownHTML is the known-issue paragraph of an item about failure
// signatures: one line per signature (named when there are several).
var knownHTML = template.Must(template.New("known").Parse(
	`{{range .}}<p>Known issue{{if .Named}} of <code>{{.Sig}}</code>{{end}}: {{with .Issue}}<a href="{{.URL}}">{{.Title}}</a> ({{.State}}){{else}}not tracked yet{{end}}</p>{{end}}`))

// annotate adds to each item about failure signatures where each is
// tracked, or that it is not tracked yet.
func (h *Handler) annotate(items []Item) error {
	type line struct {
		Sig   string
		Named bool
		Issue *compat.KnownIssue
	}
	for i := range items {
		it := &items[i]
		var lines []line
		for _, sig := range it.signatures {
			lines = append(lines, line{Sig: sig, Named: it.about.Kind == watch.KindRuntime, Issue: h.Known.Table().Match(sig)})
		}
		if len(lines) == 0 {
			continue
		}
		var h bytes.Buffer
		if err := knownHTML.Execute(&h, lines); err != nil {
			return err
		}
		it.ContentHTML += h.String()
		for _, l := range lines {
			it.ContentText += "\n\nKnown issue"
			if l.Named {
				it.ContentText += " of " + l.Sig
			}
			if l.Issue != nil {
				it.ContentText += ": " + l.Issue.Title + " (" + l.Issue.State + ") " + l.Issue.URL
			} else {
				it.ContentText += ": not tracked yet"
			}
		}
	}
	return nil
}

// nonEmpty is the distinct non-empty strings of ss, in order.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, x := range ss {
		if x != "" && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// feedTitle names the feed, and its filter when it has one.
func feedTitle(f watch.Filter) string {
	t := "TorchTPU compatibility: status changes"
	if d := f.Describe(); d != "" {
		t += " of " + d
	}
	return t
}

// feedURL is the feed's own URL, with its filter.
func feedURL(base, path string, f watch.Filter) string {
	if q := f.Query(); q != "" {
		return base + path + "?" + q
	}
	return base + path
}

// Atom 1.0 (RFC 4287). encoding/xml escapes every value and replaces
// characters XML cannot carry.
type atomFeed struct {
	XMLName   xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string      `xml:"id"`
	Title     string      `xml:"title"`
	Subtitle  string      `xml:"subtitle"`
	Updated   string      `xml:"updated"`
	Links     []atomLink  `xml:"link"`
	Author    atomPerson  `xml:"author"`
	Generator string      `xml:"generator"`
	Entries   []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomPerson struct {
	Name string `xml:"name"`
	URI  string `xml:"uri,omitempty"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}

type atomText struct {
	Type string `xml:"type,attr"`
	Body string `xml:",chardata"`
}

type atomEntry struct {
	ID         string         `xml:"id"`
	Title      string         `xml:"title"`
	Published  string         `xml:"published"`
	Updated    string         `xml:"updated"`
	Links      []atomLink     `xml:"link"`
	Categories []atomCategory `xml:"category"`
	Summary    atomText       `xml:"summary"`
	Content    atomText       `xml:"content"`
}

// atomDoc writes items as an Atom feed.
func atomDoc(base string, f watch.Filter, changed time.Time, items []Item) ([]byte, error) {
	self := feedURL(base, "/feed.atom", f)
	doc := atomFeed{
		ID:        self,
		Title:     feedTitle(f),
		Subtitle:  "Regressions, fixes and new results of popular Hugging Face models on TorchTPU.",
		Updated:   changed.UTC().Format(time.RFC3339),
		Links:     []atomLink{{Rel: "self", Type: "application/atom+xml", Href: self}, {Rel: "alternate", Type: "text/html", Href: base + "/"}},
		Author:    atomPerson{Name: "TorchTPU compatibility scanner", URI: base + "/"},
		Generator: "torchtpu-scanner",
	}
	for _, it := range items {
		updated := it.DatePublished
		if it.DateModified != "" {
			updated = it.DateModified
		}
		if updated > doc.Updated { // RFC 3339 UTC times sort as text
			doc.Updated = updated
		}
		e := atomEntry{ID: it.ID, Title: it.Title, Published: it.DatePublished, Updated: updated,
			Links:   []atomLink{{Rel: "alternate", Type: "text/html", Href: it.URL}},
			Summary: atomText{Type: "text", Body: it.ContentText}, Content: atomText{Type: "html", Body: it.ContentHTML}}
		for _, t := range it.Tags {
			e.Categories = append(e.Categories, atomCategory{Term: t})
		}
		doc.Entries = append(doc.Entries, e)
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSpace(b.String()) + "\n"), nil
}
