package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/changetext"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
)

// feedItems is how many status changes the feed carries.
const feedItems = 100

// jsonFeed is a JSON Feed 1.1 document (https://jsonfeed.org/version/1.1).
type jsonFeed struct {
	Version     string     `json:"version"`
	Title       string     `json:"title"`
	HomePageURL string     `json:"home_page_url"`
	FeedURL     string     `json:"feed_url"`
	Description string     `json:"description"`
	Language    string     `json:"language"`
	Items       []feedItem `json:"items"`
}

type feedItem struct {
	ID            string   `json:"id"`
	URL           string   `json:"url"`
	Title         string   `json:"title"`
	ContentText   string   `json:"content_text"`
	ContentHTML   string   `json:"content_html"`
	DatePublished string   `json:"date_published"`
	DateModified  string   `json:"date_modified,omitempty"`
	Tags          []string `json:"tags"`
	// Evidence is what the new status rests on (compat.EvidenceOfEvent), a
	// JSON Feed extension object; nil on a runtime's item.
	Evidence *compat.Evidence `json:"_evidence,omitempty"`

	// What the filters and the known issues look at (feed_watch.go).
	about      watch.Item
	signatures []string // the failure signatures the item shows
}

// feed serves GET /feed.json: status changes (regressions, fixes, new
// results, flaky results) and new runtimes (each compared with the one
// before it), newest first, with stable ids; ?model=&org=&target=&kind=
// filter it, and /feed.atom is the same as Atom (feed_watch.go).
func (s *Server) feed(c *fiber.Ctx) error { return s.serveFeed(c, feedJSON) }

// feedSource is the feed before its filters (feed_watch.go): the status
// changes given and the new runtimes, newest first.
func (s *Server) feedSource(ctx context.Context, base string, changed time.Time, events []compat.Event) ([]feedItem, error) {
	items := []feedItem{}
	for _, e := range events {
		if !e.AboutVerdicts() { // the scanner's own errors are no news of a model (events from before they were left out)
			continue
		}
		it, err := feedEntry(base, e)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	rtItems, err := s.runtimeFeedItems(ctx, base, changed)
	if err != nil {
		return nil, fmt.Errorf("runtimes: %w", err)
	}
	items = append(items, rtItems...)
	kernelItems, err := s.kernelFeedItems(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("kernel tables: %w", err)
	}
	items = append(items, kernelItems...)
	byDate(items)
	return items, nil
}

// eventTitle is the one-line summary of a status change
// (internal/changetext owns the wording; webhooks say the same).
func eventTitle(e compat.Event) string { return changetext.Title(e) }

// eventHTML is the HTML body of a feed item; html/template escapes every
// value that came from the Hub or a probe.
var eventHTML = template.Must(template.New("event").Parse(
	`<p><a href="{{.Page}}">{{.E.ModelID}}</a> on {{.E.Target}}: {{if .E.FromStatus}}{{.E.FromStatus}} → {{end}}<strong>{{.E.ToStatus}}</strong>.</p>` +
		`{{with .E.Signature}}<p>Signature: <code>{{.}}</code></p>{{end}}` +
		`{{with .E.Message}}<pre>{{.}}</pre>{{end}}` +
		`{{if .E.Revision}}<p>Revision {{.E.Revision}}{{with .Runtime}} · {{.}}{{end}}</p>{{else}}{{with .Runtime}}<p>{{.}}</p>{{end}}{{end}}` +
		`<p>Evidence: {{.Evidence}}.</p>`))

// feedEntry renders one status change as a feed item.
func feedEntry(base string, e compat.Event) (feedItem, error) {
	page := base + modelPath(e.ModelID)
	title := eventTitle(e)
	rt := fmtRuntime(e.Runtime)
	if rt == dash {
		rt = ""
	}
	var text strings.Builder
	text.WriteString(title + ".")
	if e.FromStatus != "" {
		fmt.Fprintf(&text, " Status %s → %s.", e.FromStatus, e.ToStatus)
	}
	if e.Message != nil && *e.Message != "" {
		text.WriteString("\n\n" + *e.Message)
	}
	switch { // a serving change has no revision of its own: the serving runtime alone
	case e.Revision != "":
		fmt.Fprintf(&text, "\n\nRevision %s", e.Revision)
		if rt != "" {
			text.WriteString(" · " + rt)
		}
	case rt != "":
		text.WriteString("\n\n" + rt)
	}
	ev := compat.EvidenceOfEvent(e)
	text.WriteString("\n\nEvidence: " + ev.Sentence() + ".")
	var h bytes.Buffer
	if err := eventHTML.Execute(&h, struct {
		E        compat.Event
		Page     string
		Runtime  string
		Evidence string
	}{e, page, rt, ev.Sentence()}); err != nil {
		return feedItem{}, err
	}
	return feedItem{
		ID:            base + "/events/" + e.UID(), // unique across restores; an old event's as published
		URL:           page + "#event-" + strconv.FormatInt(e.ID, 10),
		Title:         title,
		ContentText:   text.String(),
		ContentHTML:   h.String(),
		DatePublished: e.At.UTC().Format(time.RFC3339),
		Tags:          []string{string(e.Kind), string(e.Target), string(e.ToStatus)},
		Evidence:      &ev,
		about:         watch.Item{ModelID: e.ModelID, Target: e.Target, Kind: string(e.Kind)},
		signatures:    nonEmpty(deref(e.Signature)),
	}, nil
}
