package web

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Limits on request input.
const (
	maxQueryLen  = 200  // ?q=
	maxOrgLen    = 96   // ?org=, a Hub namespace
	maxCursorLen = 1024 // ?cursor=
	maxLimit     = 1000 // ?limit= is capped to this
	defaultLimit = 50
)

var (
	// tokenRE is a task (pipeline tag) or similar word.
	tokenRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
)

// idParam is the model id of a wildcard route (/models/*), percent-decoded
// and validated. A malformed id is not found (it cannot name a model).
func idParam(c *fiber.Ctx, suffix string) (string, error) {
	raw := c.Params("*")
	id, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("%w: malformed model id", ErrNotFound)
	}
	id = strings.TrimSuffix(id, "/")
	if suffix != "" {
		var ok bool
		if id, ok = strings.CutSuffix(id, suffix); !ok {
			return "", fmt.Errorf("%w: want %s", ErrNotFound, suffix)
		}
	}
	if compat.ValidateModelID(id) != nil {
		return "", fmt.Errorf("%w: no model %s", ErrNotFound, quoteShort(id))
	}
	return id, nil
}

// quoteShort quotes s for an error message, cut to a readable length.
func quoteShort(s string) string {
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return strconv.Quote(s)
}

// parseTarget reads ?target= by the filter rule compat.ParseTargetFilter
// owns: auto and none both mean "the newest result on any target" ("").
func parseTarget(v string) (compat.Target, error) {
	t, err := compat.ParseTargetFilter(v)
	if err != nil {
		return "", fmt.Errorf("%w: unknown target %s (want tpu, cpu, cuda or auto)", ErrBadRequest, quoteShort(v))
	}
	return t, nil
}

// parseLimit reads ?limit=: an integer from 1 to maxLimit (the OpenAPI
// document's minimum and maximum).
func parseLimit(v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, fmt.Errorf("%w: limit must be an integer from 1 to %d, got %s", ErrBadRequest, maxLimit, quoteShort(v))
	}
	return n, nil
}

// queryParams are the query parameters the API and the feeds document
// (exactParams).
var queryParams = map[string]bool{
	"q": true, "status": true, "train": true, "task": true, "org": true, "target": true, "sort": true, "hint": true,
	"order": true, "limit": true, "cursor": true, "base": true, "head": true, "model": true, "kind": true,
	"serve": true, "table": true, "op": true, "format": true,
}

// spaceRanges are the runes strings.TrimSpace trims (unicode.IsSpace),
// which exactParams refuses around a value: the class paddedPattern names
// them by (TestSpaceRanges checks every rune).
var spaceRanges = [][2]rune{{'\t', '\r'}, {' ', ' '}, {0x85, 0x85}, {0xa0, 0xa0}, {0x1680, 0x1680},
	{0x2000, 0x200a}, {0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}}

// paddedPattern is the OpenAPI document's pattern of a free-text value
// exactParams takes: not empty, no space (spaceRanges) at either end. The
// class is spelled out: "\S" means other runes in ECMA-262 and in Python.
var paddedPattern = func() string {
	var class strings.Builder
	for _, r := range spaceRanges {
		fmt.Fprintf(&class, `\u%04x`, r[0])
		if r[1] != r[0] {
			fmt.Fprintf(&class, `-\u%04x`, r[1])
		}
	}
	c := class.String()
	return `^[^` + c + `](?:[\s\S]*[^` + c + `])?$`
}()

// exactParams is the API's and the feeds' rule for the value of a
// documented parameter: given, it is exact. Empty (?target=) or padded
// with spaces (?org=%20x) it is refused, 400, as the OpenAPI document's
// enums and patterns refuse it. The table and the CSV export take an empty
// one as "any" and trim spaces, as the filter form sends them.
func exactParams(c *fiber.Ctx) error {
	if m := c.Method(); m != fiber.MethodGet && m != fiber.MethodHead {
		return c.Next() // a method the route does not take is 405 first
	}
	var bad, why string
	c.Context().QueryArgs().VisitAll(func(k, v []byte) {
		if bad != "" || !queryParams[string(k)] {
			return
		}
		switch t := strings.TrimSpace(string(v)); {
		case t == "":
			bad, why = string(k), "is empty: give it a value or leave it out"
		case len(t) != len(v):
			bad, why = string(k), "has spaces around its value"
		}
	})
	if bad != "" {
		return fmt.Errorf("%w: %s %s", ErrBadRequest, bad, why)
	}
	return c.Next()
}

// queryValues returns every value of a repeatable parameter, also split at
// commas (?status=fail,oom&status=crash).
func queryValues(c *fiber.Ctx, key string) []string {
	var out []string
	for _, v := range c.Context().QueryArgs().PeekMulti(key) {
		for _, p := range strings.Split(string(v), ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// parseModelQuery reads the table/API/CSV query string into a ModelQuery.
// Unknown values of known parameters are errors (400); unknown parameters
// are ignored.
func parseModelQuery(c *fiber.Ctx) (store.ModelQuery, error) {
	var q store.ModelQuery
	q.Q = strings.TrimSpace(c.Query("q"))
	if utf8.RuneCountInString(c.Query("q")) > maxQueryLen {
		return q, fmt.Errorf("%w: q is longer than %d characters", ErrBadRequest, maxQueryLen)
	}
	for _, v := range queryValues(c, "status") {
		st := compat.Status(v)
		if !st.Valid() {
			return q, fmt.Errorf("%w: unknown status %s (want %s)", ErrBadRequest, quoteShort(v), statusList())
		}
		q.Status = append(q.Status, st)
	}
	for _, v := range queryValues(c, "train") {
		st := compat.Status(v)
		if !st.Valid() || st == compat.StatusUntested {
			return q, fmt.Errorf("%w: unknown train status %s (want %s)", ErrBadRequest, quoteShort(v), trainStatusList())
		}
		q.Train = append(q.Train, st)
	}
	if q.Task = strings.TrimSpace(c.Query("task")); q.Task != "" && !tokenRE.MatchString(q.Task) {
		return q, fmt.Errorf("%w: invalid task %s", ErrBadRequest, quoteShort(q.Task))
	}
	if utf8.RuneCountInString(c.Query("org")) > maxOrgLen { // spaces included, as the document counts
		return q, fmt.Errorf("%w: org is longer than %d characters", ErrBadRequest, maxOrgLen)
	}
	if q.Org = strings.TrimSpace(c.Query("org")); q.Org != "" && compat.ValidateModelNamespace(q.Org) != nil {
		return q, fmt.Errorf("%w: invalid org %s", ErrBadRequest, quoteShort(q.Org))
	}
	if q.Hint = strings.TrimSpace(c.Query("hint")); q.Hint != "" && !readiness.ValidCode(q.Hint) {
		return q, fmt.Errorf("%w: unknown hint %s (want %s)", ErrBadRequest, quoteShort(q.Hint), strings.Join(readiness.Codes, ", "))
	}
	var err error
	if q.Serve, err = parseServe(strings.TrimSpace(c.Query("serve"))); err != nil {
		return q, err
	}
	if q.Target, err = parseTarget(c.Query("target")); err != nil {
		return q, err
	}
	if q.Sort = c.Query("sort"); q.Sort != "" {
		if _, ok := store.LookupSort(q.Sort); !ok {
			return q, fmt.Errorf("%w: unknown sort %s (want %s)", ErrBadRequest, quoteShort(q.Sort), strings.Join(sortNames(), ", "))
		}
	}
	switch o := c.Query("order"); o {
	case "":
	case "asc", "desc":
		desc := o == "desc"
		q.Desc = &desc
	default:
		return q, fmt.Errorf("%w: unknown order %s (want asc or desc)", ErrBadRequest, quoteShort(o))
	}
	if q.Limit, err = parseLimit(c.Query("limit"), defaultLimit); err != nil {
		return q, err
	}
	if q.Cursor = c.Query("cursor"); len(q.Cursor) > maxCursorLen {
		return q, fmt.Errorf("%w: %w", ErrBadRequest, store.ErrBadCursor)
	}
	return q, nil
}

func statusList() string {
	s := make([]string, len(compat.Statuses))
	for i, st := range compat.Statuses {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// sortNames are the ?sort= values, in the store's order (store/sort.go
// decides them and their default directions).
func sortNames() []string {
	var names []string
	for _, st := range store.Sorts() {
		names = append(names, st.Name)
	}
	return names
}

// trainStatusList is the statuses a train verdict can have, for messages:
// every status but untested (a result without a train verdict has none).
func trainStatusList() string {
	var out []string
	for _, st := range trainStatuses() {
		out = append(out, string(st))
	}
	return strings.Join(out, ", ")
}
