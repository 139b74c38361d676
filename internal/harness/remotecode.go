package harness

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
)

// RemoteCodeTable is remote_code.json: which models need code from their
// own repository (trust_remote_code, which the scanner never enables). The
// scanner's preflight and the harness (harness_tasks.py needs_remote_code)
// read the same file, so they cannot disagree; its "about" says why the
// rule holds whatever the model_type.
type RemoteCodeTable struct {
	Tags       []string            `json:"tags"`        // Hub tags that say so
	ConfigKeys []string            `json:"config_keys"` // config.json keys that say so, when not null
	Examples   []RemoteCodeExample `json:"examples"`
}

// RemoteCodeExample is a worked case: Why(Tags, Config) = Remote.
type RemoteCodeExample struct {
	Tags   []string       `json:"tags"`
	Config map[string]any `json:"config"`
	Remote string         `json:"remote"` // "" when the model needs no remote code
}

//go:embed remote_code.json
var remoteCodeJSON []byte

// RemoteCode is the embedded table; one that does not parse fails
// TestRemoteCodeTable and panics at start-up.
var RemoteCode = must(parseRemoteCode(remoteCodeJSON))

func parseRemoteCode(data []byte) (RemoteCodeTable, error) {
	var t RemoteCodeTable
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("harness: remote_code.json: %w", err)
	}
	if len(t.Tags) == 0 || len(t.ConfigKeys) == 0 {
		return t, fmt.Errorf("harness: remote_code.json: no tags or no config_keys")
	}
	return t, nil
}

// Tag is the tag of the table among a model's Hub tags, or "".
func (t RemoteCodeTable) Tag(tags []string) string {
	for _, tag := range t.Tags {
		if slices.Contains(tags, tag) {
			return tag
		}
	}
	return ""
}

// ConfigKey is the key of the table that config.json has (not null), or "".
func (t RemoteCodeTable) ConfigKey(config map[string]any) string {
	for _, k := range t.ConfigKeys {
		if v, ok := config[k]; ok && v != nil {
			return k
		}
	}
	return ""
}

// Why says why a model needs remote code, "" when it does not: "tagged
// custom_code", or "config.json has auto_map" (the harness's words too).
func (t RemoteCodeTable) Why(tags []string, config map[string]any) string {
	if tag := t.Tag(tags); tag != "" {
		return "tagged " + tag
	}
	if k := t.ConfigKey(config); k != "" {
		return "config.json has " + k
	}
	return ""
}
