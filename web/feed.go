package web

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
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
}

// feed serves GET /feed.json: status changes (regressions, fixes, new
// results, flaky results) and new runtimes (each compared with the one
// before it), newest first, with stable ids.
func (s *Server) feed(c *fiber.Ctx) error {
	ctx := c.UserContext()
	changed, err := s.store.Changed(ctx)
	if err != nil {
		return fmt.Errorf("web: feed: %w", err)
	}
	base := s.base(c)
	if notModified(c, etagOf(changedTag(changed), base, s.hubEndpoint)) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	// The body is cached until the data changes, by the base URL its
	// links use and the query.
	key := base + "?" + string(c.Request().URI().QueryString())
	if body, ok := s.feeds.get(key, changed); ok {
		return sendFeed(c, body)
	}
	events, err := s.store.Events(ctx, feedItems)
	if err != nil {
		return fmt.Errorf("web: feed: %w", err)
	}
	f := jsonFeed{
		Version:     "https://jsonfeed.org/version/1.1",
		Title:       "TorchTPU compatibility: status changes",
		HomePageURL: base + "/",
		FeedURL:     base + "/feed.json",
		Description: "Regressions, fixes and new results of popular Hugging Face models on TorchTPU.",
		Language:    "en",
		Items:       []feedItem{},
	}
	for _, e := range events {
		it, err := feedEntry(base, e)
		if err != nil {
			return fmt.Errorf("web: feed: %w", err)
		}
		f.Items = append(f.Items, it)
	}
	rtItems, err := s.runtimeFeedItems(ctx, base, changed)
	if err != nil {
		return fmt.Errorf("web: feed runtimes: %w", err)
	}
	f.Items = append(f.Items, rtItems...)
	byDate(f.Items)
	body, err := c.App().Config().JSONEncoder(f)
	if err != nil {
		return fmt.Errorf("web: feed: %w", err)
	}
	s.feeds.put(key, changed, body, len(body)+len(key))
	return sendFeed(c, body)
}

// sendFeed sends a JSON Feed body.
func sendFeed(c *fiber.Ctx, body []byte) error {
	c.Set(fiber.HeaderContentType, "application/feed+json; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "max-age=60")
	return c.Send(body)
}

// verb says what a status means in a sentence: "Qwen/x fails on tpu".
func verb(st compat.Status) string {
	switch st {
	case compat.StatusPass:
		return "passes"
	case compat.StatusFail:
		return "fails"
	case compat.StatusOOM:
		return "runs out of memory"
	case compat.StatusTimeout:
		return "times out"
	case compat.StatusCrash:
		return "crashes"
	case compat.StatusSkipped:
		return "is skipped"
	case compat.StatusError:
		return "could not be tested"
	case compat.StatusUntested:
		return "is untested"
	}
	return "is " + string(st)
}

// eventTitle is the one-line summary of a status change, e.g.
// "Regression: org/model fails on tpu (forward, unsupported_op aten::_fft_r2c)".
func eventTitle(e compat.Event) string {
	var parts []string
	if e.Stage != nil && *e.Stage != "" && e.ToStatus != compat.StatusPass {
		parts = append(parts, string(*e.Stage))
	}
	if e.Signature != nil && *e.Signature != "" {
		parts = append(parts, strings.Replace(*e.Signature, ":", " ", 1))
	}
	why := ""
	if len(parts) > 0 {
		why = " (" + strings.Join(parts, ", ") + ")"
	}
	on := " on " + string(e.Target)
	switch e.Kind {
	case compat.EventRegression:
		return "Regression: " + e.ModelID + " " + verb(e.ToStatus) + on + why
	case compat.EventFix:
		return "Fixed: " + e.ModelID + " " + verb(e.ToStatus) + on + wasStatus(e)
	case compat.EventNew:
		return "New: " + e.ModelID + " " + verb(e.ToStatus) + on + why
	case compat.EventFlaky:
		return "Flaky: " + e.ModelID + on + ": " + string(e.ToStatus) + " did not reproduce" + keptStatus(e)
	}
	return "Changed: " + e.ModelID + " " + verb(e.ToStatus) + on + wasStatus(e) + why
}

func wasStatus(e compat.Event) string {
	if e.FromStatus == "" {
		return ""
	}
	return " (was " + string(e.FromStatus) + ")"
}

func keptStatus(e compat.Event) string {
	if e.FromStatus == "" {
		return ""
	}
	return " (kept " + string(e.FromStatus) + ")"
}

// eventHTML is the HTML body of a feed item; html/template escapes every
// value that came from the Hub or a probe.
var eventHTML = template.Must(template.New("event").Parse(
	`<p><a href="{{.Page}}">{{.E.ModelID}}</a> on {{.E.Target}}: {{if .E.FromStatus}}{{.E.FromStatus}} → {{end}}<strong>{{.E.ToStatus}}</strong>.</p>` +
		`{{with .E.Signature}}<p>Signature: <code>{{.}}</code></p>{{end}}` +
		`{{with .E.Message}}<pre>{{.}}</pre>{{end}}` +
		`<p>Revision {{.E.Revision}}{{with .Runtime}} · {{.}}{{end}}</p>`))

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
	fmt.Fprintf(&text, "\n\nRevision %s", e.Revision)
	if rt != "" {
		text.WriteString(" · " + rt)
	}
	var h bytes.Buffer
	if err := eventHTML.Execute(&h, struct {
		E       compat.Event
		Page    string
		Runtime string
	}{e, page, rt}); err != nil {
		return feedItem{}, err
	}
	return feedItem{
		ID:            base + "/events/" + strconv.FormatInt(e.ID, 10),
		URL:           page + "#event-" + strconv.FormatInt(e.ID, 10),
		Title:         title,
		ContentText:   text.String(),
		ContentHTML:   h.String(),
		DatePublished: e.At.UTC().Format(time.RFC3339),
		Tags:          []string{string(e.Kind), string(e.Target), string(e.ToStatus)},
	}, nil
}
