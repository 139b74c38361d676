package web

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/internal/sweep"
	"github.com/google-pytorch/torchtpu-scanner/internal/webhook"
)

// jsonFields are the JSON object keys encoding/json writes for a struct
// type: tagged names, untagged exported names, and the fields of embedded
// structs; "-" fields are left out.
func jsonFields(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			names = append(names, jsonFields(f.Type)...)
		case tag != "":
			names = append(names, tag)
		default:
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	return names
}

func TestJSONFieldsOfAStruct(t *testing.T) {
	type inner struct {
		A int `json:"a"`
	}
	type outer struct {
		inner
		B      string `json:"b,omitempty"`
		C      int
		Hidden int `json:"-"`
		d      int
	}
	_ = outer{}.d
	if got, want := jsonFields(reflect.TypeFor[outer]()), []string{"C", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("jsonFields = %v; want %v", got, want)
	}
}

// TestOpenAPISchemasMatchTheJSON: every key the API writes for an object is
// a property of its schema in openapi.json, and every documented property
// is one the API writes, so the document can neither lag behind an
// extension nor promise a field that is gone.
func TestOpenAPISchemasMatchTheJSON(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		schema string
		typ    reflect.Type
	}{
		{"Runtime", reflect.TypeFor[compat.Runtime]()},
		{"Metrics", reflect.TypeFor[compat.Metrics]()},
		{"Efficiency", reflect.TypeFor[compat.Efficiency]()},
		{"Result", reflect.TypeFor[compat.Result]()},
		{"Model", reflect.TypeFor[compat.Model]()},
		{"Event", reflect.TypeFor[compat.Event]()},
		{"Readiness", reflect.TypeFor[readiness.Readiness]()},
		{"Hint", reflect.TypeFor[readiness.Hint]()},
		{"ModelList", reflect.TypeFor[modelList]()},
		{"Scan", reflect.TypeFor[scanBody]()},
		{"ScanParams", reflect.TypeFor[scanParams]()},
		{"ScanState", reflect.TypeFor[ScanState]()},
		{"Summary", reflect.TypeFor[summaryBody]()},
		{"Coverage", reflect.TypeFor[coverageBody]()},
		{"Figures", reflect.TypeFor[figures]()},
		{"FailureGroup", reflect.TypeFor[failureGroup]()},
		{"EndpointBadge", reflect.TypeFor[endpointBadge]()},
		{"RuntimeStats", reflect.TypeFor[runtimeJSON]()},
		{"ComparisonItem", reflect.TypeFor[compareItemJSON]()},
		{"Comparison", reflect.TypeFor[compareBody]()},
		{"Worker", reflect.TypeFor[fleet.Worker]()},
		{"WorkerView", reflect.TypeFor[fleet.WorkerView]()},
		{"Job", reflect.TypeFor[fleet.Job]()},
		{"Lease", reflect.TypeFor[fleet.Lease]()},
		{"KnownIssue", reflect.TypeFor[compat.KnownIssue]()},
		{"Evidence", reflect.TypeFor[compat.Evidence]()},
		{"Verdict", reflect.TypeFor[compat.Verdict]()},
		{"ModeMetrics", reflect.TypeFor[compat.ModeMetrics]()},
		{"Serving", reflect.TypeFor[compat.ServingCell]()},
		{"ServingMeasured", reflect.TypeFor[compat.ServingMeasured]()},
		{"PrecisionCheck", reflect.TypeFor[compat.PrecisionCheck]()},
		{"TestRequest", reflect.TypeFor[requestJSON]()},
		{"WebhookPayload", reflect.TypeFor[webhook.Payload]()},
		{"WebhookStatus", reflect.TypeFor[webhook.Status]()},
		{"RefusedDelivery", reflect.TypeFor[webhook.RefusedDelivery]()},
		{"Sweep", reflect.TypeFor[sweepBody]()},
		{"SweepTask", reflect.TypeFor[sweepTaskJSON]()},
		{"SweepGap", reflect.TypeFor[sweep.Gap]()},
		{"SweepSource", reflect.TypeFor[sweep.Source]()},
	} {
		s, ok := doc.Components.Schemas[tc.schema]
		if !ok {
			t.Errorf("openapi.json has no schema %s", tc.schema)
			continue
		}
		fields := jsonFields(tc.typ)
		for _, f := range fields {
			if _, ok := s.Properties[f]; !ok {
				t.Errorf("schema %s lacks %q, which %v writes", tc.schema, f, tc.typ)
			}
		}
		for p := range s.Properties {
			if !slices.Contains(fields, p) {
				t.Errorf("schema %s documents %q, which %v does not write", tc.schema, p, tc.typ)
			}
		}
	}
}
