package hubtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// treeRequest splits /api/models/{id}/tree/{rev}[/{path}]: the id has one
// or two parts, so "tree" is the second or the third segment.
func treeRequest(p string) (id, rev, dir string, ok bool) {
	rest, found := strings.CutPrefix(p, "/api/models/")
	if !found {
		return "", "", "", false
	}
	segs := strings.Split(rest, "/")
	switch {
	case len(segs) >= 4 && segs[2] == "tree":
		id, segs = segs[0]+"/"+segs[1], segs[3:]
	case len(segs) >= 3 && segs[1] == "tree":
		id, segs = segs[0], segs[2:]
	default:
		return "", "", "", false
	}
	return id, segs[0], strings.Trim(strings.Join(segs[1:], "/"), "/"), segs[0] != ""
}

// serveTree answers GET /api/models/{id}/tree/{rev}[/{path}] as the Hub
// does (huggingface_hub's list_repo_tree): the entries of a folder, or with
// recursive=true of everything under it, as {"type": "file"|"directory",
// "oid", "size", "path"} with "lfs": {"oid", "size", "pointerSize"} for LFS
// files, sorted by path, in pages of up to 1000 (SetPageSize) linked by
// `Link: <…&cursor=…>; rel="next"`.
func (h *Hub) serveTree(w http.ResponseWriter, r *http.Request) {
	id, rev, dir, ok := treeRequest(r.URL.Path)
	if !ok {
		hubError(w, r, http.StatusNotFound, "", "Sorry, we can't find the page you are looking for.")
		return
	}
	found := h.lookup(r, id)
	if found.answer(w, r, func(moved string) string {
		return "/api/models/" + moved + "/tree/" + url.PathEscape(rev) + strings.TrimSuffix("/"+dir, "/")
	}) {
		return
	}
	rp := found.repo
	h.mu.Lock()
	validRev := rev == "main" || rp.commits[rev]
	entries := treeEntries(rp, dir, r.URL.Query().Get("recursive") == "true" || r.URL.Query().Get("recursive") == "1")
	limit := 1000
	if h.pageSize > 0 {
		limit = min(limit, h.pageSize)
	}
	h.mu.Unlock()
	switch {
	case !validRev:
		hubError(w, r, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	case entries == nil:
		hubError(w, r, http.StatusNotFound, "EntryNotFound", fmt.Sprintf("%s does not exist on %q", dir, rev))
		return
	}
	offset, ok := pageOffset(r.URL.Query())
	if !ok || offset > len(entries) {
		hubError(w, r, http.StatusBadRequest, "", "Invalid cursor")
		return
	}
	end := min(offset+limit, len(entries))
	if end < len(entries) {
		h.linkNext(w, r.URL.EscapedPath(), r.URL.Query(), end)
	}
	writeJSON(w, r, http.StatusOK, entries[offset:end])
}

// treeEntries lists what is in folder dir of rp ("" for the root): its
// files and sub-folders, or with recursive everything below it; nil when
// dir is not a folder of the repo.
func treeEntries(rp *repo, dir string, recursive bool) []map[string]any {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	files := map[string]*file{}
	dirs := map[string]bool{}
	for name, f := range rp.files {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		for i := 1; i < len(parts); i++ {
			if !recursive && i > 1 {
				break
			}
			dirs[prefix+strings.Join(parts[:i], "/")] = true
		}
		if recursive || len(parts) == 1 {
			files[name] = f
		}
	}
	if len(files) == 0 && len(dirs) == 0 {
		if dir == "" {
			return []map[string]any{}
		}
		return nil
	}
	out := []map[string]any{}
	for d := range dirs {
		sum := sha1.Sum([]byte(rp.ID + "\x00" + d))
		out = append(out, map[string]any{"type": "directory", "oid": hex.EncodeToString(sum[:]), "size": 0, "path": d})
	}
	for name, f := range files {
		e := map[string]any{"type": "file", "oid": f.oid, "size": len(f.data), "path": name}
		if f.lfs {
			e["lfs"] = map[string]any{"oid": f.sha256, "size": len(f.data), "pointerSize": len(f.pointer)}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(a["path"].(string), b["path"].(string)) })
	return out
}
