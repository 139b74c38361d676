package hub

import (
	"strings"
	"testing"
)

// TestValidateFilenameEdges: names up to 1024 bytes, with spaces and any
// printable character, are repo paths; control characters are not.
func TestValidateFilenameEdges(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{strings.Repeat("a", 1019) + ".json", true},
		{strings.Repeat("a", 1020) + ".json", false},
		{"my config.json", true},
		{"sub dir/config ~!@#$%^&()_+=[]{}'.json", true},
		{"config\x1f.json", false},
		{"config\x7f.json", false},
		{"config\x00.json", false},
		{"日本語/config.json", true},
	} {
		if err := validateFilename(tt.name); (err == nil) != tt.ok {
			t.Errorf("validateFilename(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}
