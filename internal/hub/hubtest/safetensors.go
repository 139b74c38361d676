package hubtest

import (
	"encoding/binary"
	"encoding/json"
	"strings"
)

// safetensors is the Hub's "safetensors" field for the repo:
// {"parameters": {dtype: elements}, "total": their sum}, from Repo.Safetensors
// or, when that is nil, from the headers of the repo's *.safetensors files
// (the Hub parses them the same way); nil when there is none.
func (rp *repo) safetensors() map[string]any {
	params := rp.Safetensors
	if params == nil {
		params = map[string]int64{}
		for name, f := range rp.files {
			if strings.HasSuffix(name, ".safetensors") {
				countTensors(f.data, params)
			}
		}
	}
	if len(params) == 0 {
		return nil
	}
	var total int64
	for _, n := range params {
		total += n
	}
	return map[string]any{"parameters": params, "total": total}
}

// countTensors adds the elements of each tensor in a safetensors file's
// header to counts, by dtype; a file that does not parse adds nothing.
func countTensors(data []byte, counts map[string]int64) {
	if len(data) < 8 {
		return
	}
	n := binary.LittleEndian.Uint64(data[:8])
	if n > uint64(len(data)-8) {
		return
	}
	var header map[string]json.RawMessage
	if json.Unmarshal(data[8:8+n], &header) != nil {
		return
	}
	for name, raw := range header {
		var t struct {
			Dtype string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		}
		if name == "__metadata__" || json.Unmarshal(raw, &t) != nil || t.Dtype == "" {
			continue
		}
		elems := int64(1)
		for _, d := range t.Shape {
			elems *= d
		}
		counts[t.Dtype] += elems
	}
}
