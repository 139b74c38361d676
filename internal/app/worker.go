package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving/measure"
	"github.com/google-pytorch/torchtpu-scanner/internal/worker"
)

// RunWorker is `scanner worker`: it leases probes from cfg.Server until ctx
// ends (SIGTERM), with one harness runner per device, and serves /healthz
// on cfg.Addr when set. It returns nil after a graceful stop; an error
// when the worker could not start (no usable device, no Python).
func RunWorker(ctx context.Context, cfg config.Config, log *slog.Logger, version string) error {
	m := newAppMetrics(metrics.NewRegistry(), version)
	client, err := newHubClient(cfg, log, m)
	if err != nil {
		return err
	}
	runner := newRunner(cfg, log)
	if c, ok := runner.(io.Closer); ok {
		defer c.Close()
	}
	// One prober per device, pinned to it (as a local scan's), or the
	// runner itself on a host of one device.
	probers := []worker.Prober{runner}
	if pinned := deviceProbers(runner, cfg.Devices); len(pinned) > 0 {
		probers = probers[:0]
		for _, p := range pinned {
			probers = append(probers, p)
		}
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	mem, _ := probe.PhysicalMemory()
	wcfg := workerConfig(cfg, host, mem, log, version)
	if wcfg.ServeProbe != nil { // the server lists what it reports (fleet.Worker.Serving)
		if wcfg.ServingVersion, err = measure.Version(ctx, cfg.VLLMPython, serving.Package); err != nil {
			log.Warn("serving probe: its vllm-torchtpu version is not known; it runs all the same", "err", err)
		}
	}
	w, err := worker.New(wcfg, runner, probers, client)
	if err != nil {
		return err
	}
	if cfg.Addr != "" {
		stop, err := serveHealth(cfg.Addr, w.HealthHandler(), log)
		if err != nil {
			return err
		}
		defer stop()
	}
	return w.Run(ctx)
}

// workerConfig is the worker's configuration from the command's: with
// --vllm-python, the serving probe a scan runs (serveProbeOf), for the
// jobs that ask for it.
func workerConfig(cfg config.Config, host string, mem uint64, log *slog.Logger, version string) worker.Config {
	return worker.Config{
		Server: cfg.Server, Token: cfg.WorkerToken, ID: worker.NewID(host), Host: host, Version: version,
		Target: cfg.Target, Timeout: cfg.Timeout, ProbeGrace: cfg.ProbeGrace, MemoryBytes: mem, Logger: log,
		ServeProbe: serveProbeOf(cfg),
	}
}

// serveHealth serves a worker's /healthz on addr until stop is called.
func serveHealth(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("worker health listener %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("worker health server", "err", err)
		}
	}()
	log.Info("worker health on", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
