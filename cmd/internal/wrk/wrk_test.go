package wrk

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Recorded in wrk 4's format (wrk.c's print_stats_latency and summary):
// a clean run of one client, microseconds.
const clean = `Running 3s test @ http://127.0.0.1:41234/
  1 threads and 1 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   126.53us   45.21us   2.10ms   95.12%
    Req/Sec     7.71k   412.33     8.20k    80.00%
  Latency Distribution
     50%  116.00us
     75%  128.00us
     90%  151.00us
     99%  285.00us
  23045 requests in 3.00s, 2.88MB read
Requests/sec:   7681.51
Transfer/sec:      0.96MB
`

// A loaded run with failures: milliseconds and seconds, socket errors and
// non-2xx answers (wrk prints them before Requests/sec).
const failing = `Running 3s test @ http://127.0.0.1:41234/export.csv
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    48.20ms  210.11ms   1.99s    97.30%
    Req/Sec   210.50     40.12   300.00     70.00%
  Latency Distribution
     50%   12.50ms
     75%   20.10ms
     90%   41.00ms
     99%    1.20s 
  1263 requests in 3.00s, 80.21MB read
  Socket errors: connect 0, read 3, write 0, timeout 2
  Non-2xx or 3xx responses: 17
Requests/sec:    420.93
Transfer/sec:     26.70MB
`

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, out string
		want      Result
	}{
		{"clean", clean, Result{RPS: 7681.51, P50: 116 * time.Microsecond, P99: 285 * time.Microsecond}},
		{"failing", failing, Result{RPS: 420.93, P50: 12500 * time.Microsecond, P99: 1200 * time.Millisecond,
			Errors: "17 non-2xx; Socket errors: connect 0, read 3, write 0, timeout 2"}},
		{"non-2xx only", strings.Replace(failing, "  Socket errors: connect 0, read 3, write 0, timeout 2\n", "", 1),
			Result{RPS: 420.93, P50: 12500 * time.Microsecond, P99: 1200 * time.Millisecond, Errors: "17 non-2xx"}},
		{"socket errors only", strings.Replace(failing, "  Non-2xx or 3xx responses: 17\n", "", 1),
			Result{RPS: 420.93, P50: 12500 * time.Microsecond, P99: 1200 * time.Millisecond,
				Errors: "Socket errors: connect 0, read 3, write 0, timeout 2"}},
	} {
		got, err := Parse([]byte(tt.out))
		if err != nil || got != tt.want {
			t.Errorf("%s: Parse = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct{ name, out, err string }{
		{"no Requests/sec", strings.Replace(clean, "Requests/sec:   7681.51\n", "", 1), "no Requests/sec"},
		// Without --latency wrk prints no distribution.
		{"no distribution", strings.Replace(clean, "     50%  116.00us\n     75%  128.00us\n     90%  151.00us\n     99%  285.00us\n", "", 1), "no latency percentiles"},
		{"no 99%", strings.Replace(clean, "     99%  285.00us\n", "", 1), "no latency percentiles"},
		{"no 50%", strings.Replace(clean, "     50%  116.00us\n", "", 1), "no latency percentiles"},
		{"nothing", "", "no Requests/sec"},
	} {
		if _, err := Parse([]byte(tt.out)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestArgs(t *testing.T) {
	for _, tt := range []struct {
		l    Load
		want []string
	}{
		{Load{Threads: 1, Conns: 1, Duration: 3 * time.Second},
			[]string{"-t", "1", "-c", "1", "-d", "3s", "--latency", "http://h/"}},
		{Load{Threads: 2, Conns: 16, Duration: 1500 * time.Millisecond, Header: "Accept-Encoding: gzip"},
			[]string{"-t", "2", "-c", "16", "-d", "1.5s", "--latency", "-H", "Accept-Encoding: gzip", "http://h/"}},
		{Load{Threads: 2, Conns: 32, Duration: 5 * time.Second, Script: "/tmp/b.lua"},
			[]string{"-t", "2", "-c", "32", "-d", "5s", "--latency", "-s", "/tmp/b.lua", "http://h/"}},
	} {
		if got := Args("http://h/", tt.l); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Args(%+v) = %q, want %q", tt.l, got, tt.want)
		}
	}
}

// fakeWrk writes a stand-in for wrk that records its arguments, prints out
// and exits with rc.
func fakeWrk(t *testing.T, out string, rc int) (bin, args string) {
	t.Helper()
	dir := t.TempDir()
	bin, args = filepath.Join(dir, "wrk"), filepath.Join(dir, "args")
	if err := os.WriteFile(filepath.Join(dir, "out"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$@\" >" + args + "\ncat " + filepath.Join(dir, "out") + "\nexit " + string(rune('0'+rc)) + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, args
}

func TestRun(t *testing.T) {
	bin, args := fakeWrk(t, failing, 0)
	r, err := Run(bin, "http://h/x", Load{Threads: 2, Conns: 16, Duration: time.Second, Header: "A: b"})
	if err != nil || r.RPS != 420.93 || r.P99 != 1200*time.Millisecond || r.Errors == "" {
		t.Fatalf("Run = %+v, %v", r, err)
	}
	if b, _ := os.ReadFile(args); string(b) != "-t 2 -c 16 -d 1s --latency -H A: b http://h/x\n" {
		t.Errorf("wrk ran with %q", b)
	}
	// wrk failing (a refused connection): the error carries its output.
	bin, _ = fakeWrk(t, "unable to connect to 127.0.0.1:1 Connection refused\n", 1)
	if _, err := Run(bin, "http://127.0.0.1:1/", Load{Threads: 1, Conns: 1, Duration: time.Second}); err == nil ||
		!strings.Contains(err.Error(), "Connection refused") || !strings.Contains(err.Error(), "wrk http://127.0.0.1:1/") {
		t.Errorf("a failing wrk: %v", err)
	}
	// An output without figures: the error says so and carries it.
	bin, _ = fakeWrk(t, "wrk 4.2.0 [epoll]\nUsage: wrk <options> <url>\n", 0)
	if _, err := Run(bin, "http://h/", Load{Threads: 1, Conns: 1, Duration: time.Second}); err == nil ||
		!strings.Contains(err.Error(), "no Requests/sec") || !strings.Contains(err.Error(), "Usage: wrk") {
		t.Errorf("an output without figures: %v", err)
	}
}

func TestDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0µs", 116 * time.Microsecond: "116µs", time.Millisecond - time.Microsecond: "999µs",
		time.Millisecond: "1.00ms", 12345 * time.Microsecond: "12.35ms", time.Second - time.Millisecond: "999.00ms",
		time.Second: "1.00s", 2500 * time.Millisecond: "2.50s",
	} {
		if got := Dur(d); got != want {
			t.Errorf("Dur(%v) = %q, want %q", d, got, want)
		}
	}
}
