package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// CompareItem is one model of a comparison list (the contract's Item).
type CompareItem struct {
	ID         string        `json:"id"`
	Downloads  int64         `json:"downloads"`
	BaseStatus compat.Status `json:"base_status"`
	HeadStatus compat.Status `json:"head_status"`
	Signature  *string       `json:"signature"`
	// KnownIssue is where the signature is tracked (--known-issues).
	KnownIssue *compat.KnownIssue `json:"known_issue"`
}

// CompareBody is GET /api/v1/compare.
type CompareBody struct {
	Base         string        `json:"base"`
	Head         string        `json:"head"`
	Fixed        []CompareItem `json:"fixed"`
	Regressed    []CompareItem `json:"regressed"`
	New          []CompareItem `json:"new"`
	StillFailing []CompareItem `json:"still_failing"`
	// Extensions.
	// The train verdict's changes (issue 25), listed apart: base_status
	// and head_status are the train verdicts', signature the train
	// verdict's (base's for a fix).
	TrainRegressed         []CompareItem        `json:"train_regressed"`
	TrainFixed             []CompareItem        `json:"train_fixed"`
	TrainHeadline          string               `json:"train_headline"`
	Headline               string               `json:"headline"`
	Counts                 map[compare.Kind]int `json:"counts"`
	FixedDownloadShare     *float64             `json:"fixed_download_share"`
	RegressedDownloadShare *float64             `json:"regressed_download_share"`
	BaseRuntime            RuntimeJSON          `json:"base_runtime"`
	HeadRuntime            RuntimeJSON          `json:"head_runtime"`
	// NextCursors continue each list (?cursor=): null after its last
	// page. Counts has each list's total.
	NextCursors map[compare.Kind]*string `json:"next_cursors"`
}

func itemsJSON(items []compare.Item) []CompareItem {
	out := make([]CompareItem, len(items))
	for i, it := range items {
		out[i] = CompareItem{ID: it.ID, Downloads: it.Downloads, BaseStatus: it.BaseStatus, HeadStatus: it.HeadStatus}
		if it.Signature != "" {
			out[i].Signature = &it.Signature
		}
	}
	return out
}

// CompareLimit is the most models per list of /api/v1/compare
// (data.CompareLimit).
const CompareLimit = data.CompareLimit

// Compare serves GET /api/v1/compare?base=&head=[&limit=][&cursor=]: the
// models fixed, regressed, newly tested and still failing between two
// runtimes, a page of each list (or the next page of the list ?cursor=
// continues).
func (h *Handler) Compare(c *fiber.Ctx) error {
	limit, err := httpx.ParseLimit(c.Query("limit"), CompareLimit)
	if err != nil {
		return err
	}
	return h.cachedJSON(c, "web: api compare", func() (any, error) {
		cmp, _, _, err := h.Data.ResolveCompare(c.UserContext(), c.Query("base"), c.Query("head"), limit, c.Query("cursor"))
		if err != nil {
			return nil, err
		}
		return h.compareJSON(cmp), nil
	})
}

// compareJSON is the body of /api/v1/compare for cmp.
func (h *Handler) compareJSON(cmp *data.Comparison) CompareBody {
	r := cmp.Result
	next := map[compare.Kind]*string{}
	for _, k := range data.ListedKinds {
		next[k] = nil
		if cur := cmp.Next[k]; cur != "" {
			next[k] = &cur
		}
	}
	return CompareBody{NextCursors: next,
		Base: cmp.Base.Ref.Key(), Head: cmp.Head.Ref.Key(),
		Fixed: h.knowItems(itemsJSON(r.Fixed)), Regressed: h.knowItems(itemsJSON(r.Regressed)), New: h.knowItems(itemsJSON(r.New)),
		StillFailing:   h.knowItems(itemsJSON(r.StillFailing)),
		TrainRegressed: h.knowItems(itemsJSON(r.TrainRegressed)), TrainFixed: h.knowItems(itemsJSON(r.TrainFixed)),
		TrainHeadline: show.TrainHeadline(cmp.Label, r.Headline),
		Headline:      show.Headline(cmp.Label, r.Headline), Counts: r.Headline.Counts,
		FixedDownloadShare: r.Headline.FixedShare, RegressedDownloadShare: r.Headline.RegressedShare,
		BaseRuntime: toRuntimeJSON(cmp.Base), HeadRuntime: toRuntimeJSON(cmp.Head),
	}
}

// knowItems sets the known issues of a comparison's list.
func (h *Handler) knowItems(items []CompareItem) []CompareItem {
	for i := range items {
		items[i].KnownIssue = h.Known.Table().MatchPtr(items[i].Signature)
	}
	return items
}
