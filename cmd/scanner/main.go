// Command scanner keeps an honest, public answer to one question: does this
// popular Hugging Face model run on TorchTPU, how fast, and since when?
//
//	scanner serve  [flags]   web UI + JSON API + scheduled scans, one process
//	scanner scan   [flags]   one scan now
//	scanner probe  MODEL     one smoke test of one model, printed; no database
//	scanner check  MODEL     CI gate against a running server's API
//	scanner worker [flags]   probe jobs leased from a server (--dispatch workers)
//	scanner backup FILE      a consistent copy of the database, while serving
//	scanner version
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/google-pytorch/torchtpu-scanner/internal/app"
	"github.com/google-pytorch/torchtpu-scanner/internal/check"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/termsafe"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

const usage = `scanner: does this Hugging Face model run on TorchTPU?

Usage:
  scanner serve  [flags]        web UI + JSON API + scheduled scans, one process
  scanner scan   [flags]        one scan now (progress bar on a terminal)
  scanner probe  MODEL [flags]  one smoke test of one model, printed; no database
  scanner check  MODEL --server URL [--since RUNTIME] [--mode inference|train|serve]
                                CI gate: exit 0 pass, 1 not passing or regressed
                                (since RUNTIME), 2 untested/unknown, 3 server unreachable
  scanner worker --server URL   probe jobs leased from a server (serve --dispatch workers);
                                token in SCANNER_WORKER_TOKEN
  scanner backup FILE [--db]    consistent copy of the database, safe while serving
  scanner version

Run "scanner COMMAND -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, rest := config.Command(args[0]), args[1:]
	// Positional arguments may come before or after the flags.
	var positional []string
	if len(rest) > 0 && len(rest[0]) > 0 && rest[0][0] != '-' {
		positional, rest = rest[:1], rest[1:]
	}
	cfg, more, err := config.Parse(cmd, rest, os.LookupEnv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "scanner %s: %v\n", cmd, err)
		return 2
	}
	positional = append(positional, more...)
	// A scan's log lines go through its console, above the progress bar.
	logOut, con := stderr, (*console)(nil)
	if cmd == config.CmdScan {
		con = newConsole(stderr)
		logOut = con
	}
	logger := newLogger(cfg, logOut, con.tty())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	switch cmd {
	case config.CmdVersion:
		fmt.Fprintf(stdout, "scanner %s (harness requirements %s)\n", version, app.RequirementsHash())
		return 0
	case config.CmdServe:
		return exitOn(stderr, serve(ctx, cfg, logger))
	case config.CmdScan:
		return exitOn(stderr, scanNow(ctx, cfg, logger, con, stderr))
	case config.CmdProbe:
		if len(positional) != 1 {
			fmt.Fprintln(stderr, "scanner probe: want exactly one MODEL id")
			return 2
		}
		return probeOne(ctx, cfg, logger, positional[0], stdout, stderr)
	case config.CmdCheck:
		if len(positional) != 1 {
			fmt.Fprintln(stderr, "scanner check: want exactly one MODEL id")
			return 2
		}
		code, line := check.Check(ctx, cfg.Server, positional[0], cfg.Target, cfg.Since, cfg.CheckMode, nil)
		fmt.Fprintln(stdout, termsafe.Line(line))
		return code
	case config.CmdWorker:
		if len(positional) != 0 {
			fmt.Fprintln(stderr, "scanner worker: takes no arguments, only flags")
			return 2
		}
		return exitOn(stderr, app.RunWorker(ctx, cfg, logger, version))
	case config.CmdBackup:
		if len(positional) != 1 {
			fmt.Fprintln(stderr, "scanner backup: want exactly one FILE to write")
			return 2
		}
		return exitOn(stderr, app.Backup(ctx, cfg, positional[0]))
	}
	fmt.Fprintf(stderr, "scanner: unknown command %q\n\n%s", cmd, usage)
	return 2
}

func exitOn(stderr io.Writer, err error) int {
	if err == nil || errors.Is(err, context.Canceled) {
		return 0
	}
	fmt.Fprintln(stderr, "scanner:", termsafe.Text(err.Error()))
	return 1
}

// newLogger writes to w at the configured level, or only warnings and
// errors on a terminal that shows a progress bar (tty), unless -v.
func newLogger(cfg config.Config, w io.Writer, tty bool) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: logLevel(level, tty, cfg.Verbose)}
	// Log lines carry Hub ids and messages: termsafe escapes what could
	// act on a terminal.
	if cfg.LogFormat == "json" {
		return slog.New(termsafe.Handler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(termsafe.Handler(slog.NewTextHandler(w, opts)))
}

// serve runs the server until ctx ends. SIGHUP reads the known-issues and
// webhooks files again (App.Reload) rather than killing the process.
func serve(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	a, err := app.New(ctx, cfg, logger, version)
	if err != nil {
		return err
	}
	defer a.Close()
	rctx, stopReloads := context.WithCancel(ctx)
	reloads := make(chan struct{})
	go func() {
		defer close(reloads)
		for {
			select {
			case <-rctx.Done():
				return
			case <-hup:
				logger.Info("SIGHUP: reloading the known-issues and webhooks files")
				a.Reload(rctx)
			}
		}
	}()
	err = a.Serve(ctx)
	stopReloads()
	<-reloads // no reload races Close
	return err
}

func scanNow(ctx context.Context, cfg config.Config, logger *slog.Logger, con *console, stderr io.Writer) error {
	a, err := app.New(ctx, cfg, logger, version)
	if err != nil {
		return err
	}
	defer a.Close()
	sc, err := a.Scan(ctx, "cli", con.update)
	con.finish()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("scan %d interrupted after %d of %d models: what was measured is saved, and the next scan tests the rest", sc.ID, sc.Done, sc.Planned)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "scan %d %s: %d models, %d probed, %d unchanged (database %s)\n",
		sc.ID, sc.Status, sc.Planned, sc.Probed, sc.Unchanged, cfg.DB)
	return nil
}

func probeOne(ctx context.Context, cfg config.Config, logger *slog.Logger, id string, stdout, stderr io.Writer) int {
	res, err := app.Probe(ctx, cfg, logger, id)
	if err != nil {
		fmt.Fprintln(stderr, "scanner probe:", termsafe.Text(err.Error()))
		return 1
	}
	if cfg.VLLMPython != "" {
		return probeServing(ctx, cfg, id, res, stdout, stderr)
	}
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		printResult(stdout, id, res)
	}
	if res.Status == compat.StatusPass {
		return 0
	}
	return 1
}

// probeServing prints an ordinary probe's result and the serving probe's
// that followed it (--vllm-python): with --json, {"result": Result,
// "serving": the serving probe's}. Exit 0 when both pass.
func probeServing(ctx context.Context, cfg config.Config, id string, res compat.Result, stdout, stderr io.Writer) int {
	sr, err := app.ServeProbe(ctx, cfg, id, res)
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := map[string]any{"result": res, "serving": nil}
		if err == nil {
			out["serving"] = sr
		}
		_ = enc.Encode(out)
	} else {
		printResult(stdout, id, res)
		if err == nil {
			printServing(stdout, sr)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "scanner probe: serving:", termsafe.Text(err.Error()))
		return 1
	}
	if res.Status == compat.StatusPass && compat.Status(sr.Status) == compat.StatusPass {
		return 0
	}
	return 1
}
