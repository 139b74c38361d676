package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

// Sibling is one file of a model repo, from the "siblings" of a listing or
// model info (rfilename, size, blobId, lfs.sha256).
type Sibling struct {
	Name      string // path in the repo, '/'-separated
	Size      int64  // bytes; 0 when unknown (listings carry names only)
	LFSSHA256 string // sha256 of an LFS file's content; "" for files stored in git (or unknown)
	BlobID    string // git blob id; "" when unknown
}

// ModelInfo is what the Hub says about one model.
type ModelInfo struct {
	ID            string // canonical id (after renames)
	RequestedID   string // the id asked for (ModelInfo); equals ID in listings
	SHA           string // commit of the revision described (main for listings)
	PipelineTag   string
	Library       string
	Tags          []string
	Gated         bool
	GatedMode     string // "auto", "manual" or ""
	Private       bool
	Disabled      bool
	Downloads     int64 // last 30 days
	Likes         int64
	TrendingScore float64
	LastModified  time.Time
	Siblings      []Sibling
	// FilesMetadata reports whether Siblings carry sizes and LFS hashes
	// (model info) rather than names only (listings, cache scans of
	// incomplete snapshots carry sizes too).
	FilesMetadata bool
	// Config is the Hub's "config" summary (architectures, model_type,
	// auto_map, tokenizer_config, …), or the snapshot's config.json for
	// ScanCache; nil when absent.
	Config  map[string]any
	Aliases []string // old ids this model was reached through (renames)
	// Safetensors is the Hub's count of the checkpoint's tensor elements per
	// dtype ("safetensors": {"parameters": {"BF16": n, …}}); nil when the
	// Hub has none. Its "total" is not kept: readiness sums the dtypes.
	Safetensors map[string]int64
}

// apiModel is the Hub's JSON for a model, in listings and model info.
type apiModel struct {
	ID            string           `json:"id"`
	ModelID       string           `json:"modelId"`
	SHA           string           `json:"sha"`
	PipelineTag   string           `json:"pipeline_tag"`
	Library       string           `json:"library_name"`
	Tags          []string         `json:"tags"`
	Gated         gatedField       `json:"gated"`
	Private       bool             `json:"private"`
	Disabled      bool             `json:"disabled"`
	Downloads     int64            `json:"downloads"`
	Likes         int64            `json:"likes"`
	TrendingScore float64          `json:"trendingScore"`
	LastModified  string           `json:"lastModified"`
	Config        map[string]any   `json:"config"`
	Siblings      []apiSibling     `json:"siblings"`
	Safetensors   safetensorsField `json:"safetensors"`
}

// safetensorsField reads the Hub's "safetensors" object for its
// "parameters" (elements per dtype). It never fails a listing: an object of
// another shape, or counts that are not whole non-negative numbers, give no
// (or fewer) counts.
type safetensorsField map[string]int64

func (f *safetensorsField) UnmarshalJSON(b []byte) error {
	var v struct {
		Parameters map[string]json.Number `json:"parameters"`
	}
	*f = nil
	if json.Unmarshal(b, &v) != nil || len(v.Parameters) == 0 {
		return nil
	}
	out := safetensorsField{}
	for dtype, n := range v.Parameters {
		if c, err := n.Int64(); err == nil && c >= 0 && len(dtype) <= 16 {
			out[dtype] = c
		}
	}
	if len(out) > 0 {
		*f = out
	}
	return nil
}

type apiSibling struct {
	RFilename string `json:"rfilename"`
	Size      *int64 `json:"size"`
	BlobID    string `json:"blobId"`
	LFS       *struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	} `json:"lfs"`
}

// gatedField is the Hub's "gated": false, "auto" or "manual".
type gatedField string

func (g *gatedField) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*g = gatedField(s)
		return nil
	}
	var on bool
	if err := json.Unmarshal(b, &on); err != nil {
		return fmt.Errorf("gated: want false, \"auto\" or \"manual\", got %s", b)
	}
	if on {
		*g = "manual" // an unqualified true: treat as the stricter mode
	} else {
		*g = ""
	}
	return nil
}

func (m apiModel) info() ModelInfo {
	id := cmp.Or(m.ID, m.ModelID)
	mi := ModelInfo{
		ID:            id,
		RequestedID:   id,
		SHA:           m.SHA,
		PipelineTag:   m.PipelineTag,
		Library:       m.Library,
		Tags:          m.Tags,
		Gated:         m.Gated != "",
		GatedMode:     string(m.Gated),
		Private:       m.Private,
		Disabled:      m.Disabled,
		Downloads:     m.Downloads,
		Likes:         m.Likes,
		TrendingScore: m.TrendingScore,
		Config:        m.Config,
		Safetensors:   m.Safetensors,
	}
	if t, err := time.Parse(time.RFC3339Nano, m.LastModified); err == nil {
		mi.LastModified = t
	}
	for _, s := range m.Siblings {
		sib := Sibling{Name: s.RFilename, BlobID: s.BlobID}
		if s.Size != nil {
			sib.Size = *s.Size
		}
		if s.LFS != nil {
			sib.LFSSHA256 = s.LFS.SHA256
			if sib.Size == 0 {
				sib.Size = s.LFS.Size
			}
		}
		mi.Siblings = append(mi.Siblings, sib)
	}
	return mi
}

// ListOptions select and order the models ListModels returns.
type ListOptions struct {
	// Sort is one of config.Sorts ("" for config.DefaultSort): downloads,
	// likes or trending (the Hub's trendingScore), always descending.
	Sort string
	// Limit is how many models to return (config.DefaultLimit when zero).
	Limit int
	// PipelineTags keeps models with any of these tasks; none keeps all.
	PipelineTags []string
	// Library keeps models of this library (Hub filter=, e.g. transformers).
	Library string
	// OnPage is called after each page with the number of models so far.
	OnPage func(got int)
}

// maxPage is the most models the Hub returns in one page.
const maxPage = 1000

// listExpand are the fields requested per model: everything the scanner
// needs, so that a listing needs no per-model request. Names as in
// huggingface_hub's ExpandModelProperty_T.
var listExpand = []string{
	"downloads", "likes", "trendingScore", "pipeline_tag", "library_name", "tags", "sha",
	"gated", "lastModified", "private", "disabled", "config", "siblings", "safetensors",
}

// sortParam maps ListOptions.Sort to the Hub's sort key.
func sortParam(s string) (string, error) {
	if s == "" {
		s = config.DefaultSort
	}
	if key, ok := sortKeys[s]; ok {
		return key, nil
	}
	return "", fmt.Errorf("hub: unknown sort %q (want one of %s)", s, strings.Join(config.Sorts, ", "))
}

// sortKeys maps each of config.Sorts to the Hub's sort key.
var sortKeys = map[string]string{"downloads": "downloads", "likes": "likes", "trending": "trendingScore"}

// ListModels returns the top models by o.Sort, at most o.Limit, in the Hub's
// order, without duplicates and without ids that are not Hub ids (each
// dropped with a warning). A listing that does not end (pages that add no
// model, more pages than the limit needs) fails with ErrEndlessListing. Each page asks for up to 1000 models with every
// field the scanner needs (one request lists 1000 models); the Link header's
// rel="next" is followed verbatim until Limit models are in.
//
// Several PipelineTags are listed one by one (the Hub's filters combine with
// AND) and merged by the sort key.
func (c *Client) ListModels(ctx context.Context, o ListOptions) ([]ModelInfo, error) {
	key, err := sortParam(o.Sort)
	if err != nil {
		return nil, err
	}
	limit := o.Limit
	if limit <= 0 {
		limit = config.DefaultLimit
	}
	warned := map[string]bool{}
	var tags []string
	for _, t := range o.PipelineTags {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	if len(tags) <= 1 {
		tag := ""
		if len(tags) == 1 {
			tag = tags[0]
		}
		return c.list(ctx, key, limit, tag, o.Library, o.OnPage, 0, warned)
	}
	var all []ModelInfo
	for _, tag := range tags {
		got, err := c.list(ctx, key, limit, tag, o.Library, o.OnPage, len(all), warned)
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
	}
	score := func(m ModelInfo) float64 {
		switch key {
		case "likes":
			return float64(m.Likes)
		case "trendingScore":
			return m.TrendingScore
		}
		return float64(m.Downloads)
	}
	slices.SortStableFunc(all, func(a, b ModelInfo) int { return cmp.Compare(score(b), score(a)) })
	seen := map[string]bool{}
	out := all[:0]
	for _, m := range all {
		if !seen[m.ID] && len(out) < limit {
			seen[m.ID] = true
			out = append(out, m)
		}
	}
	return out, nil
}

// list pages through one listing query. A listing must end: a page that
// adds no new id while linking to another, or more pages than the limit
// needs at the page size the server really sends (maxPages), fail with
// ErrEndlessListing. Ids that are not Hub ids are dropped, with one warning
// each (warned is shared by the queries of one ListModels).
func (c *Client) list(ctx context.Context, sortKey string, limit int, tag, library string, onPage func(int), before int, warned map[string]bool) ([]ModelInfo, error) {
	u, err := c.listURL(sortKey, limit, tag, library)
	if err != nil {
		return nil, err
	}
	var out []ModelInfo
	seen := map[string]bool{}
	visited := map[string]bool{}
	largest := 0 // the most models the server sent in one page
	for page := 1; ; page++ {
		visited[u.String()] = true
		var items []apiModel
		next, err := c.getJSON(ctx, u, &items)
		if err != nil {
			return nil, fmt.Errorf("hub: list models (page %d): %w", page, err)
		}
		largest = max(largest, len(items))
		added := 0
		for _, it := range items {
			m := it.info()
			if seen[m.ID] {
				continue
			}
			seen[m.ID] = true
			added++ // progress, even when the id is then dropped
			if !c.listable(m.ID, warned) {
				continue
			}
			c.rememberMain(m.ID, m.SHA) // a listing's sha is main's head
			out = append(out, m)
			if len(out) == limit {
				break
			}
		}
		if onPage != nil {
			onPage(before + len(out))
		}
		if len(out) >= limit || next == "" {
			return out, nil
		}
		if added == 0 {
			return nil, fmt.Errorf("hub: list models: page %d (%d models) added no new model yet links to another page: %w",
				page, len(items), ErrEndlessListing)
		}
		if most := maxPages(limit, largest); page >= most {
			return nil, fmt.Errorf("hub: list models: %d pages of up to %d models gave %d of the %d models asked for: %w",
				page, largest, len(out), limit, ErrEndlessListing)
		}
		nu, err := u.Parse(next)
		if err != nil {
			return nil, fmt.Errorf("hub: list models: bad next link %q: %w", c.redact(next), err)
		}
		if visited[nu.String()] {
			return nil, fmt.Errorf("hub: list models: the next link of page %d loops back to an earlier page: %w", page, ErrEndlessListing)
		}
		u = nu
	}
}

// listURL is the first page's URL of one listing query.
func (c *Client) listURL(sortKey string, limit int, tag, library string) (*url.URL, error) {
	q := url.Values{}
	q.Set("sort", sortKey)
	q.Set("direction", "-1")
	q.Set("limit", strconv.Itoa(min(limit, maxPage)))
	if tag != "" {
		q.Set("pipeline_tag", tag)
	}
	if library != "" {
		q.Set("filter", library)
	}
	for _, e := range listExpand {
		q.Add("expand[]", e)
	}
	u, err := url.Parse(c.base + "/api/models?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("hub: list models: %w", err)
	}
	return u, nil
}

// listable reports whether a listed id is a Hub id (compat.ValidateModelID);
// an id that is not is dropped before anything stores or prints it, with
// one warning per id (the log handler escapes what it holds).
func (c *Client) listable(id string, warned map[string]bool) bool {
	err := compat.ValidateModelID(id)
	if err == nil {
		return true
	}
	if !warned[id] {
		warned[id] = true
		c.log.Warn("hub: listing: dropped a model whose id is not a Hub id", "id", truncate(id, 200), "err", err)
	}
	return false
}

// maxPages is how many pages a listing of limit models may take when the
// server sends up to pageLen models a page: what the limit needs, plus 10%
// and 2 pages of slack for models that move between pages while ranks
// change. A listing that needs more does not end.
func maxPages(limit, pageLen int) int {
	pageLen = max(pageLen, 1)
	need := (limit + pageLen - 1) / pageLen
	return need + need/10 + 2
}

// maxJSON bounds a JSON answer, which is read whole (a 1000-model page
// with siblings and configs is a few MB).
const maxJSON = 64 << 20

// getJSON GETs u (following redirects), decodes the JSON answer into v and
// returns the Link header's rel="next" target.
func (c *Client) getJSON(ctx context.Context, u *url.URL, v any) (next string, err error) {
	hdr := http.Header{"Accept": {"application/json"}}
	resp, final, _, err := c.follow(ctx, http.MethodGet, u, hdr, c.reqLimit)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxJSON)+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", c.safeURL(final), err)
	}
	if len(body) > c.maxJSON {
		return "", fmt.Errorf("%s: answer over %d bytes", c.safeURL(final), c.maxJSON)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return "", fmt.Errorf("%s: malformed JSON from the Hub (%d bytes, starts %q): %w",
			c.safeURL(final), len(body), c.redact(truncate(string(body), 40)), err)
	}
	return nextLink(resp.Header.Values("Link")), nil
}

// ModelInfo returns the model's info at revision (a commit sha, a branch or
// a tag; "" means main), with siblings' sizes and LFS hashes
// (FilesMetadata). Renamed repos are followed (the Hub answers 307): ID is
// the new id, RequestedID the one asked for, and Aliases lists the old ids.
func (c *Client) ModelInfo(ctx context.Context, id, revision string) (ModelInfo, error) {
	if err := compat.ValidateModelID(id); err != nil {
		return ModelInfo{}, fmt.Errorf("hub: %w", err)
	}
	rev := revision
	if rev == "" {
		rev = "main"
	}
	u, err := url.Parse(c.base + "/api/models/" + escapeID(id) + "/revision/" + url.PathEscape(rev) + "?blobs=true")
	if err != nil {
		return ModelInfo{}, fmt.Errorf("hub: model info %s: %w", id, err)
	}
	var am apiModel
	hdr := http.Header{"Accept": {"application/json"}}
	resp, final, chain, err := c.follow(ctx, http.MethodGet, u, hdr, c.reqLimit)
	if err != nil {
		return ModelInfo{}, fmt.Errorf("hub: model info %s@%s: %w", id, rev, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxJSON)))
	resp.Body.Close()
	if err != nil {
		return ModelInfo{}, fmt.Errorf("hub: model info %s@%s: read: %w", id, rev, err)
	}
	if err := json.Unmarshal(body, &am); err != nil {
		return ModelInfo{}, fmt.Errorf("hub: model info %s@%s: %s: malformed JSON from the Hub: %w", id, rev, c.safeURL(final), err)
	}
	mi := am.info()
	if mi.ID == "" {
		mi.ID = idFromAPIPath(final.Path)
	}
	if mi.ID == "" {
		mi.ID = id
	}
	mi.RequestedID = id
	mi.FilesMetadata = true
	add := func(old string) {
		if old != "" && old != mi.ID && !slices.Contains(mi.Aliases, old) {
			mi.Aliases = append(mi.Aliases, old)
		}
	}
	add(id)
	for _, hop := range chain {
		add(idFromAPIPath(hop.Path))
	}
	if rev == "main" {
		c.rememberMain(mi.ID, mi.SHA)
		for _, a := range mi.Aliases {
			c.rememberMain(a, mi.SHA)
		}
	}
	return mi, nil
}

// idFromAPIPath extracts the id from /api/models/{id}[/revision/{rev}].
func idFromAPIPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/api/models/")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "/revision/"); i >= 0 {
		rest = rest[:i]
	}
	if compat.ValidateModelID(rest) != nil {
		return ""
	}
	return rest
}

// escapeID escapes each part of a (valid) id for a URL path.
func escapeID(id string) string {
	ns, name, ok := strings.Cut(id, "/")
	if !ok {
		return url.PathEscape(id)
	}
	return url.PathEscape(ns) + "/" + url.PathEscape(name)
}

// escapePath escapes each segment of a repo file path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func (c *Client) rememberMain(id, sha string) {
	if id == "" || !commitRE.MatchString(sha) {
		return
	}
	c.mu.Lock()
	c.mainSHA[id] = sha
	c.mu.Unlock()
}

// isMain reports whether the Hub told this client that sha is id's main.
func (c *Client) isMain(id, sha string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mainSHA[id] == sha
}
