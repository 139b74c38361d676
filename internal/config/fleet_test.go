package config

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestParseFleet(t *testing.T) {
	worker := map[string]string{"HOME": "/h", "SCANNER_WORKER_TOKEN": "wt", "SCANNER_SERVER": "http://scanner:8080"}
	tests := []struct {
		name    string
		cmd     Command
		args    []string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "serve dispatches locally by default", cmd: CmdServe, env: map[string]string{"HOME": "/h"},
			check: func(t *testing.T, c Config) {
				if c.Dispatch != DispatchLocal || c.LeaseTTL != 2*time.Minute || c.WorkerToken != "" || c.WorkerWait != 10*time.Minute {
					t.Errorf("%+v", c)
				}
			}},
		{name: "serve for workers", cmd: CmdServe, args: []string{"--dispatch", "workers", "--lease-ttl", "30s", "--worker-wait", "3m"},
			env: map[string]string{"HOME": "/h", "SCANNER_WORKER_TOKEN": " wt "},
			check: func(t *testing.T, c Config) {
				if c.Dispatch != DispatchWorkers || c.LeaseTTL != 30*time.Second || c.WorkerToken != "wt" || c.WorkerWait != 3*time.Minute {
					t.Errorf("%+v", c)
				}
			}},
		{name: "dispatch from the environment", cmd: CmdServe, env: map[string]string{"HOME": "/h", "SCANNER_DISPATCH": "workers", "SCANNER_WORKER_TOKEN": "x"},
			check: func(t *testing.T, c Config) {
				if c.Dispatch != DispatchWorkers {
					t.Errorf("%+v", c)
				}
			}},
		{name: "workers without their token", cmd: CmdServe, args: []string{"--dispatch", "workers"}, wantErr: "SCANNER_WORKER_TOKEN"},
		{name: "unknown dispatch", cmd: CmdServe, args: []string{"--dispatch", "cloud"}, wantErr: "--dispatch"},
		{name: "lease ttl too short", cmd: CmdServe, args: []string{"--lease-ttl", "1s"}, wantErr: "--lease-ttl"},
		{name: "no worker wait", cmd: CmdServe, args: []string{"--worker-wait", "0s"}, wantErr: "--worker-wait"},
		{name: "worker", cmd: CmdWorker, env: worker,
			args: []string{"--devices", "8", "--target", "tpu", "--timeout", "5m", "--probe-grace", "30s", "--cache-dir", "/c", "--addr", ":8081", "--python", "/py"},
			check: func(t *testing.T, c Config) {
				if c.Server != "http://scanner:8080" || c.WorkerToken != "wt" || c.Devices != 8 || c.Target != compat.TargetTPU ||
					c.Timeout != 5*time.Minute || c.ProbeGrace != 30*time.Second || c.CacheDir != "/c" || c.Addr != ":8081" || c.Python != "/py" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "a worker listens only when asked", cmd: CmdWorker, env: map[string]string{"HOME": "/h", "SCANNER_WORKER_TOKEN": "wt",
			"SCANNER_SERVER": "http://s", "SCANNER_ADDR": ":8080"},
			check: func(t *testing.T, c Config) {
				if c.Addr != "" {
					t.Errorf("addr %q", c.Addr)
				}
			}},
		{name: "worker --server wins", cmd: CmdWorker, env: worker, args: []string{"--server", "https://other"},
			check: func(t *testing.T, c Config) {
				if c.Server != "https://other" {
					t.Errorf("%+v", c)
				}
			}},
		{name: "worker without a server", cmd: CmdWorker, env: map[string]string{"HOME": "/h", "SCANNER_WORKER_TOKEN": "wt"}, wantErr: "--server"},
		{name: "worker with a bad server", cmd: CmdWorker, env: worker, args: []string{"--server", "scanner:8080"}, wantErr: "--server"},
		{name: "worker without a token", cmd: CmdWorker, env: map[string]string{"HOME": "/h", "SCANNER_SERVER": "http://s"}, wantErr: "SCANNER_WORKER_TOKEN"},
		{name: "worker devices", cmd: CmdWorker, env: worker, args: []string{"--devices", "0"}, wantErr: "--devices"},
		{name: "worker mode is the server's", cmd: CmdWorker, env: worker, args: []string{"--mode", "full"}, wantErr: "--mode"},
		{name: "worker has no scan flags", cmd: CmdWorker, env: worker, args: []string{"--limit", "5"}, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse(tt.cmd, tt.args, envOf(tt.env), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}
