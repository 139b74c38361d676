// Package wrk runs the wrk HTTP load generator and reads the figures of its
// --latency report. The benchmark programs (cmd/benchload, cmd/benchscale)
// share it, so that both read wrk's output one way.
package wrk

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Load is one wrk run's load: its threads, connections and duration, and
// optionally a request header and a Lua script.
type Load struct {
	Threads, Conns int
	Duration       time.Duration
	// Header is a request header sent with every request ("" none), as
	// "Name: value".
	Header string
	// Script is a Lua script's path ("" none).
	Script string
}

// Result is one wrk run's figures.
type Result struct {
	RPS      float64
	P50, P99 time.Duration
	// Errors lists the failed requests ("3 non-2xx", wrk's "Socket errors:"
	// line), "" when there were none.
	Errors string
}

// Args is wrk's command line for url under l.
func Args(url string, l Load) []string {
	args := []string{"-t", strconv.Itoa(l.Threads), "-c", strconv.Itoa(l.Conns), "-d", l.Duration.String(), "--latency"}
	if l.Header != "" {
		args = append(args, "-H", l.Header)
	}
	if l.Script != "" {
		args = append(args, "-s", l.Script)
	}
	return append(args, url)
}

// Run runs bin (wrk) on url under l and reads its report; an error carries
// wrk's output.
func Run(bin, url string, l Load) (Result, error) {
	out, err := exec.Command(bin, Args(url, l)...).CombinedOutput()
	if err != nil {
		return Result{}, fmt.Errorf("wrk %s: %w\n%s", url, err, out)
	}
	r, err := Parse(out)
	if err != nil {
		return r, fmt.Errorf("wrk %s: %w\n%s", url, err, out)
	}
	return r, nil
}

var (
	rpsRE    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	pctRE    = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	non2xxRE = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	socketRE = regexp.MustCompile(`Socket errors: .*`)
	units    = map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}
)

// Parse reads requests per second, the 50th and 99th percentiles and the
// failed requests from wrk --latency output.
func Parse(out []byte) (Result, error) {
	var r Result
	m := rpsRE.FindSubmatch(out)
	if m == nil {
		return r, errors.New("no Requests/sec in wrk output")
	}
	r.RPS, _ = strconv.ParseFloat(string(m[1]), 64)
	for _, p := range pctRE.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(p[2]), 64)
		d := time.Duration(v * float64(units[string(p[3])]))
		if string(p[1]) == "50" {
			r.P50 = d
		} else {
			r.P99 = d
		}
	}
	if r.P50 == 0 || r.P99 == 0 {
		return r, errors.New("no latency percentiles in wrk output")
	}
	var errs []string
	if m := non2xxRE.FindSubmatch(out); m != nil {
		errs = append(errs, string(m[1])+" non-2xx")
	}
	if m := socketRE.Find(out); m != nil {
		errs = append(errs, string(m))
	}
	r.Errors = strings.Join(errs, "; ")
	return r, nil
}

// Dur writes a latency as the benchmarks' reports show it: whole
// microseconds below a millisecond, milliseconds with two decimals below a
// second, seconds with two decimals above.
func Dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
