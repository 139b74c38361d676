package pages

import (
	"errors"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// CompareListMax is how many models each list shows on the page (half
// the API's page: six lists of 50 rows read and render in half the time of
// six of 100, which kept the page's first rendering under 50 ms at 100 000
// models); a longer list continues on a page of its own (?cursor=).
const CompareListMax = data.CompareLimit / 2

// compareList is one list of the comparison page. A train list's items
// carry the train verdicts' statuses and signature.
type compareList struct {
	Kind               compare.Kind
	ID, Title, Explain string
	Items              []compare.Item
	Total              int
	Train              bool
	// Next is the URL of the list's next page, "" after its last.
	Next string
}

// runtimeOption is a runtime in the page's selects.
type runtimeOption struct {
	Key, Label string
	Selected   bool
}

// compareView is the data of templates/compare.html.
type compareView struct {
	layout
	Notice     string // instead of a comparison
	Cmp        *data.Comparison
	Headline   string
	BaseLabel  string
	Lists      []compareList
	TrainLists []compareList
	// TrainHeadline is "… breaks training of N models, fixes training of M".
	TrainHeadline string
	// Continued says the page is a later page of one list (?cursor=).
	Continued  bool
	Counts     map[string]int
	BaseOpts   []runtimeOption
	HeadOpts   []runtimeOption
	APIURL     string
	BaseTarget compat.Target
}

// Compare serves GET /compare?base=&head=[&cursor=]: the first page
// of every list, or with ?cursor= (a list's "next" link) the next page of
// that list. A comparison's page is cached like the table's body, until
// the data changes.
func (h *Handler) Compare(c *fiber.Ctx) error {
	cursor := c.Query("cursor")
	cmp, rts, changed, err := h.Data.ResolveCompare(c.UserContext(), c.Query("base"), c.Query("head"), CompareListMax, cursor)
	render := func() ([]byte, error) { return h.renderCompare(cmp, rts, cursor, err) }
	var page cached.Body
	if cmp != nil {
		key := cmp.Base.Ref.Key() + " " + cmp.Head.Ref.Key() + " " + cursor
		page, err = cached.Rendered(&h.comparePages, key, changed, render)
	} else {
		var body []byte
		body, err = render()
		page = cached.Encode(body)
	}
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return page.Send(c)
}

// renderCompare is the compare page of cmp (nil with err, when the
// runtimes rts give nothing to compare), the page of one list after cursor.
func (h *Handler) renderCompare(cmp *data.Comparison, rts []store.RuntimeStats, cursor string, err error) ([]byte, error) {
	v := compareView{}
	v.Canonical = "/compare"
	switch {
	case errors.Is(err, data.ErrTooFewRuntimes):
		v.Notice = "There is nothing to compare yet: fewer than two runtimes have results on " +
			show.TargetName(data.DefaultRuntimeTarget(rts)) + ". A comparison appears once a second runtime " +
			"(a new torch_tpu, torch, transformers or harness version) has results."
	case err != nil:
		return nil, err
	default:
		v.Cmp = cmp
		r := cmp.Result
		v.Headline = show.Headline(cmp.Label, r.Headline)
		v.TrainHeadline = show.TrainHeadline(cmp.Label, r.Headline)
		v.Continued = cursor != ""
		v.BaseLabel = show.Versions(cmp.Base.Ref)
		v.Counts = map[string]int{}
		for k, n := range r.Headline.Counts {
			v.Counts[string(k)] = n
		}
		v.APIURL = "/api/v1/compare?base=" + cmp.Base.Ref.Key() + "&head=" + cmp.Head.Ref.Key()
		v.Canonical = show.CompareURL(cmp.Base.Ref.Key(), cmp.Head.Ref.Key())
		for _, l := range []compareList{
			{Kind: compare.Regressed, ID: "regressed", Title: "Regressed", Explain: "passed on base, held against the model on head", Items: r.Regressed},
			{Kind: compare.Fixed, ID: "fixed", Title: "Fixed", Explain: "held against the model on base, pass on head", Items: r.Fixed},
			{Kind: compare.New, ID: "new", Title: "Newly tested", Explain: "a verdict on head, none on base", Items: r.New},
			{Kind: compare.StillFailing, ID: "still-failing", Title: "Still failing", Explain: "held against the model on both", Items: r.StillFailing},
			{Kind: compare.TrainRegressed, ID: "train-regressed", Title: "Training regressed", Train: true,
				Explain: "the train step passed on base, is held against the model on head", Items: r.TrainRegressed},
			{Kind: compare.TrainFixed, ID: "train-fixed", Title: "Training fixed", Train: true,
				Explain: "the train step was held against the model on base, passes on head", Items: r.TrainFixed},
		} {
			if cursor != "" && len(l.Items) == 0 {
				continue // a later page shows its one list
			}
			l.Total = r.Headline.Counts[l.Kind]
			if next := cmp.Next[l.Kind]; next != "" {
				l.Next = v.Canonical + "&cursor=" + url.QueryEscape(next) + "#list-" + l.ID
			}
			if l.Train {
				v.TrainLists = append(v.TrainLists, l)
			} else {
				v.Lists = append(v.Lists, l)
			}
		}
	}
	v.BaseOpts, v.HeadOpts = runtimeOptions(rts, cmp)
	return h.renderPage("compare", v)
}

// runtimeOptions lists every runtime for the base and head selects, the
// compared ones selected.
func runtimeOptions(rts []store.RuntimeStats, cmp *data.Comparison) (base, head []runtimeOption) {
	for _, st := range rts {
		label := string(st.Ref.Target) + ": " + show.Versions(st.Ref) + " (" + show.When(st.FirstSeen) + ")"
		key := st.Ref.Key()
		base = append(base, runtimeOption{Key: key, Label: label, Selected: cmp != nil && cmp.Base.Ref == st.Ref})
		head = append(head, runtimeOption{Key: key, Label: label, Selected: cmp != nil && cmp.Head.Ref == st.Ref})
	}
	return base, head
}
