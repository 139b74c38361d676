package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// The scaling benchmark's scan: 40 models of a stand-in probe of 2 s. The
// fixed duration dominates the stand-in's own cost (an interpreter start,
// about 0.3 s on a loaded 2-core machine), so that the figure measures the
// queue and not the host's CPU.
const (
	fleetBenchModels = 40
	fleetBenchProbe  = 2 * time.Second
)

// BenchmarkFleetScaling runs one scan of 40 models through 1, 2 and 4
// `scanner worker` processes (one device each) with a stand-in harness of
// fixed duration (testdata/standin_harness.py, 2 s), against one server
// with --dispatch workers, all real processes on loopback. It reports each
// scan's wall time (from the request to the scan's end) and the speedups;
// the target at 4 workers is >= 3.5x (the queue must not be the
// bottleneck).
func BenchmarkFleetScaling(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 is needed for the stand-in harness")
	}
	harness, err := filepath.Abs("testdata/standin_harness.py")
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		walls := map[int]time.Duration{}
		for _, n := range []int{1, 2, 4} {
			walls[n] = fleetScanWall(b, n, harness)
			b.Logf("%d worker(s): %d models in %v", n, fleetBenchModels, walls[n].Round(10*time.Millisecond))
		}
		s2, s4 := walls[1].Seconds()/walls[2].Seconds(), walls[1].Seconds()/walls[4].Seconds()
		b.ReportMetric(walls[1].Seconds(), "s_1_worker")
		b.ReportMetric(walls[4].Seconds(), "s_4_workers")
		b.ReportMetric(s2, "speedup_2")
		b.ReportMetric(s4, "speedup_4")
		verdict := "meets"
		if s4 < 3.5 {
			verdict = "MISSES"
		}
		b.Logf("speedup %.2fx with 2 workers, %.2fx with 4 (%s the target of >= 3.5x)", s2, s4, verdict)
	}
}

// fleetScanWall starts a server and n workers, runs one scan, and returns
// its wall time; everything is stopped before it returns.
func fleetScanWall(b *testing.B, n int, harness string) time.Duration {
	var repos []hubtest.Repo
	for i := range fleetBenchModels {
		id := fmt.Sprintf("bench/sleep-%d-model-%02d", fleetBenchProbe.Milliseconds(), i)
		repos = append(repos, configRepo(id, "llama", "text-generation", int64(1000-i)))
	}
	h := hubtest.New(b, repos...)
	dir := b.TempDir()
	server, out, base := fleetServer(b, h, filepath.Join(dir, "scanner.db"), filepath.Join(dir, "server-hub"),
		"--limit", fmt.Sprint(fleetBenchModels))
	var procs []*exec.Cmd
	for i := range n {
		cmd, _, _ := fleetWorker(b, h, base, "python3", harness, filepath.Join(dir, fmt.Sprintf("w%d", i)))
		procs = append(procs, cmd)
	}
	start := time.Now()
	requestScan(b, base)
	sb := scanDone(b, base, 10*time.Minute, out)
	wall := time.Since(start)
	if s := sb.Scans[0]; s.Status != "done" || s.Probed != fleetBenchModels {
		b.Fatalf("scan with %d workers: %+v", n, s)
	}
	for _, p := range append(procs, server) {
		p.Process.Signal(syscall.SIGTERM)
		p.Wait()
	}
	return wall
}
