package harness

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// oomTablePath is the out-of-memory table shared with the harness
// (harness_failures.py reads the same file): the single place that decides
// which error texts mean out of memory.
const oomTablePath = "oom_markers.json"

// oomTable is the shape of oom_markers.json.
type oomTable struct {
	Markers []struct {
		Pattern string `json:"pattern"`
		Source  string `json:"source"`
	} `json:"markers"`
	Examples struct {
		OOM    []string `json:"oom"`
		NotOOM []string `json:"not_oom"`
	} `json:"examples"`
}

// parseOOMTable reads an oom_markers.json and compiles its patterns, in
// table order.
func parseOOMTable(data []byte) (oomTable, []*regexp.Regexp, error) {
	var t oomTable
	if err := json.Unmarshal(data, &t); err != nil {
		return t, nil, fmt.Errorf("oom table: %w", err)
	}
	if len(t.Markers) == 0 {
		return t, nil, fmt.Errorf("oom table: no markers")
	}
	res := make([]*regexp.Regexp, 0, len(t.Markers))
	for _, m := range t.Markers {
		re, err := regexp.Compile(m.Pattern)
		if err != nil {
			return t, nil, fmt.Errorf("oom table: %w", err)
		}
		res = append(res, re)
	}
	return t, res, nil
}

// oomMarkers are what an allocation failure leaves on stderr, from the
// embedded table (a broken table fails every test of the package).
var oomMarkers = func() []*regexp.Regexp {
	data, err := files.ReadFile(oomTablePath)
	if err != nil {
		panic(err)
	}
	_, res, err := parseOOMTable(data)
	if err != nil {
		panic(err)
	}
	return res
}()

// OOMMarker returns the allocation-failure marker in the end of a stderr
// tail (its last 8 KiB: an old warning further up does not count), or "".
// The first pattern of the table that matches names it. The runner calls a
// harness that died without a result out of memory by it.
func OOMMarker(tail []byte) string {
	end := tail[max(0, len(tail)-8<<10):]
	for _, re := range oomMarkers {
		if m := re.Find(end); m != nil {
			return string(m)
		}
	}
	return ""
}
