#!/usr/bin/env bash
# Mutation testing with gremlins: each package given (default: every package
# of the module that has tests, from go list) is mutated and its tests run
# against every covered mutant, then a table gives the efficacy per package (killed /
# (killed + lived)) and where the lived mutants are.
#
# One worker and no --test-cpu: gremlins v0.6.0 passes --test-cpu N to go
# test as the single argument "-cpu N", which go test rejects, so every
# mutant "fails" its tests and counts as killed, falsely (issue 16); several
# workers on a 2-core host make timing-based tests fail under load, which
# also counts as killed.
# gremlins comes from the Go module proxy at a pinned version and is kept
# in the user's cache. Slow (minutes to hours per package); not part of
# `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.6.0
bin="${XDG_CACHE_HOME:-$HOME/.cache}/torchtpu-scanner/gremlins-$version"
if [ ! -x "$bin/gremlins" ]; then
  echo "installing gremlins $version into $bin" >&2
  GOBIN="$bin" go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"
fi
if [ $# -eq 0 ]; then
  # Every package of the module that has tests (a package without any has
  # every mutant not covered), as ./path.
  mapfile -t dirs < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' ./... | grep .)
  set -- "${dirs[@]/#$PWD/.}"
fi
python3 scripts/mutation_tests.py selftest
# MUTATION_OUT keeps gremlins' reports and logs (each mutant's position and
# status) in that folder; otherwise they go with the run.
if [ -n "${MUTATION_OUT:-}" ]; then
  out=$MUTATION_OUT
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
# Tests that need the project's Python (real harness, MiniLM) run if it is
# there; gremlins runs each package's tests with this environment.
export SCANNER_PYTHON="${SCANNER_PYTHON:-$(scripts/pyenv.sh 2>/dev/null || true)}"
# go test exits 1 on a build failure as on a failing test, so gremlins
# counts a mutant that does not compile (a string's + made -) as killed.
# gremlins runs the go on PATH: this one exits 2 for a build failure, which
# gremlins counts as not viable. It also runs go test with -count=1: gremlins
# times each mutant against its first (coverage) run, and a cached result
# there (a second run of a package) takes a second, so every mutant would
# time out.
realgo=$(command -v go)
root=$PWD
mkdir -p "$out/bin"
cat >"$out/bin/go" <<EOF
#!/usr/bin/env bash
[ "\$1" = test ] || exec "$realgo" "\$@"
shift
# A mutant's run (gremlins passes -failfast only there) runs the tests that
# ran the mutated line (scripts/mutation_tests.py); the coverage run runs all.
args=("\$@")
if [[ " \$* " == *" -failfast "* && -n "\${MUTATION_MAP:-}" ]]; then
  sel=\$(python3 "$root/scripts/mutation_tests.py" select "\$MUTATION_MAP" "\$MUTATION_PKGDIR")
  # gremlins names a mutant's package by finding a directory named as the
  # package: for a package main (cmd/scanner, cmd/benchscale) there is none,
  # and it tests the module's root instead, so every mutant fails to build.
  # It runs the tests in the package's directory of its copy: "." is the
  # package, whatever its name.
  set -- "\${@:1:\$#-1}" .
  # -vet=off: a mutant that go vet flags has not been caught by a test.
  # -ldflags=-s -w: no symbol table or DWARF; linking the test binary is most
  # of a mutant's time (web: 10 s with them, 4 s without).
  args=(-vet=off -ldflags="-s -w" "\$@")
  [ -z "\$sel" ] || args=(-vet=off -ldflags="-s -w" -run "\$sel" "\$@")
fi
# MUTATION_SKIP: tests too slow to run per mutant (the real harness, the
# end-to-end tests on the project's Python: minutes each); skipped in the
# coverage run too, as in the map, so a line only they run is not covered,
# and what only they would kill counts as lived.
[ -z "\${MUTATION_SKIP:-}" ] || args=(-skip "\$MUTATION_SKIP" "\${args[@]}")
log=\$(mktemp)
"$realgo" test -count=1 "\${args[@]}" >"\$log" 2>&1
rc=\$?
grep -qE '\[(build|setup) failed\]' "\$log" && rc=2
# Which tests a mutant ran and which failed, to audit the kills (a test that
# fails under load would count as one).
[ -z "\${sel+x}" ] || echo "\$(basename "\$PWD") \${sel:-(all)} rc=\$rc \$(grep -oE -- '--- FAIL: [^ ]+' "\$log" | head -3 | tr '\n' ' ')" >>"$out/selected.log"
cat "\$log"; rm -f "\$log"
exit \$rc
EOF
chmod +x "$out/bin/go"
export PATH="$out/bin:$PATH"
# Tests that run the package's code in a child process, whose coverage the
# profile does not see: they run against every mutant of their package.
export MUTATION_ALWAYS="${MUTATION_ALWAYS:-TestNoProcessOutlivesAKilledScanner,TestEnableSubreaper}"
# MUTATION_SKIP is one regexp for every package of the run (go test -skip):
# the names below are each unique in the module (cmd/scanner's five tests
# that run the project's Python, anchored whole; internal/probe's
# TestRealHarness*), so the default serves the whole list.
export MUTATION_SKIP="${MUTATION_SKIP-^(TestRealHarness|TestEndToEnd\$|TestRealWeightsMiniLM\$|TestFleetSurvivesAKilledWorker\$|TestHuggingFaceHubBothWays\$|TestShardedScan\$)}"
status=0
for pkg in "$@"; do
  name=$(echo "${pkg#./}" | tr / _)
  echo "== gremlins unleash $pkg" >&2
  # Which tests ran each line, for choosing a mutant's tests.
  python3 scripts/mutation_tests.py map "$realgo" "${pkg#./}" "$out/$name.map.json"
  export MUTATION_MAP="$out/$name.map.json" MUTATION_PKGDIR="$root/${pkg#./}"
  # --exclude-files /: only the package's own files (paths are relative to
  # it), not its subpackages'; a mutant's tests get 10 times the time the
  # unmutated tests took (a busy host is slow; a mutant that hangs times out).
  # MUTATION_EXCLUDE (a regexp of file names) leaves more files out, for a
  # partial run.
  if ! (cd "$pkg" && "$bin/gremlins" unleash --workers 1 --timeout-coefficient 10 --exclude-files / \
      ${MUTATION_EXCLUDE:+--exclude-files "$MUTATION_EXCLUDE"} \
      --output "$out/$name.json" >"$out/$name.log" 2>&1); then
    echo "gremlins failed on $pkg:" >&2
    tail -20 "$out/$name.log" >&2
    status=1
  fi
done
python3 scripts/mutation_tests.py table "$out" "$@"
exit $status
