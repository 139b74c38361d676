package config

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func envOf(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		cmd     Command
		args    []string
		env     map[string]string
		check   func(t *testing.T, c Config, rest []string)
		wantErr string
	}{
		{
			name: "defaults", cmd: CmdServe, env: map[string]string{"HOME": "/home/u"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.DB != filepath.Join("data", "scanner.db") || c.HubEndpoint != "https://huggingface.co" ||
					c.Target != compat.TargetAuto || c.Mode != compat.ModeAuto || c.Limit != 100 || c.Sort != "downloads" ||
					c.Timeout != 20*time.Minute || c.Addr != ":8080" || c.Schedule != "0 */6 * * *" ||
					c.CacheDir != "/home/u/.cache/huggingface/hub" {
					t.Errorf("defaults: %+v", c)
				}
			},
		},
		{
			name: "env", cmd: CmdServe,
			env: map[string]string{"SCANNER_DB": "/x.db", "HF_ENDPOINT": "http://mirror:1", "HF_TOKEN": "hf_x",
				"HF_HOME": "/hf", "SCANNER_TARGET": "cpu", "SCANNER_PYTHON": "/py", "SCANNER_ADDR": ":9", "SCANNER_SCHEDULE": "@hourly",
				"SCANNER_ADMIN_TOKEN": "adm", "SCANNER_VLLM_PYTHON": "/vllm/bin/python"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.DB != "/x.db" || c.HubEndpoint != "http://mirror:1" || c.Token != "hf_x" || c.CacheDir != "/hf/hub" ||
					c.Target != compat.TargetCPU || c.Python != "/py" || c.Addr != ":9" || c.Schedule != "@hourly" || c.AdminToken != "adm" ||
					c.VLLMPython != "/vllm/bin/python" {
					t.Errorf("env: %+v", c)
				}
			},
		},
		{
			name: "HF_HUB_CACHE wins over HF_HOME", cmd: CmdScan, env: map[string]string{"HF_HOME": "/hf", "HF_HUB_CACHE": "/cache"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.CacheDir != "/cache" {
					t.Errorf("cache dir %q", c.CacheDir)
				}
			},
		},
		{
			name: "flag wins over env", cmd: CmdScan, args: []string{"--db", "/flag.db", "--target", "tpu", "--task", "a,b", "--task", "c", "--model", "gpt2", "--vllm-python", "/flag/python"},
			env: map[string]string{"SCANNER_DB": "/env.db", "SCANNER_TARGET": "cpu", "SCANNER_VLLM_PYTHON": "/env/python"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.DB != "/flag.db" || c.Target != compat.TargetTPU || strings.Join(c.Tasks, " ") != "a b c" || c.Models[0] != "gpt2" ||
					c.VLLMPython != "/flag/python" {
					t.Errorf("flags: %+v", c)
				}
			},
		},
		{
			name: "positional after flags", cmd: CmdProbe, args: []string{"--json", "gpt2"},
			check: func(t *testing.T, c Config, rest []string) {
				if !c.JSON || len(rest) != 1 || rest[0] != "gpt2" {
					t.Errorf("rest %v json %v", rest, c.JSON)
				}
			},
		},
		{
			name: "cache home: SCANNER_CACHE_HOME", cmd: CmdScan, env: map[string]string{"HOME": "/h", "XDG_CACHE_HOME": "/xdg", "SCANNER_CACHE_HOME": "/sc"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.CacheHome != "/sc" {
					t.Errorf("cache home %q, want /sc", c.CacheHome)
				}
			},
		},
		{
			name: "cache home: XDG_CACHE_HOME", cmd: CmdServe, env: map[string]string{"HOME": "/h", "XDG_CACHE_HOME": "/xdg"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.CacheHome != "/xdg/torchtpu-scanner" {
					t.Errorf("cache home %q, want /xdg/torchtpu-scanner", c.CacheHome)
				}
			},
		},
		{
			name: "cache home: HOME", cmd: CmdProbe, env: map[string]string{"HOME": "/h"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.CacheHome != "/h/.cache/torchtpu-scanner" {
					t.Errorf("cache home %q, want /h/.cache/torchtpu-scanner", c.CacheHome)
				}
			},
		},
		{name: "bad target", cmd: CmdScan, args: []string{"--target", "gpu"}, wantErr: "unknown target"},
		{name: "bad mode", cmd: CmdScan, args: []string{"--mode", "half"}, wantErr: "unknown mode"},
		{name: "bad sort", cmd: CmdScan, args: []string{"--sort", "stars"}, wantErr: "--sort"},
		{name: "bad limit", cmd: CmdScan, args: []string{"--limit", "0"}, wantErr: "--limit"},
		{name: "bad endpoint", cmd: CmdScan, args: []string{"--hub-endpoint", "ftp://x"}, wantErr: "--hub-endpoint"},
		{name: "bad schedule", cmd: CmdServe, args: []string{"--schedule", "every day"}, wantErr: "--schedule"},
		{name: "no schedule skips cron check", cmd: CmdServe, args: []string{"--schedule", "nonsense", "--no-schedule"}},
		{name: "check needs server", cmd: CmdCheck, wantErr: "--server"},
		{
			name: "check gates on tpu by default", cmd: CmdCheck, args: []string{"--server", "http://s"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.Target != compat.TargetTPU {
					t.Errorf("check target %q, want tpu", c.Target)
				}
			},
		},
		{
			name: "check --target auto selects any target", cmd: CmdCheck, args: []string{"--server", "http://s", "--target", "auto"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.Target != "" {
					t.Errorf("check target %q, want \"\" (any)", c.Target)
				}
			},
		},
		{name: "check bad target", cmd: CmdCheck, args: []string{"--server", "http://s", "--target", "gpu"}, wantErr: "unknown target"},
		{name: "bad source", cmd: CmdScan, args: []string{"--source", "s3"}, wantErr: "--source"},
		{
			name: "scan timeout: a generous default, and the flag", cmd: CmdScan, args: []string{"--scan-timeout", "90m"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.ScanTimeout != 90*time.Minute || Defaults().ScanTimeout < 12*time.Hour {
					t.Errorf("scan timeout %s (default %s)", c.ScanTimeout, Defaults().ScanTimeout)
				}
			},
		},
		{name: "bad scan timeout", cmd: CmdServe, args: []string{"--scan-timeout", "0s"}, wantErr: "--scan-timeout"},
		{
			name: "trusted proxies: from the environment", cmd: CmdServe, env: map[string]string{"SCANNER_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"},
			check: func(t *testing.T, c Config, _ []string) {
				if strings.Join(c.TrustedProxies, " ") != "10.0.0.0/8 127.0.0.1" {
					t.Errorf("trusted proxies %q", c.TrustedProxies)
				}
			},
		},
		{
			name: "trusted proxies: none by default", cmd: CmdServe,
			check: func(t *testing.T, c Config, _ []string) {
				if len(c.TrustedProxies) != 0 {
					t.Errorf("trusted proxies %q, want none", c.TrustedProxies)
				}
			},
		},
		{
			name: "trusted proxies: the flag replaces the variable", cmd: CmdServe, args: []string{"--trusted-proxies", "192.168.1.1"},
			env: map[string]string{"SCANNER_TRUSTED_PROXIES": "10.0.0.0/8"},
			check: func(t *testing.T, c Config, _ []string) {
				if strings.Join(c.TrustedProxies, " ") != "192.168.1.1" {
					t.Errorf("trusted proxies %q", c.TrustedProxies)
				}
			},
		},
		{name: "bad trusted proxy", cmd: CmdServe, args: []string{"--trusted-proxies", "10.0.0.0/8,proxy.example"}, wantErr: "--trusted-proxies"},
		{
			name: "IPv6 client prefix: a /64 by default", cmd: CmdServe,
			check: func(t *testing.T, c Config, _ []string) {
				if c.IPv6ClientPrefix != 64 {
					t.Errorf("IPv6 client prefix /%d, want /64", c.IPv6ClientPrefix)
				}
			},
		},
		{
			name: "IPv6 client prefix: from the environment", cmd: CmdServe, env: map[string]string{"SCANNER_IPV6_CLIENT_PREFIX": "/56"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.IPv6ClientPrefix != 56 {
					t.Errorf("IPv6 client prefix /%d, want /56", c.IPv6ClientPrefix)
				}
			},
		},
		{
			name: "IPv6 client prefix: the flag wins", cmd: CmdServe, args: []string{"--ipv6-client-prefix", "128"}, env: map[string]string{"SCANNER_IPV6_CLIENT_PREFIX": "48"},
			check: func(t *testing.T, c Config, _ []string) {
				if c.IPv6ClientPrefix != 128 {
					t.Errorf("IPv6 client prefix /%d, want /128", c.IPv6ClientPrefix)
				}
			},
		},
		{name: "IPv6 client prefix too short", cmd: CmdServe, args: []string{"--ipv6-client-prefix", "16"}, wantErr: "--ipv6-client-prefix 16"},
		{name: "IPv6 client prefix too long", cmd: CmdServe, args: []string{"--ipv6-client-prefix", "129"}, wantErr: "--ipv6-client-prefix 129"},
		{name: "IPv6 client prefix not a number", cmd: CmdServe, env: map[string]string{"SCANNER_IPV6_CLIENT_PREFIX": "sixty-four"}, wantErr: "SCANNER_IPV6_CLIENT_PREFIX"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == nil {
				env = map[string]string{"HOME": "/root"}
			}
			c, rest, err := Parse(tt.cmd, tt.args, envOf(env), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, c, rest)
			}
		})
	}
}

// scanner check --since: the runtime's target, unless --target names one.
func TestParseCheckSince(t *testing.T) {
	for _, tt := range []struct {
		name       string
		args       []string
		wantTarget compat.Target
		wantSince  string
		wantErr    string
	}{
		{"the runtime's target", []string{"--since", "cpu~2.15.0~~5.23.0~1"}, "", "cpu~2.15.0~~5.23.0~1", ""},
		{"--target kept", []string{"--since", "cpu~2.15.0~~5.23.0~1", "--target", "cpu"}, compat.TargetCPU, "cpu~2.15.0~~5.23.0~1", ""},
		{"without --since, tpu", nil, compat.TargetTPU, "", ""},
		{"a malformed key", []string{"--since", "tpu~1"}, "", "", "--since"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse(CmdCheck, append([]string{"--server", "http://x"}, tt.args...), envOf(nil), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || c.Target != tt.wantTarget || c.Since != tt.wantSince {
				t.Errorf("target %q since %q err %v; want %q %q", c.Target, c.Since, err, tt.wantTarget, tt.wantSince)
			}
		})
	}
}

// scanner check --mode: inference by default, train gates on the train verdict.
func TestParseCheckMode(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{nil, CheckInference, ""},
		{[]string{"--mode", "train"}, CheckTrain, ""},
		{[]string{"--mode", "inference"}, CheckInference, ""},
		{[]string{"--mode", "arch"}, "", "--mode"},
		{[]string{"--mode", "train", "--since", "cpu~2.15.0~~5.23.0~1"}, "", "not with --mode train"},
		{[]string{"--mode", "serve"}, CheckServe, ""},
		{[]string{"--mode", "serve", "--since", "cpu~2.15.0~~5.23.0~1"}, "", "not with --mode serve"},
	} {
		c, _, err := Parse(CmdCheck, append([]string{"--server", "http://x"}, tt.args...), envOf(nil), io.Discard)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want one about %s", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || c.CheckMode != tt.want {
			t.Errorf("%v: mode %q err %v, want %q", tt.args, c.CheckMode, err, tt.want)
		}
	}
}

func TestParseLandlock(t *testing.T) {
	cases := []struct {
		args    []string
		env     map[string]string
		off     bool
		wantErr bool
	}{
		{nil, nil, false, false},
		{[]string{"--landlock=false"}, nil, true, false},
		{[]string{"--landlock"}, map[string]string{"SCANNER_LANDLOCK": "false"}, false, false},
		{nil, map[string]string{"SCANNER_LANDLOCK": "0"}, true, false},
		{[]string{"--landlock=maybe"}, nil, false, true},
		{nil, map[string]string{"SCANNER_LANDLOCK": "off"}, false, true},
	}
	for _, c := range cases {
		cfg, _, err := Parse(CmdProbe, append(c.args, "org/model"), envOf(c.env), io.Discard)
		if (err != nil) != c.wantErr {
			t.Errorf("%v %v: err %v, want error %v", c.args, c.env, err, c.wantErr)
			continue
		}
		if err == nil && cfg.NoLandlock != c.off {
			t.Errorf("%v %v: NoLandlock %v, want %v", c.args, c.env, cfg.NoLandlock, c.off)
		}
	}
}
