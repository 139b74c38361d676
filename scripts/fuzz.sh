#!/usr/bin/env bash
# Runs every Go fuzz target for FUZZTIME beyond its seed corpus (the seeds
# also run as plain tests). FUZZTIME is a count of executions ("20000x"):
# a wall-clock budget races Go 1.26's fuzz coordinator at its deadline and
# fails with "context deadline exceeded" without any failing input
# (golang/go#75804, fixed in Go 1.27). A failing input that the fuzzer
# saves under testdata/fuzz/ fails the run at once; any other failure is
# shown and tried once more.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-20000x}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for t in $(grep -rho --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's/^func //' | sort -u); do
  pkg=$(grep -rl --include='*_test.go' "^func $t(" . | head -1 | xargs dirname)
  echo "fuzz $pkg $t ($fuzztime)"
  for try in 1 2; do
    before=$(find "$pkg/testdata/fuzz/$t" -type f 2>/dev/null | wc -l)
    if go test "$pkg" -run='^$' -fuzz="^$t\$" -fuzztime="$fuzztime" >"$log" 2>&1; then
      break
    fi
    after=$(find "$pkg/testdata/fuzz/$t" -type f 2>/dev/null | wc -l)
    if [ "$after" -gt "$before" ] || [ "$try" -eq 2 ]; then
      cat "$log"
      echo "fuzz $pkg $t: FAILED"
      status=1
      break
    fi
    echo "fuzz $pkg $t: the fuzzing engine failed without a failing input; trying once more:"
    tail -5 "$log"
  done
done
exit $status
