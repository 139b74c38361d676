package compat

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestRuntimeKey(t *testing.T) {
	for _, c := range []struct {
		name string
		ref  RuntimeRef
		want string
	}{
		{"tpu", RuntimeRef{TargetTPU, "2.15.0", "0.2.0", "5.23.0", "1.4.0"}, "tpu~2.15.0~0.2.0~5.23.0~1.4.0"},
		{"cpu without torch_tpu", RuntimeRef{TargetCPU, "2.15.0", "", "5.23.0", "1.4.0"}, "cpu~2.15.0~~5.23.0~1.4.0"},
		{"local version", RuntimeRef{TargetCPU, "2.15.0+cpu", "", "5.23.0.dev0", "1.4.0"}, "cpu~2.15.0_2Bcpu~~5.23.0.dev0~1.4.0"},
		{"separator and escape in a version", RuntimeRef{TargetCUDA, "a~b", "c_d", "", ""}, "cuda~a_7Eb~c_5Fd~~"},
		{"all empty", RuntimeRef{Target: TargetTPU}, "tpu~~~~"},
		// Both ends of each plain range stand as they are; the bytes next to
		// them are escaped: '`' 0x60, '{' 0x7B, '@' 0x40, '[' 0x5B, '/' 0x2F, ':' 0x3A.
		{"the ends of the plain ranges", RuntimeRef{TargetTPU, "azAZ09", "`{@[/:", "z", "Z9"},
			"tpu~azAZ09~_60_7B_40_5B_2F_3A~z~Z9"},
		{"spaces, slashes, quotes, unicode", RuntimeRef{TargetTPU, `1 "x"/y`, "é", "", "<b>"},
			"tpu~1_20_22x_22_2Fy~_C3_A9~~_3Cb_3E"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.ref.Key()
			if got != c.want {
				t.Fatalf("Key() = %q, want %q", got, c.want)
			}
			if esc := url.QueryEscape(got); esc != got {
				t.Errorf("key %q is not URL-safe: query-escaped it is %q", got, esc)
			}
			if esc := url.PathEscape(got); esc != got {
				t.Errorf("key %q is not URL-safe: path-escaped it is %q", got, esc)
			}
			back, err := ParseRuntimeKey(got)
			if err != nil {
				t.Fatalf("ParseRuntimeKey(%q): %v", got, err)
			}
			if back != c.ref {
				t.Errorf("ParseRuntimeKey(%q) = %+v, want %+v", got, back, c.ref)
			}
		})
	}
}

func TestParseRuntimeKeyRejects(t *testing.T) {
	for _, key := range []string{
		"",
		"tpu~2.15.0~0.2.0~5.23.0",            // four fields
		"tpu~2.15.0~0.2.0~5.23.0~1.4~x",      // six
		"auto~2.15.0~0.2.0~5.23.0~1.4.0",     // not a concrete target
		"TPU~2.15.0~0.2.0~5.23.0~1.4.0",      // targets are lower case
		"tpu~2.15.0+cpu~~5.23.0~1.4.0",       // "+" must be escaped
		"tpu~2.15.0_2bcpu~~5.23.0~1.4.0",     // lower-case hex: not canonical
		"tpu~2.15.0_2~~5.23.0~1.4.0",         // cut-off escape
		"tpu~2.15.0_~~5.23.0~1.4.0",          // cut-off escape
		"tpu~2.15.0_ZZ~~5.23.0~1.4.0",        // not hex
		"tpu~2_2E15~~5.23.0~1.4.0",           // an escaped "." is not canonical
		"tpu~2.15.0 ~~5.23.0~1.4.0",          // a space
		"tpu~<script>~~5.23.0~1.4.0",         // markup
		strings.Repeat("a", MaxRuntimeKey+1), // too long
	} {
		if r, err := ParseRuntimeKey(key); err == nil {
			t.Errorf("ParseRuntimeKey(%q) = %+v, want an error", key, r)
		} else if !errors.Is(err, ErrRuntimeKey) {
			t.Errorf("ParseRuntimeKey(%q): %v does not wrap ErrRuntimeKey", key, err)
		}
	}
}

// The key names exactly what decides a retest, plus the target: two
// runtimes share a key when, and only when, their targets and Runtime.RetestKey
// are equal. Fields that do not decide a retest (python, device) do not
// change it.
func TestRuntimeKeyFollowsRetestKey(t *testing.T) {
	base := Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1.4.0",
		Device: "TPU v6e", DeviceCount: 4}
	variants := map[string]func(r *Runtime){
		"python":       func(r *Runtime) { r.Python = "3.12.1" },
		"device":       func(r *Runtime) { r.Device = "TPU v5e" },
		"device_count": func(r *Runtime) { r.DeviceCount = 1 },
		"libtpu":       func(r *Runtime) { r.LibTPU = "0.0.9" },
		"torch":        func(r *Runtime) { r.Torch = "2.16.0" },
		"torch_tpu":    func(r *Runtime) { r.TorchTPU = "0.3.0" },
		"transformers": func(r *Runtime) { r.Transformers = "5.24.0" },
		"harness":      func(r *Runtime) { r.Harness = "1.5.0" },
	}
	matched := 0
	for name, change := range variants {
		other := base
		change(&other)
		sameRetest := other.RetestKey() == base.RetestKey()
		sameRef := other.Ref(TargetTPU).Key() == base.Ref(TargetTPU).Key()
		if sameRetest != sameRef {
			t.Errorf("%s: Runtime.RetestKey equal %v, runtime key equal %v", name, sameRetest, sameRef)
		}
		if other.Ref(TargetTPU).RetestKey() != other.RetestKey() {
			t.Errorf("%s: RetestKey %q, Runtime.RetestKey %q", name, other.Ref(TargetTPU).RetestKey(), other.RetestKey())
		}
		matched++
	}
	if matched != len(variants) {
		t.Fatalf("checked %d variants of %d", matched, len(variants))
	}
	if base.Ref(TargetTPU).Key() == base.Ref(TargetCPU).Key() {
		t.Error("the target must be part of the key")
	}
	if got, want := base.Ref(TargetTPU).Key(), "tpu~2.15.0~0.2.0~5.23.0~1.4.0"; got != want {
		t.Errorf("Ref(tpu).Key() = %q, want %q", got, want)
	}
}

func FuzzRuntimeKey(f *testing.F) {
	f.Add("tpu", "2.15.0", "0.2.0", "5.23.0", "1.4.0")
	f.Add("cpu", "2.15.0+cpu", "", "~_", "<x>")
	f.Fuzz(func(t *testing.T, target, torch, tt, tf, h string) {
		r := RuntimeRef{Target(target), torch, tt, tf, h}
		key := r.Key()
		for i := 0; i < len(key); i++ {
			if !keyPlain(key[i]) && key[i] != keySep && key[i] != keyEscape {
				t.Fatalf("key %q has byte %q", key, key[i])
			}
		}
		back, err := ParseRuntimeKey(key)
		switch {
		case r.Target != TargetTPU && r.Target != TargetCPU && r.Target != TargetCUDA:
			if err == nil {
				t.Fatalf("target %q accepted", target)
			}
		case len(key) > MaxRuntimeKey:
			if err == nil {
				t.Fatalf("a %d-byte key accepted", len(key))
			}
		case err != nil:
			t.Fatalf("ParseRuntimeKey(%q): %v", key, err)
		case back != r:
			t.Fatalf("round trip: %+v, want %+v", back, r)
		}
	})
}

// TestRuntimeKeyPattern: the documented form matches a key exactly when
// ParseRuntimeKey accepts it: every escape of a byte that is not plain,
// none of a plain one, and the keys Key writes.
func TestRuntimeKeyPattern(t *testing.T) {
	re := regexp.MustCompile(RuntimeKeyPattern)
	for c := 0; c < 256; c++ {
		key := fmt.Sprintf("tpu~_%02X~~~", c)
		_, err := ParseRuntimeKey(key)
		if got := re.MatchString(key); got != (err == nil) {
			t.Errorf("%s: pattern %v, ParseRuntimeKey %v", key, got, err)
		}
		lower := fmt.Sprintf("cpu~_%02x~~~", c)
		_, err = ParseRuntimeKey(lower)
		if got := re.MatchString(lower); got != (err == nil) {
			t.Errorf("%s: pattern %v, ParseRuntimeKey %v", lower, got, err)
		}
	}
	for _, r := range []RuntimeRef{{Target: TargetTPU, Torch: "2.15.0+cpu", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "h ~é|"},
		{Target: TargetCUDA}} {
		if !re.MatchString(r.Key()) {
			t.Errorf("%s does not match %s", r.Key(), RuntimeKeyPattern)
		}
	}
	for _, k := range []string{"auto~~~~", "tpu~~~", "tpu~~~~~", "tpu~_~~~", "tpu~_4~~~", "tpu~a_~~~", "tpu~a b~~~"} {
		if re.MatchString(k) {
			t.Errorf("%q matches", k)
		}
	}
}
