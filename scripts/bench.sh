#!/usr/bin/env bash
# make bench: every benchmark reports a ratio against a baseline measured
# side by side in the same run, because these machines are shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SCANNER_PYTHON:?set SCANNER_PYTHON (make bench does)}"
export SCANNER_PYTHON

echo "== Scan throughput: device-busy fraction, pipelined scan vs a naive download-then-probe loop"
echo "   (200 models, fake Hub with a 20 ms download delay, stand-in harness of 25 ms; target >= 0.9)"
go test ./internal/scan -run '^$' -bench BenchmarkScanDeviceBusy -benchtime=1x -count=1 | grep -E 'Benchmark|pipelined'

echo
echo "== Fleet scaling: one scan of 40 models through 1, 2 and 4 \`scanner worker\` processes"
echo "   (serve --dispatch workers on loopback, stand-in harness of 2 s; target: >= 3.5x at 4 workers)"
go test ./cmd/scanner -run '^$' -bench BenchmarkFleetScaling -benchtime=1x -count=1 -timeout 30m | grep -E 'Benchmark|worker|speedup'

echo
echo "== Store: one page of the table over 10 000 models and 100 000 results"
go test ./store -run '^$' -bench 'BenchmarkListModels' -benchtime=2s -count=1 | grep -E '^Benchmark'
echo "   and the runtimes (/runtimes, the charts) and one runtime's results (a comparison's half), same data"
go test ./store -run '^$' -bench 'BenchmarkRuntimes' -benchtime=2s -count=1 | grep -E '^Benchmark'

echo
echo "== Web: badge, API list page, table, runtimes, compare and model pages (with their charts) vs a minimal fiber handler, same run (wrk on loopback)"
go run ./web/benchload

echo
echo "== Hub scale: 100 000 models, 20 rounds of results (1.8 M; made once by storetest.SeedScale through the store's API and"
echo "   cached under \$SCANNER_CACHE_HOME/bench, keyed by the migrations and the generator), served by bin/scanner serve;"
echo "   every public route after a write and cached (wrk, 1 and 16 clients) beside a minimal fiber handler, exports, start-up, a listing"
go run ./web/benchscale -scanner bin/scanner

echo
echo "== Harness overhead: a probe's wall time vs a bare script doing the same load, forward and generate"
go test ./internal/probe -run '^$' -bench BenchmarkHarnessOverhead -benchtime=1x -count=1 -timeout 30m | grep -E 'Benchmark|overhead|bare'

echo
echo "== The verdict matrix's cost: a probe with it (train step, graph breaks) vs the same probe with --no-modes"
echo "   (a tiny causal LM and masked LM, arch mode, cpu, compile and generate included; target <= 1.5x)"
go test ./internal/probe -run '^$' -bench BenchmarkModesCost -benchtime=1x -count=1 -timeout 30m | grep -E 'Benchmark|matrix'

echo
echo "== The TorchTPU prediction's cost: a probe tracing its ops (harness_ops.py) vs the same probe with --no-ops-trace"
echo "   (a tiny causal LM and masked LM, arch mode, cpu, compile, generate and the train step included; target <= 1.10x):"
echo "   the median over interleaved rounds of the harness's child CPU time traced over untraced, and the same cost from"
echo "   its parts (each a median of adjacent traced/untraced pairs in one process) over a round's untraced CPU time"
go test ./internal/probe -run '^$' -bench BenchmarkOpsTraceCost -benchtime=1x -count=1 -timeout 60m | grep -E 'Benchmark|ops trace'

echo
echo "== Sharded probe: the same tiny Llama on one device and tensor parallel over two gloo ranks (cpu, arch, no compile)"
go test ./internal/probe -run '^$' -bench BenchmarkShardedProbe -benchtime=1x -count=1 -timeout 30m | grep -E 'Benchmark|one device|sharded over'
