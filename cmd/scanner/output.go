package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving/measure"
	"github.com/google-pytorch/torchtpu-scanner/internal/termsafe"
)

// printResult writes a Result for a person; what the model's files and the
// harness said is escaped (termsafe) so it cannot act on the terminal.
func printResult(w io.Writer, id string, r compat.Result) {
	var b strings.Builder
	writeResult(&b, id, r)
	io.WriteString(w, termsafe.Text(b.String()))
}

func writeResult(w io.Writer, id string, r compat.Result) {
	fmt.Fprintf(w, "%s @ %s\n", id, short(r.Revision))
	fmt.Fprintf(w, "  status   %s", r.Status)
	if r.Stage != nil {
		fmt.Fprintf(w, " (stage %s", *r.Stage)
		if r.FailureClass != nil {
			fmt.Fprintf(w, ", %s", *r.FailureClass)
		}
		if r.Op != nil {
			fmt.Fprintf(w, " %s", *r.Op)
		}
		fmt.Fprint(w, ")")
	}
	if r.Reason != nil {
		fmt.Fprintf(w, " reason %s", *r.Reason)
	}
	fmt.Fprintln(w)
	mode := "—"
	if r.Mode != nil {
		mode = string(*r.Mode)
	}
	fmt.Fprintf(w, "  target   %s (%s, %d device(s)), mode %s\n", r.Target, orDash(r.Runtime.Device), r.Runtime.DeviceCount, mode)
	fmt.Fprintf(w, "  runtime  torch %s, transformers %s, torch_tpu %s, harness %s\n",
		orDash(r.Runtime.Torch), orDash(r.Runtime.Transformers), orDash(r.Runtime.TorchTPU), orDash(r.Runtime.Harness))
	m := r.Metrics
	fmt.Fprintf(w, "  metrics  load %s s, first forward %s s, forward %s ms, compile %s s, %s tok/s, peak mem %s, max |diff| %s, top-1 %s\n",
		num(m.LoadS), num(m.FirstForwardS), num(m.ForwardMS), num(m.CompileS), num(m.TokensPerS), bytesOrDash(m.PeakMemBytes),
		num(m.MaxAbsDiff), num(m.Top1Agreement))
	for _, s := range r.Stages {
		state := "ok"
		switch {
		case s.Skipped:
			state = "skipped"
		case !s.OK:
			state = "FAILED"
		}
		fmt.Fprintf(w, "    %-9s %-7s %7.2fs %s\n", s.Stage, state, s.DurationS, s.Note)
	}
	if r.Message != nil {
		fmt.Fprintf(w, "  message  %s\n", *r.Message)
	}
	fmt.Fprintf(w, "  took     %.1fs\n  repro    %s\n", r.DurationS, r.Repro)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return orDash(sha)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func num(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.4g", *p)
}

func bytesOrDash(p *int64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f MiB", float64(*p)/(1<<20))
}

// printServing writes the serving probe's result under a probe's.
func printServing(w io.Writer, r measure.Result) {
	var b strings.Builder
	fmt.Fprintf(&b, "  serving  %s (vLLM-TorchTPU %s, %s", r.Status, orDash(deref(r.Runtime.VLLMTorchTPU)), r.Evidence)
	if r.Stage != nil {
		fmt.Fprintf(&b, ", stage %s", *r.Stage)
	}
	fmt.Fprintf(&b, "; tensor_parallel_size %d, max_model_len %d)\n", r.TensorParallelSize, r.MaxModelLen)
	if r.Signature != nil {
		fmt.Fprintf(&b, "           %s\n", *r.Signature)
	}
	if r.Reason != nil && r.Message != nil { // not judged: say why (no reference)
		fmt.Fprintf(&b, "           %s: %s\n", *r.Reason, *r.Message)
	}
	m := r.Metrics
	fmt.Fprintf(&b, "           load %s s, first token %s s, %s tok/s, %s tokens agree with the CPU reference\n",
		num(m.LoadS), num(m.TTFTS), num(m.TokensPerS), orDash(intText(m.AgreedTokens)))
	io.WriteString(w, termsafe.Text(b.String()))
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func intText(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}
