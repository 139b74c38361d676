package store

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
)

// TestCursorKeys: a cursor holds every key of every order.
func TestCursorKeys(t *testing.T) {
	for _, o := range sortOrders {
		if len(o.keys) > cursorKeys {
			t.Errorf("order %s has %d keys; a cursor holds %d", o.name, len(o.keys), cursorKeys)
		}
	}
}

// TestCompareCursorPattern: the form names exactly the listed kinds.
func TestCompareCursorPattern(t *testing.T) {
	m := regexp.MustCompile(`^\^\(([a-z_|]+)\)`).FindStringSubmatch(CompareCursorPattern)
	if m == nil {
		t.Fatalf("no kinds in %s", CompareCursorPattern)
	}
	got := strings.Split(m[1], "|")
	var want []string
	for _, k := range append(slices.Clone(compare.Listed), compare.TrainListed...) {
		want = append(want, string(k))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the compare cursor's kinds %v; want the listed ones %v", got, want)
	}
}

// TestCursorRoundTrip: what String writes, parseCursor reads back.
func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []cursor{
		{Keys: [cursorKeys]any{int64(0), int64(0)}, ID: ""},
		{Keys: [cursorKeys]any{int64(-12), 1234.5678}, ID: "org/Model-1.0_x"},
		{Keys: [cursorKeys]any{int64(1), 1e300}, ID: "acme/100%-real~x"},
		{Keys: [cursorKeys]any{int64(1), 5e-324}, ID: "gpt2"},
	} {
		got, err := parseCursor(c.String())
		if err != nil || got != c {
			t.Errorf("%q read back as %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
	cc := compareCursor{Kind: compare.TrainFixed, Downloads: int64(99), ID: "a/b"}
	if got, err := parseCompareCursor(cc.String()); err != nil || got != cc {
		t.Errorf("%q read back as %+v, %v", cc.String(), got, err)
	}
}

// TestCompareCursorForm: a position in any listed kind is a cursor;
// anything else is ErrBadCursor.
func TestCompareCursorForm(t *testing.T) {
	for _, s := range []string{"fixed~0~", "train_regressed~-5~org/x", "new~1.5~a~b", "still_failing~" + strings.Repeat("9", 30) + "~m"} {
		if _, err := parseCompareCursor(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "still_passing~1~m", "fixed~~m", "fixed~1", "Zml4ZWQ", "fixed~1~a\x00"} {
		if _, err := parseCompareCursor(s); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%q: %v; want ErrBadCursor", s, err)
		}
	}
}
