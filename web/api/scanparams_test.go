package api

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/scan"
)

func TestParseScanParams(t *testing.T) {
	full := `{"trigger":"schedule","source":"cache","limit":25,"sort":"likes","tasks":["fill-mask"],"models":["gpt2"],` +
		`"target":"tpu","mode":"arch","timeout_s":90,"scan_timeout_s":86400,"force":true,"devices":4,"memory_budget_bytes":8000000000,"device_memory_bytes":50331648}`
	tests := []struct {
		name string
		raw  string
		want string // the rendered JSON; "null" for none
	}{
		{"none recorded", "", "null"},
		{"not JSON", "limit=5", "null"},
		{"JSON null", "null", "null"},
		{"not an object", `[1,2]`, "null"},
		{"truncated", `{"Trigger":"cli"`, "null"},
		{"Go field names, as scans record them",
			`{"Trigger":"cli","Source":"hub","Limit":100,"Sort":"downloads","Tasks":null,"Models":null,"Target":"auto",` +
				`"Mode":"auto","Timeout":1200000000000,"Force":false,"Devices":1,"MemoryBudgetBytes":0,"DeviceMemory":0}`,
			`{"trigger":"cli","source":"hub","limit":100,"sort":"downloads","tasks":[],"models":[],"target":"auto",` +
				`"mode":"auto","timeout_s":1200,"scan_timeout_s":null,"force":false,"devices":1,"memory_budget_bytes":null,"device_memory_bytes":null}`},
		{"Go field names, every option set",
			`{"Trigger":"schedule","Source":"cache","Limit":25,"Sort":"likes","Tasks":["fill-mask"],"Models":["gpt2"],` +
				`"Target":"tpu","Mode":"arch","Timeout":90000000000,"Force":true,"Devices":4,"MemoryBudgetBytes":8000000000,` +
				`"ScanTimeout":86400000000000,"DeviceMemory":50331648}`,
			full},
		{"an older scan without the newer options",
			`{"Trigger":"startup","Source":"hub","Limit":10,"Sort":"downloads","Target":"cpu","Mode":"full","Timeout":1500000000,"Force":false}`,
			`{"trigger":"startup","source":"hub","limit":10,"sort":"downloads","tasks":[],"models":[],"target":"cpu",` +
				`"mode":"full","timeout_s":1.5,"scan_timeout_s":null,"force":false,"devices":0,"memory_budget_bytes":null,"device_memory_bytes":null}`},
		{"a scan timeout of 0 is none",
			`{"Trigger":"cli","Source":"hub","Limit":1,"Sort":"downloads","Target":"auto","Mode":"auto","Timeout":0,"Force":false,"ScanTimeout":0}`,
			`{"trigger":"cli","source":"hub","limit":1,"sort":"downloads","tasks":[],"models":[],"target":"auto",` +
				`"mode":"auto","timeout_s":0,"scan_timeout_s":null,"force":false,"devices":0,"memory_budget_bytes":null,"device_memory_bytes":null}`},
		{"the API's own form", full, full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(parseScanParams(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("parseScanParams(%s)\n got %s\nwant %s", tt.raw, b, tt.want)
			}
		})
	}
}

// TestScanParamsFollowOptions records params as a scan does (the JSON of
// scan.Options) with every option set, and checks each shows in the API
// under its name here: a new or renamed option fails until it has one.
func TestScanParamsFollowOptions(t *testing.T) {
	apiName := map[string]string{
		"Trigger": "trigger", "Source": "source", "Limit": "limit", "Sort": "sort", "Tasks": "tasks",
		"Models": "models", "Target": "target", "Mode": "mode", "Timeout": "timeout_s", "Force": "force",
		"Devices": "devices", "MemoryBudgetBytes": "memory_budget_bytes", "ScanTimeout": "scan_timeout_s",
		"DeviceMemory": "device_memory_bytes",
	}
	var opts scan.Options
	v := reflect.ValueOf(&opts).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if v.Type().Field(i).Tag.Get("json") == "-" {
			continue // never recorded (Yield: a func the scan asks, not a parameter)
		}
		switch {
		case f.Type() == reflect.TypeOf(time.Duration(0)):
			f.SetInt(int64(7 * time.Second))
		case f.Type() == reflect.TypeOf(compat.Target("")):
			f.SetString(string(compat.TargetCPU))
		case f.Type() == reflect.TypeOf(compat.Mode("")):
			f.SetString(string(compat.ModeArch))
		case f.Kind() == reflect.String:
			f.SetString("x-" + v.Type().Field(i).Name)
		case f.Kind() == reflect.Int, f.Kind() == reflect.Int64:
			f.SetInt(int64(3 + i))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Type() == reflect.TypeOf([]string(nil)):
			f.Set(reflect.ValueOf([]string{"y-" + v.Type().Field(i).Name}))
		default:
			t.Fatalf("scan.Options.%s: a %s; teach this test (and scanParams) about it", v.Type().Field(i).Name, f.Type())
		}
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := json.Marshal(parseScanParams(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(rendered, &got); err != nil {
		t.Fatal(err)
	}
	matched := 0
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if v.Type().Field(i).Tag.Get("json") == "-" {
			continue
		}
		key, ok := apiName[name]
		if !ok {
			t.Errorf("scan.Options.%s is not shown in the API's params: add it to scanParams and to this test", name)
			continue
		}
		want := v.Field(i).Interface()
		switch w := want.(type) {
		case time.Duration:
			want = w.Seconds()
		case []string:
			want = []any{w[0]}
		case int, int64:
			want = float64(reflect.ValueOf(w).Int())
		case compat.Target:
			want = string(w)
		case compat.Mode:
			want = string(w)
		}
		if !reflect.DeepEqual(got[key], want) {
			t.Errorf("scan.Options.%s = %v shows as %s = %#v; want %#v", name, v.Field(i).Interface(), key, got[key], want)
		}
		matched++
	}
	if matched == 0 {
		t.Fatal("no option compared")
	}
	if len(got) != len(apiName) {
		t.Errorf("params has %d keys; want %d: %s", len(got), len(apiName), rendered)
	}
}
