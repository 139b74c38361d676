package web

import (
	"errors"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// compareItemJSON is one model of a comparison list (the contract's Item).
type compareItemJSON struct {
	ID         string        `json:"id"`
	Downloads  int64         `json:"downloads"`
	BaseStatus compat.Status `json:"base_status"`
	HeadStatus compat.Status `json:"head_status"`
	Signature  *string       `json:"signature"`
	// KnownIssue is where the signature is tracked (--known-issues).
	KnownIssue *compat.KnownIssue `json:"known_issue"`
}

// compareBody is GET /api/v1/compare.
type compareBody struct {
	Base         string            `json:"base"`
	Head         string            `json:"head"`
	Fixed        []compareItemJSON `json:"fixed"`
	Regressed    []compareItemJSON `json:"regressed"`
	New          []compareItemJSON `json:"new"`
	StillFailing []compareItemJSON `json:"still_failing"`
	// Extensions.
	// The train verdict's changes (issue 25), listed apart: base_status
	// and head_status are the train verdicts', signature the train
	// verdict's (base's for a fix).
	TrainRegressed         []compareItemJSON    `json:"train_regressed"`
	TrainFixed             []compareItemJSON    `json:"train_fixed"`
	TrainHeadline          string               `json:"train_headline"`
	Headline               string               `json:"headline"`
	Counts                 map[compare.Kind]int `json:"counts"`
	FixedDownloadShare     *float64             `json:"fixed_download_share"`
	RegressedDownloadShare *float64             `json:"regressed_download_share"`
	BaseRuntime            runtimeJSON          `json:"base_runtime"`
	HeadRuntime            runtimeJSON          `json:"head_runtime"`
	// NextCursors continue each list (?cursor=): null after its last
	// page. Counts has each list's total.
	NextCursors map[compare.Kind]*string `json:"next_cursors"`
}

func itemsJSON(items []compare.Item) []compareItemJSON {
	out := make([]compareItemJSON, len(items))
	for i, it := range items {
		out[i] = compareItemJSON{ID: it.ID, Downloads: it.Downloads, BaseStatus: it.BaseStatus, HeadStatus: it.HeadStatus}
		if it.Signature != "" {
			out[i].Signature = &it.Signature
		}
	}
	return out
}

// compareAPILimit is how many models of each list one answer of
// /api/v1/compare holds unless ?limit= says otherwise (up to httpx.MaxLimit); a
// list with more continues with its cursor.
const compareAPILimit = 100

// apiCompare serves GET /api/v1/compare?base=&head=[&limit=][&cursor=]: the
// models fixed, regressed, newly tested and still failing between two
// runtimes, a page of each list (or the next page of the list ?cursor=
// continues).
func (s *Server) apiCompare(c *fiber.Ctx) error {
	limit, err := httpx.ParseLimit(c.Query("limit"), compareAPILimit)
	if err != nil {
		return err
	}
	return s.cachedJSON(c, "web: api compare", func() (any, error) {
		cmp, _, _, err := s.data.ResolveCompare(c.UserContext(), c.Query("base"), c.Query("head"), limit, c.Query("cursor"))
		if err != nil {
			return nil, err
		}
		return s.compareJSON(cmp), nil
	})
}

// compareJSON is the body of /api/v1/compare for cmp.
func (s *Server) compareJSON(cmp *data.Comparison) compareBody {
	r := cmp.Result
	next := map[compare.Kind]*string{}
	for _, k := range data.ListedKinds {
		next[k] = nil
		if cur := cmp.Next[k]; cur != "" {
			next[k] = &cur
		}
	}
	return compareBody{NextCursors: next,
		Base: cmp.Base.Ref.Key(), Head: cmp.Head.Ref.Key(),
		Fixed: s.knowItems(itemsJSON(r.Fixed)), Regressed: s.knowItems(itemsJSON(r.Regressed)), New: s.knowItems(itemsJSON(r.New)),
		StillFailing:   s.knowItems(itemsJSON(r.StillFailing)),
		TrainRegressed: s.knowItems(itemsJSON(r.TrainRegressed)), TrainFixed: s.knowItems(itemsJSON(r.TrainFixed)),
		TrainHeadline: show.TrainHeadline(cmp.Label, r.Headline),
		Headline:      show.Headline(cmp.Label, r.Headline), Counts: r.Headline.Counts,
		FixedDownloadShare: r.Headline.FixedShare, RegressedDownloadShare: r.Headline.RegressedShare,
		BaseRuntime: toRuntimeJSON(cmp.Base), HeadRuntime: toRuntimeJSON(cmp.Head),
	}
}

// compareListMax is how many models each list shows on the page (half
// the API's page: six lists of 50 rows read and render in half the time of
// six of 100, which kept the page's first rendering under 50 ms at 100 000
// models); a longer list continues on a page of its own (?cursor=).
const compareListMax = compareAPILimit / 2

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

// comparePage serves GET /compare?base=&head=[&cursor=]: the first page
// of every list, or with ?cursor= (a list's "next" link) the next page of
// that list. A comparison's page is cached like the table's body, until
// the data changes.
func (s *Server) comparePage(c *fiber.Ctx) error {
	cursor := c.Query("cursor")
	cmp, rts, changed, err := s.data.ResolveCompare(c.UserContext(), c.Query("base"), c.Query("head"), compareListMax, cursor)
	render := func() ([]byte, error) { return s.renderCompare(cmp, rts, cursor, err) }
	var page cached.Body
	if cmp != nil {
		key := cmp.Base.Ref.Key() + " " + cmp.Head.Ref.Key() + " " + cursor
		page, err = cached.Rendered(&s.comparePages, key, changed, render)
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
func (s *Server) renderCompare(cmp *data.Comparison, rts []store.RuntimeStats, cursor string, err error) ([]byte, error) {
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
	return s.renderPage("compare", v)
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

// knowItems sets the known issues of a comparison's list.
func (s *Server) knowItems(items []compareItemJSON) []compareItemJSON {
	for i := range items {
		items[i].KnownIssue = s.known.Table().MatchPtr(items[i].Signature)
	}
	return items
}
