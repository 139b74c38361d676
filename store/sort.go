package store

import (
	"fmt"
	"strings"
)

// This file decides the model list's sort orders: their names (the values
// of ModelQuery.Sort and of the site's ?sort=), the default, the natural
// direction of each, and the columns each orders by. The web package
// validates ?sort= and draws its column headers from Sorts; nothing else
// names an order.

// Sort is one order of ListModels.
type Sort struct {
	Name string // the ModelQuery.Sort value
	// Desc is the natural direction, used when ModelQuery.Desc is nil:
	// true = largest (most downloads, newest, fastest) first.
	Desc bool
}

// DefaultSort is the order of a ModelQuery whose Sort is "".
const DefaultSort = "downloads"

// keyKind is the Go type of a sort key's value.
type keyKind int

const (
	keyInt keyKind = iota
	keyFloat
)

// sortKey is one column of an order. Keys marked nullsLast keep their
// direction when the order is reversed, so rows without a value stay last.
type sortKey struct {
	expr      string
	kind      keyKind
	desc      bool
	nullsLast bool
}

// sortOrder is one order and its keys, in its natural direction. Every
// order ends with the model id (not listed), ascending in the natural
// direction, so the order is total and a cursor is exact. The first key
// that is not a nulls-last flag is the sort's own and gives its natural
// direction (none: the id's, ascending); reversing flips all but the flags.
//
// Each order, either way, is the order of an index on current (see the
// schema), so a page is read by walking that index from the cursor on.
type sortOrder struct {
	name string
	keys []sortKey
}

// sortOrders are ListModels' orders, DefaultSort first.
var sortOrders = []sortOrder{
	{"downloads", []sortKey{{expr: listDownloads, desc: true}}},
	{"likes", []sortKey{{expr: listLikes, desc: true}}},
	{"status", []sortKey{{expr: listStatusRank}, {expr: listDownloads, desc: true}}},
	{"tokens_per_s", []sortKey{{expr: listNoTokens, nullsLast: true}, {expr: listTokens, kind: keyFloat, desc: true}}},
	{"tested_at", []sortKey{{expr: listUntested, nullsLast: true}, {expr: listTested, desc: true}}},
	{"id", nil},
}

// natural is the order's natural direction: that of its own key.
func (o sortOrder) natural() bool {
	for _, k := range o.keys {
		if !k.nullsLast {
			return k.desc
		}
	}
	return false
}

// directed returns the order's keys with their directions for desc (nil =
// natural), and whether that reverses the natural direction (the id's
// direction then is descending).
func (o sortOrder) directed(desc *bool) ([]sortKey, bool) {
	reverse := desc != nil && *desc != o.natural()
	keys := make([]sortKey, len(o.keys))
	for i, k := range o.keys {
		if reverse && !k.nullsLast {
			k.desc = !k.desc
		}
		keys[i] = k
	}
	return keys, reverse
}

// Sorts lists ListModels' orders, DefaultSort first.
func Sorts() []Sort {
	out := make([]Sort, len(sortOrders))
	for i, o := range sortOrders {
		out[i] = Sort{Name: o.name, Desc: o.natural()}
	}
	return out
}

// LookupSort returns the order named name ("" = DefaultSort); false for a
// name that is not one of Sorts.
func LookupSort(name string) (Sort, bool) {
	o, err := findOrder(name)
	if err != nil {
		return Sort{}, false
	}
	return Sort{Name: o.name, Desc: o.natural()}, true
}

// findOrder returns the order named name ("" = DefaultSort); the error
// wraps ErrInvalid for an unknown name.
func findOrder(name string) (sortOrder, error) {
	if name == "" {
		name = DefaultSort
	}
	names := make([]string, len(sortOrders))
	for i, o := range sortOrders {
		if o.name == name {
			return o, nil
		}
		names[i] = o.name
	}
	return sortOrder{}, fmt.Errorf("%w: sort %q (want %s)", ErrInvalid, name, strings.Join(names, ", "))
}
