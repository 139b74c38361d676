package store

import "testing"

// FuzzStringsJSONIsJSONText: stringsJSON writes what encoding/json does,
// byte for byte, whatever the strings (the stored tags are compared as
// text).
func FuzzStringsJSONIsJSONText(f *testing.F) {
	for _, s := range []string{"", "text-generation", "a\"b", `back\slash`, "<html>&", "tab\there", "é", "\xff", "\u2028", "\x7f", "~ !"} {
		f.Add(s, "second")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, ss := range [][]string{nil, {}, {a}, {a, b}, {b, a, a}} {
			want, err := jsonText(ss)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := stringsJSON(ss); err != nil || got != want {
				t.Errorf("stringsJSON(%q) = %q, %v; want %q", ss, got, err, want)
			}
		}
	})
}
