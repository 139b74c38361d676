package hubtest

import (
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// expandable are the model fields expand= accepts (huggingface_hub's
// ExpandModelProperty_T); listDefault are a listing's fields without it.
var (
	expandable = []string{"author", "baseModels", "cardData", "childrenModelCount", "config", "createdAt",
		"disabled", "downloads", "downloadsAllTime", "evalResults", "gated", "gguf", "inference",
		"inferenceProviderMapping", "lastModified", "library_name", "likes", "mask_token", "model-index",
		"pipeline_tag", "private", "resourceGroup", "safetensors", "sha", "siblings", "spaces", "tags",
		"transformersInfo", "trendingScore", "usedStorage", "widgetData", "xetEnabled"}
	listDefault = []string{"likes", "trendingScore", "private", "downloads", "tags", "pipeline_tag",
		"library_name", "createdAt", "modelId"}
	infoDefault = []string{"author", "sha", "lastModified", "private", "disabled", "gated", "downloads",
		"likes", "library_name", "tags", "pipeline_tag", "createdAt", "config", "siblings", "modelId"}
)

// expandFields reads expand= and expand[]= (both forms the Hub accepts).
func expandFields(q url.Values) ([]string, error) {
	var fields []string
	for _, v := range append(q["expand"], q["expand[]"]...) {
		if !slices.Contains(expandable, v) {
			return nil, fmt.Errorf(`"expand" must be one of [%s]`, strings.Join(expandable, ", "))
		}
		if !slices.Contains(fields, v) {
			fields = append(fields, v)
		}
	}
	return fields, nil
}

type cursor struct {
	Offset int `json:"offset"`
}

func (h *Hub) serveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fields, err := expandFields(q)
	if err != nil {
		hubError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	if len(fields) == 0 {
		fields = listDefault
	}
	limit := 1000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			hubError(w, r, http.StatusBadRequest, "", `"limit" must be a positive integer`)
			return
		}
		limit = min(n, 1000)
	}
	h.mu.Lock()
	ps := h.pageSize
	h.mu.Unlock()
	if ps > 0 {
		limit = min(limit, ps)
	}
	offset := 0
	if v := q.Get("cursor"); v != "" {
		b, err := base64.StdEncoding.DecodeString(v)
		var c cursor
		if err != nil || json.Unmarshal(b, &c) != nil || c.Offset < 0 {
			hubError(w, r, http.StatusBadRequest, "", "Invalid cursor")
			return
		}
		offset = c.Offset
	}
	sortKey := q.Get("sort")
	switch sortKey {
	case "", "downloads", "likes", "trendingScore", "lastModified", "createdAt", "id":
	default:
		hubError(w, r, http.StatusBadRequest, "", fmt.Sprintf("Invalid sort parameter %q", sortKey))
		return
	}
	asc := q.Get("direction") == "1"

	h.mu.Lock()
	authorized := h.token != "" && h.bearer(r) == h.token
	var models []*repo
	for _, id := range h.order {
		rp := h.repos[id]
		if rp.Private && !authorized {
			continue
		}
		if !matches(rp, q) {
			continue
		}
		models = append(models, rp)
	}
	h.mu.Unlock()

	if sortKey != "" {
		slices.SortStableFunc(models, func(a, b *repo) int {
			c := compareBy(sortKey, a, b)
			if !asc {
				c = -c
			}
			return cmp.Or(c, strings.Compare(a.ID, b.ID))
		})
	}
	end := min(offset+limit, len(models))
	page := []map[string]any{}
	if offset < len(models) {
		for _, rp := range models[offset:end] {
			page = append(page, h.modelJSON(rp, fields, false))
		}
	}
	if end < len(models) {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		c, _ := json.Marshal(cursor{Offset: end})
		next.Set("cursor", base64.StdEncoding.EncodeToString(c))
		w.Header().Set("Link", fmt.Sprintf(`<%s/api/models?%s>; rel="next"`, h.hub.URL, next.Encode()))
	}
	writeJSON(w, r, http.StatusOK, page)
}

func matches(rp *repo, q url.Values) bool {
	for _, f := range q["filter"] {
		for one := range strings.SplitSeq(f, ",") {
			if !slices.Contains(rp.Tags, one) {
				return false
			}
		}
	}
	if v := q.Get("pipeline_tag"); v != "" && rp.PipelineTag != v {
		return false
	}
	if v := q.Get("library"); v != "" && rp.Library != v {
		return false
	}
	if v := q.Get("author"); v != "" && !strings.HasPrefix(rp.ID, v+"/") {
		return false
	}
	if v := q.Get("search"); v != "" && !strings.Contains(strings.ToLower(rp.ID), strings.ToLower(v)) {
		return false
	}
	return true
}

func compareBy(key string, a, b *repo) int {
	switch key {
	case "downloads":
		return cmp.Compare(a.Downloads, b.Downloads)
	case "likes":
		return cmp.Compare(a.Likes, b.Likes)
	case "trendingScore":
		return cmp.Compare(a.TrendingScore, b.TrendingScore)
	case "lastModified", "createdAt":
		return a.LastModified.Compare(b.LastModified)
	}
	return strings.Compare(a.ID, b.ID)
}

// modelJSON renders a repo as the Hub does: _id and id always, then the
// fields asked for.
func (h *Hub) modelJSON(rp *repo, fields []string, blobs bool) map[string]any {
	sum := sha1.Sum([]byte(rp.ID))
	m := map[string]any{"_id": hex.EncodeToString(sum[:12]), "id": rp.ID}
	for _, f := range fields {
		switch f {
		case "modelId":
			m["modelId"] = rp.ID
		case "author":
			if ns, _, ok := strings.Cut(rp.ID, "/"); ok {
				m["author"] = ns
			}
		case "sha":
			m["sha"] = rp.SHA
		case "lastModified":
			m["lastModified"] = rp.LastModified.UTC().Format("2006-01-02T15:04:05.000Z")
		case "createdAt":
			m["createdAt"] = rp.LastModified.Add(-24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
		case "private":
			m["private"] = rp.Private
		case "disabled":
			m["disabled"] = rp.Disabled
		case "gated":
			if rp.Gated == "" {
				m["gated"] = false
			} else {
				m["gated"] = rp.Gated
			}
		case "downloads":
			m["downloads"] = rp.Downloads
		case "likes":
			m["likes"] = rp.Likes
		case "trendingScore":
			m["trendingScore"] = rp.TrendingScore
		case "library_name":
			if rp.Library != "" {
				m["library_name"] = rp.Library
			}
		case "pipeline_tag":
			if rp.PipelineTag != "" {
				m["pipeline_tag"] = rp.PipelineTag
			}
		case "tags":
			m["tags"] = rp.Tags
		case "config":
			if rp.Config != nil {
				m["config"] = rp.Config
			}
		case "safetensors":
			if st := rp.safetensors(); st != nil {
				m["safetensors"] = st
			}
		case "siblings":
			names := make([]string, 0, len(rp.files))
			for n := range rp.files {
				names = append(names, n)
			}
			slices.Sort(names)
			sibs := []map[string]any{}
			for _, n := range names {
				s := map[string]any{"rfilename": n}
				if blobs {
					f := rp.files[n]
					s["blobId"] = f.oid
					s["size"] = len(f.data)
					if f.lfs {
						s["lfs"] = map[string]any{"sha256": f.sha256, "size": len(f.data), "pointerSize": len(f.pointer)}
					}
				}
				sibs = append(sibs, s)
			}
			m["siblings"] = sibs
		}
	}
	return m
}
