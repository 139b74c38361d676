package pages

import (
	"net/url"
	"testing"
)

// TestSortHeaders: the column headers show the direction the list really
// has (the store's natural one without ?order=, else the order asked for)
// and link to the other direction; the other columns link to their sort
// in its natural direction (no order parameter).
func TestSortHeaders(t *testing.T) {
	tests := []struct {
		form      tableForm
		column    string
		aria      string
		nextOrder string // the header link's order parameter
	}{
		{tableForm{}, "downloads", "descending", "asc"}, // the default sort
		{tableForm{Sort: "downloads"}, "downloads", "descending", "asc"},
		{tableForm{Sort: "downloads", Order: "asc"}, "downloads", "ascending", "desc"},
		{tableForm{Sort: "id"}, "id", "ascending", "desc"},
		{tableForm{Sort: "id", Order: "desc"}, "id", "descending", "asc"},
		{tableForm{Sort: "status"}, "status", "ascending", "desc"},
		{tableForm{Sort: "tokens_per_s"}, "tokens_per_s", "descending", "asc"},
		{tableForm{Sort: "tested_at"}, "tested_at", "descending", "asc"},
		{tableForm{Sort: "tested_at", Order: "asc"}, "tested_at", "ascending", "desc"},
		{tableForm{Sort: "tested_at"}, "downloads", "none", ""},
		{tableForm{Sort: "id", Order: "desc", Q: "llama"}, "status", "none", ""},
	}
	for _, tt := range tests {
		h, ok := sortHeaders(tt.form)[tt.column]
		if !ok {
			t.Errorf("%+v: no header for %s", tt.form, tt.column)
			continue
		}
		if h.Aria != tt.aria {
			t.Errorf("%+v: %s aria-sort = %q; want %q", tt.form, tt.column, h.Aria, tt.aria)
		}
		u, err := url.Parse(h.URL)
		if err != nil {
			t.Fatalf("%+v: %s link %q: %v", tt.form, tt.column, h.URL, err)
		}
		q := u.Query()
		if q.Get("sort") != tt.column || q.Get("order") != tt.nextOrder || q.Get("q") != tt.form.Q {
			t.Errorf("%+v: %s link %q; want sort=%s order=%q q=%q", tt.form, tt.column, h.URL, tt.column, tt.nextOrder, tt.form.Q)
		}
	}
}
