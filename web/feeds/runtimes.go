package feeds

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// RuntimeItems is how many of the newest runtimes the feed announces, each
// with its comparison to the runtime before it on its target.
const RuntimeItems = 10

// Listed is how many models of each list a runtime item names.
const Listed = 10

// Lists are the lists a runtime item names (the models still failing
// it only counts).
var Lists = []compare.Kind{compare.Regressed, compare.Fixed, compare.New}

// runtimeFeedItems are the feed's items for new runtimes: one per runtime
// that has a predecessor on its target, newest first. An item's id and
// date_published stay; its content follows the runtime's results as they
// come (date_modified is its newest result).
func (h *Handler) runtimeFeedItems(ctx context.Context, base string, changed time.Time) ([]Item, error) {
	rts, err := h.Data.Runtimes(ctx, "", changed)
	if err != nil {
		return nil, err
	}
	var pairs [][2]store.RuntimeStats
	for _, head := range rts {
		if len(pairs) == RuntimeItems {
			break
		}
		prev, ok := data.Previous(rts, head)
		if !ok {
			continue // the target's first runtime: nothing to compare with
		}
		pairs = append(pairs, [2]store.RuntimeStats{prev, head})
	}
	cmps, err := h.Data.ComparePages(ctx, pairs, Listed, Lists, changed)
	if err != nil {
		return nil, err
	}
	var items []Item
	for _, cmp := range cmps {
		it, err := runtimeEntry(base, cmp)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// runtimeHTML is the HTML body of a runtime item; html/template escapes
// every model id and signature.
var runtimeHTML = template.Must(template.New("runtime").Parse(
	`<p><strong>{{.Headline}}</strong> on {{.Target}}, compared with {{.Base}}.</p>` +
		`{{with .TrainHeadline}}<p>{{.}}.</p>{{end}}` +
		`{{range .Lists}}{{if .Items}}<p>{{.Title}}:</p><ul>{{range .Items}}<li><a href="{{.URL}}">{{.ID}}</a>: {{.From}} → {{.To}}{{with .Signature}} (<code>{{.}}</code>){{end}}</li>{{end}}</ul>` +
		`{{if .More}}<p>and {{.More}} more.</p>{{end}}{{end}}{{end}}` +
		`<p><a href="{{.URL}}">The whole comparison</a></p>`))

type runtimeItemList struct {
	Title string
	Items []runtimeItemModel
	More  int
}

type runtimeItemModel struct {
	ID, URL, From, To, Signature string
}

// runtimeEntry renders one runtime's comparison with the one before it.
func runtimeEntry(base string, cmp *data.Comparison) (Item, error) {
	r := cmp.Result
	head := show.Headline(cmp.Label, r.Headline)
	page := base + show.CompareURL(cmp.Base.Ref.Key(), cmp.Head.Ref.Key())
	target := string(cmp.Head.Ref.Target)
	data := struct {
		Headline, Target, Base, URL string
		// TrainHeadline says the train lists' totals, "" when both are 0
		// (the lists themselves are on the comparison's page).
		TrainHeadline string
		Lists         []runtimeItemList
	}{Headline: head, Target: target, Base: show.Versions(cmp.Base.Ref), URL: page}
	if r.Headline.Counts[compare.TrainRegressed]+r.Headline.Counts[compare.TrainFixed] > 0 {
		data.TrainHeadline = show.TrainHeadline(cmp.Label, r.Headline)
	}
	var text strings.Builder
	var sigs []string // the signatures the item shows, for their known issues (watch.go)
	fmt.Fprintf(&text, "%s on %s, compared with %s.", head, target, data.Base)
	if data.TrainHeadline != "" {
		fmt.Fprintf(&text, "\n\n%s.", data.TrainHeadline)
	}
	for _, l := range []struct {
		title string
		kind  compare.Kind
		items []compare.Item // the first feedListed
	}{{"Regressed", compare.Regressed, r.Regressed}, {"Fixed", compare.Fixed, r.Fixed}, {"Newly tested", compare.New, r.New}} {
		list := runtimeItemList{Title: l.title}
		if len(l.items) > 0 {
			fmt.Fprintf(&text, "\n\n%s:", l.title)
		}
		for i, it := range l.items {
			if i == Listed {
				break
			}
			m := runtimeItemModel{ID: it.ID, URL: base + show.ModelPath(it.ID), From: string(it.BaseStatus), To: string(it.HeadStatus), Signature: it.Signature}
			list.Items = append(list.Items, m)
			sigs = append(sigs, m.Signature)
			fmt.Fprintf(&text, "\n%s: %s → %s", m.ID, m.From, m.To)
			if m.Signature != "" {
				text.WriteString(" (" + m.Signature + ")")
			}
		}
		if more := r.Headline.Counts[l.kind] - min(len(l.items), Listed); more > 0 {
			list.More = more
			fmt.Fprintf(&text, "\nand %d more.", list.More)
		}
		data.Lists = append(data.Lists, list)
	}
	fmt.Fprintf(&text, "\n\n%s", page)
	var h bytes.Buffer
	if err := runtimeHTML.Execute(&h, data); err != nil {
		return Item{}, err
	}
	return Item{
		ID:            page,
		URL:           page,
		Title:         "New runtime on " + target + ": " + head,
		ContentText:   text.String(),
		ContentHTML:   h.String(),
		DatePublished: cmp.Head.FirstSeen.UTC().Format(time.RFC3339),
		DateModified:  cmp.Head.LastSeen.UTC().Format(time.RFC3339),
		Tags:          []string{"runtime", target},
		about:         watch.Item{Target: cmp.Head.Ref.Target, Kind: watch.KindRuntime},
		signatures:    nonEmpty(sigs...),
	}, nil
}

// byDate orders feed items newest first (RFC 3339 UTC times sort as text),
// keeping the order of items published at the same time.
func byDate(items []Item) {
	sort.SliceStable(items, func(i, j int) bool { return items[i].DatePublished > items[j].DatePublished })
}
