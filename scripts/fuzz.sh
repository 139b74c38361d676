#!/usr/bin/env bash
# Runs every Go fuzz target for FUZZTIME beyond its seed corpus (the seeds
# also run as plain tests). A failing input that the fuzzer saves under
# testdata/fuzz/ fails the run at once. A run that fails without saving an
# input (the fuzzing engine itself giving up on a loaded 2-core machine) is
# tried once more, and fails only if it fails again.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5s}
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
