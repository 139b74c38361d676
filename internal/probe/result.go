package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

// MaxResultBytes caps the result file the harness writes.
const MaxResultBytes = 1 << 20

// wireResult is a Result as the harness writes it. tested_at is the
// runner's to fill, so whatever the harness put there ("", a local time)
// is ignored rather than failing the parse.
type wireResult struct {
	compat.Result
	TestedAt json.RawMessage `json:"tested_at"`
}

// readResult reads and parses the harness's result file. A missing file
// gives an error wrapping os.ErrNotExist.
func readResult(path string) (compat.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return compat.Result{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxResultBytes+1))
	if err != nil {
		return compat.Result{}, fmt.Errorf("read: %w", err)
	}
	if len(data) > MaxResultBytes {
		return compat.Result{}, fmt.Errorf("result file is larger than %d bytes", MaxResultBytes)
	}
	var w wireResult
	if err := json.Unmarshal(nanToNull(data), &w); err != nil {
		return compat.Result{}, fmt.Errorf("parse: %w", err)
	}
	res := w.Result
	res.TestedAt = time.Time{}
	res.ScanID = nil
	return res, nil
}

// nanToNull replaces the bare NaN, Infinity and -Infinity tokens that
// Python's json module writes by default with null, so one unmeasurable
// metric does not void a whole result. Strings are left alone.
func nanToNull(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	out := make([]byte, 0, len(data))
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out = append(out, "null"...)
			i += len("NaN") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out = append(out, "null"...)
			i += len("-Infinity") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out = append(out, "null"...)
			i += len("Infinity") - 1
			continue
		}
		out = append(out, c)
	}
	return out
}

// probeRun is the state of one Probe call that its results are built from.
type probeRun struct {
	r      *Runner
	req    Request
	start  time.Time
	wall   time.Duration
	target compat.Target // the real target (auto resolved)
}

// accept checks a harness result against the request (check), fills in
// the runner's part (complete) and validates what would be recorded
// (compat.Result.Validate, the one check of a result).
func (p *probeRun) accept(res compat.Result, out procOutcome) (compat.Result, error) {
	if err := p.check(&res); err != nil {
		return res, err
	}
	res = p.complete(res, out)
	return res, res.Validate()
}

// check holds a harness result to the request: the target it ran on must
// be one the request admits, and a mode the one it asked for. An
// unresolved target or mode (auto) is dropped for the runner's own.
func (p *probeRun) check(res *compat.Result) error {
	if n := p.req.ranks(); res.DevicesUsed != 0 && res.DevicesUsed != n {
		return fmt.Errorf("devices_used %d on a probe of %d devices", res.DevicesUsed, n)
	}
	if res.Sharding != nil && p.req.ranks() == 1 {
		return fmt.Errorf("sharding %q on a probe of one device", *res.Sharding)
	}
	if res.Target == compat.TargetAuto {
		res.Target = "" // unresolved (it failed before resolving): the runner's resolution stands
	}
	if res.Target != "" {
		if err := p.req.Target.Admits(res.Target); err != nil {
			return err
		}
	}
	if res.Mode != nil {
		switch m := *res.Mode; {
		case m == compat.ModeAuto:
			res.Mode = nil // unresolved; filled below from the request if it can be
		case p.req.Mode != compat.ModeAuto && m != p.req.Mode:
			return fmt.Errorf("mode %s on a %s request", m, p.req.Mode)
		}
	}
	return nil
}

// complete fills in what the runner knows better than the harness.
func (p *probeRun) complete(res compat.Result, out procOutcome) compat.Result {
	if res.Target == "" {
		res.Target = p.target
	}
	if res.Mode == nil && p.req.Mode != compat.ModeAuto {
		res.Mode = compat.Ptr(p.req.Mode)
	}
	if res.Status == compat.StatusFail && res.FailureClass == nil {
		res.FailureClass = compat.Ptr(compat.ClassOther)
	}
	res.Runtime.Harness = p.r.harnessVersion(res.Runtime.Harness)
	res.Continuation = cleanContinuation(res.Continuation)
	res.Metrics.MFU, res.Metrics.MBU = efficiencyShare(res, res.Metrics.MFU), efficiencyShare(res, res.Metrics.MBU)
	if res.Status != compat.StatusPass {
		res.LogTail = mergeLogTail(res.LogTail, out.stderrTail)
	} else {
		res.LogTail = cleanTail([]byte(res.LogTail), LogTailMax)
	}
	return p.finish(res)
}

// finish sets the fields every result gets from the runner.
func (p *probeRun) finish(res compat.Result) compat.Result {
	if res.Target == "" || res.Target == compat.TargetAuto {
		res.Target = p.target
	}
	res.Revision = p.req.Revision
	res.DevicesUsed = p.req.ranks()
	res.TestedAt = p.start.UTC()
	res.DurationS = time.Since(p.start).Seconds()
	if res.Task == "" {
		res.Task = p.req.Task
	}
	mode := p.req.Mode
	if res.Mode != nil {
		mode = *res.Mode
	}
	res.Repro = compat.ReproOn(p.req.ModelID, p.req.Revision, res.Target, mode, p.req.ranks())
	return res
}

// base is a result made by the runner itself, with the runtime of the
// last Env run where it applies.
func (p *probeRun) base(status compat.Status, stage compat.Stage, class compat.FailureClass, msg string, tail []byte) compat.Result {
	res := compat.Result{Target: p.target, Status: status}
	if stage != "" {
		res.Stage = compat.Ptr(stage)
	}
	if class != "" {
		res.FailureClass = compat.Ptr(class)
	}
	if msg != "" {
		res.Message = compat.Ptr(msg)
	}
	if p.req.Mode == compat.ModeFull || p.req.Mode == compat.ModeArch {
		res.Mode = compat.Ptr(p.req.Mode)
	}
	if rt, ok := p.r.cachedRuntime(p.target); ok {
		res.Runtime = rt
	}
	res.Runtime.Harness = p.r.harnessVersion(res.Runtime.Harness)
	res.LogTail = cleanTail(tail, LogTailMax)
	return p.finish(res)
}

// scannerError is status error: the scanner's problem, not the model's.
func (p *probeRun) scannerError(stage compat.Stage, msg string, tail []byte) compat.Result {
	return p.base(compat.StatusError, stage, compat.ClassOther, msg, tail)
}

// interrupted is the result of a probe stopped by the scanner's shutdown.
func (p *probeRun) interrupted(stage compat.Stage, tail []byte) compat.Result {
	return p.base(compat.StatusError, stage, "", InterruptedMessage, tail)
}

// timeout is the result of a probe that ran past its limit.
func (p *probeRun) timeout(limit time.Duration, out procOutcome) compat.Result {
	msg := fmt.Sprintf("probe ran past its %s limit", limit)
	if out.lastStage != "" {
		msg += " during stage " + string(out.lastStage)
	}
	msg += " and was killed"
	res := p.base(compat.StatusTimeout, out.lastStage, compat.ClassTimeout, msg, out.stderrTail)
	res.Signature = compat.Ptr(signature("timeout", string(out.lastStage)))
	return res
}

// noResult classifies a harness that exited without writing a result.
func (p *probeRun) noResult(out procOutcome) compat.Result {
	return p.died("harness", out.rusage, out)
}

// rankFailed is the result of a sharded probe that rank (not 0) ended: the
// result it wrote when it failed, else its death. The keeper exited the way
// that rank did, so out's state is the rank's.
func (p *probeRun) rankFailed(rank int, rep keeperReport, resultFile string, out procOutcome) compat.Result {
	who := fmt.Sprintf("rank %d of %d", rank, rep.Ranks)
	res, err := readResult(resultFile)
	if err == nil {
		err = p.check(&res)
	}
	switch {
	case err == nil && res.Status == compat.StatusPass:
		return p.scannerError("", "probe: "+who+" wrote a passing result and ended the probe", out.stderrTail)
	case err == nil:
		msg := who
		if res.Message != nil {
			msg += ": " + *res.Message
		}
		res.Message = &msg
		return p.complete(res, out)
	case !errors.Is(err, os.ErrNotExist):
		return p.scannerError("", "probe: "+who+" wrote an invalid result: "+err.Error(), out.stderrTail)
	}
	var ru *syscall.Rusage
	if end, ok := rep.end(rank); ok {
		ru = &syscall.Rusage{Maxrss: int64(end.MaxRSSBytes / 1024)}
	}
	if st, ok := out.rankStages[rank]; ok { // the ranks share stderr: this rank's own stage
		out.lastStage = st
	}
	return p.died(who, ru, out)
}

// died classifies a harness process (who: "harness", "rank 1 of 2") that
// ended without a result as out's state says; ru is its resource usage
// when known.
func (p *probeRun) died(who string, ru *syscall.Rusage, out procOutcome) compat.Result {
	st := out.state
	if code := st.ExitCode(); code == limitsExit {
		return p.scannerError(compat.StageEnv,
			"probe: could not apply resource limits to the harness; last stderr: "+lastLine(out.stderrTail),
			out.stderrTail)
	}
	sig, signalled := signalOf(st)
	if signalled && out.lastStage == compat.StageEnv {
		return p.envDeath(who, signalName(sig), out)
	}
	how := fmt.Sprintf("exit status %d", st.ExitCode())
	if signalled {
		how = "killed by " + signalName(sig)
	}
	oomKilled := signalled && sig == syscall.SIGKILL && out.oomKiller == "yes"
	if marker := harness.OOMMarker(out.stderrTail); marker != "" || oomKilled {
		msg := fmt.Sprintf("%s ran out of memory (%s: %q) and wrote no result", who, how, marker)
		if oomKilled {
			msg = fmt.Sprintf("%s was killed by the kernel's out-of-memory killer (%s; %s) and wrote no result", who, how, out.oomWords)
		}
		if p.r.memLimit > 0 {
			msg += fmt.Sprintf("; its data limit was %s", formatBytes(p.r.memLimit))
		}
		if ru != nil && ru.Maxrss > 0 {
			msg += ", peak RSS " + formatBytes(uint64(ru.Maxrss)*1024)
		}
		res := p.base(compat.StatusOOM, out.lastStage, compat.ClassOOM, msg, out.stderrTail)
		res.Signature = compat.Ptr(signature("oom", string(out.lastStage)))
		return res
	}
	if signalled {
		name := signalName(sig)
		msg := who + " died of " + name
		if out.lastStage != "" {
			msg += " during stage " + string(out.lastStage)
		}
		if sig == syscall.SIGKILL {
			switch out.oomKiller {
			case "no":
				msg += " (not sent by the scanner, nor by the kernel's out-of-memory killer: " + out.oomWords
			default:
				msg += " (not sent by the scanner: most likely the kernel's out-of-memory killer"
			}
			if ru != nil {
				msg += ", peak RSS " + formatBytes(uint64(ru.Maxrss)*1024)
			}
			msg += ")"
		}
		if l := lastLine(out.stderrTail); l != "" {
			msg += "; last stderr: " + l
		}
		res := p.base(compat.StatusCrash, out.lastStage, compat.ClassCrash, msg, out.stderrTail)
		res.Signature = compat.Ptr("crash:" + name)
		return res
	}
	msg := fmt.Sprintf("%s wrote no result (exit status %d)", who, st.ExitCode())
	if l := lastLine(out.stderrTail); l != "" {
		msg += "; last stderr: " + l
	}
	if out.stdoutBytes > 1<<20 {
		msg += fmt.Sprintf("; it printed %s to stdout", formatBytes(uint64(out.stdoutBytes)))
	}
	return p.scannerError(out.lastStage, msg, out.stderrTail)
}

// envDeath is the result of a harness killed by a signal in its env stage.
// The env stage touches no model (it imports torch and starts the device
// runtime), so this is the environment's failure, never the model's: status
// error, and on an accelerator the device is unavailable (a TPU runtime
// that CHECK-fails while starting aborts the process: torch_tpu
// csrc/pjrt/pjrt_state.cc InitializeInternal).
func (p *probeRun) envDeath(who, sig string, out procOutcome) compat.Result {
	class := compat.ClassOther
	if p.target == compat.TargetTPU || p.target == compat.TargetCUDA {
		class = compat.ClassDeviceUnavail
	}
	msg := who + " died of " + sig + " during stage env, before any model was loaded"
	if l := lastLine(out.stderrTail); l != "" {
		msg += "; last stderr: " + l
	}
	res := p.base(compat.StatusError, compat.StageEnv, class, msg, out.stderrTail)
	res.Signature = compat.Ptr(string(class) + ":" + sig)
	return res
}

// signature joins a kind and a stage: "timeout:load", or "timeout".
func signature(kind, stage string) string {
	if stage == "" {
		return kind
	}
	return kind + ":" + stage
}

// lastLine is the last non-blank line of a stderr tail, at most 300 bytes
// (its end), as valid UTF-8.
func lastLine(tail []byte) string {
	s := bytes.TrimRight(tail, " \t\r\n")
	if i := bytes.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(cleanTail(s, 300))
}

// cleanTail returns the last max bytes of b as valid UTF-8: a rune cut at
// the start is dropped, invalid bytes become U+FFFD, and the result is
// trimmed again if that made it longer.
func cleanTail(b []byte, max int) string {
	for {
		if len(b) > max {
			b = b[len(b)-max:]
		}
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
		if utf8.Valid(b) {
			return string(b)
		}
		s := strings.ToValidUTF8(string(b), "\uFFFD")
		if len(s) <= max {
			return s
		}
		b = []byte(s)
	}
}

// Caps of a stored continuation (compat.Continuation), in bytes.
const (
	ContinuationPromptMax = 256
	ContinuationTextMax   = 2048
)

// cleanContinuation keeps what the harness reported of a continuation
// within the caps (the start of each text: a continuation is read from its
// beginning), as valid UTF-8 without control characters other than newline
// and tab; nil when there is no text.
func cleanContinuation(c *compat.Continuation) *compat.Continuation {
	if c == nil {
		return nil
	}
	out := &compat.Continuation{Prompt: cleanHead(c.Prompt, ContinuationPromptMax), Text: cleanHead(c.Text, ContinuationTextMax)}
	if out.Text == "" {
		return nil
	}
	return out
}

// cleanHead returns the first max bytes of s as valid UTF-8 (invalid bytes
// become U+FFFD, a rune cut at the end is dropped) with control characters
// other than newline and tab removed.
func cleanHead(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || (r >= 0x20 && r != 0x7f && (r < 0x80 || r > 0x9f)) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// mergeLogTail combines the harness's own log tail with the runner's tail
// of its stderr, in at most LogTailMax bytes. When one holds the other,
// only the larger is kept; else the harness's (up to half) comes first.
func mergeLogTail(harness string, stderr []byte) string {
	h := strings.TrimSpace(harness)
	s := cleanTail(stderr, LogTailMax)
	switch {
	case h == "":
		return s
	case strings.TrimSpace(s) == "" || strings.Contains(h, strings.TrimSpace(s)):
		return cleanTail([]byte(harness), LogTailMax)
	case strings.Contains(s, h):
		return s
	}
	const sep = "\n--- harness stderr (scanner) ---\n"
	hp := cleanTail([]byte(harness), LogTailMax/2)
	return hp + sep + cleanTail([]byte(s), LogTailMax-len(hp)-len(sep))
}

// formatBytes is a short human size: "512 MiB", "1.5 GiB".
func formatBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// efficiencyShare keeps an MFU or MBU the harness reported only where one
// can exist: a passing run on an accelerator, a share in (0, 1]. Anything
// else is null, never a guessed figure.
func efficiencyShare(res compat.Result, v *float64) *float64 {
	if v == nil || res.Status != compat.StatusPass || res.Target == compat.TargetCPU || !(*v > 0 && *v <= 1) {
		return nil
	}
	return v
}
