#!/usr/bin/env python3
"""Which tests can notice a mutant: per-test coverage for scripts/mutation.sh.

A mutant can only be noticed by a test that runs its line, so running the
package's other tests against it proves nothing and costs most of the time
(internal/probe's tests take a minute; a mutant's usually a few seconds).

  map GO PKGDIR OUT     build the package's test binary with coverage once,
                        run each test alone, and write OUT: for each file of
                        the package, which lines each test ran; which tests
                        fail when run alone
  select MAP PKGDIR     run in a mutant's working copy of the package (the
                        current directory): find the mutated line by
                        comparing with PKGDIR's files and print a -run
                        regexp naming every test that ran that line; print
                        nothing (run them all) when that cannot be decided:
                        no single mutated line found, no test ran it, or one
                        of those tests fails alone

  table OUT PKG...     the efficacy per package from gremlins' reports in
                        OUT, and where the lived mutants are

MUTATION_ALWAYS (a comma-separated list of test names) adds tests to every
selection: tests that run the package's code in a child process, whose
coverage the profile does not see.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def build_map(go, pkgdir, out):
    tmp = tempfile.mkdtemp(prefix="mutmap")
    binary = os.path.join(tmp, "pkg.test")
    subprocess.run([go, "test", "-c", "-cover", "-covermode=set", "-o", binary, "./" + pkgdir],
                   check=True)
    if not os.path.exists(binary):  # a package without tests
        json.dump({"tests": [], "failed_alone": [], "lines": {}}, open(out, "w"))
        return
    listed = subprocess.run([binary, "-test.list", "."], cwd=pkgdir, check=True,
                            capture_output=True, text=True).stdout.split()
    tests = [t for t in listed if re.match(r"(Test|Fuzz|Example)", t)]
    lines, failed = {}, []
    start = time.monotonic()
    for name in tests:
        prof = os.path.join(tmp, "cover.out")
        r = subprocess.run([binary, "-test.run", "^" + re.escape(name) + "$", "-test.count=1",
                            "-test.timeout=10m", "-test.coverprofile=" + prof],
                           cwd=pkgdir, capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(name)
            print(f"mutation map: {pkgdir}: {name} fails when run alone; "
                  "mutants it covers run every test", file=sys.stderr)
        for file, first, last in covered_blocks(prof):
            for n in range(first, last + 1):
                lines.setdefault(file, {}).setdefault(str(n), []).append(name)
    print(f"mutation map: {pkgdir}: {len(tests)} tests run one by one in "
          f"{time.monotonic() - start:.0f}s", file=sys.stderr)
    with open(out, "w") as f:
        json.dump({"tests": tests, "failed_alone": failed, "lines": lines}, f)


def covered_blocks(profile):
    """(file name, first line, last line) of each block the profile ran."""
    try:
        f = open(profile)
    except OSError:
        return
    with f:
        for row in f:
            m = re.match(r"(.+):(\d+)\.\d+,(\d+)\.\d+ \d+ (\d+)$", row.strip())
            if m and int(m.group(4)) > 0:
                yield os.path.basename(m.group(1)), int(m.group(2)), int(m.group(3))


def mutated_line(pkgdir):
    """(file, line) of the one line that differs from the original, or None."""
    changed = []
    for name in sorted(os.listdir(".")):
        if not name.endswith(".go") or name.endswith("_test.go"):
            continue
        orig = os.path.join(pkgdir, name)
        if not os.path.exists(orig):
            return None
        a, b = open(orig, "rb").read(), open(name, "rb").read()
        if a == b:
            continue
        # gremlins writes the mutant with go/printer, which may realign a
        # struct's fields: compare lines without their blanks.
        al, bl = a.split(b"\n"), b.split(b"\n")
        if len(al) != len(bl):
            return None
        changed += [(name, i + 1) for i, (x, y) in enumerate(zip(al, bl))
                    if re.sub(rb"\s+", b"", x) != re.sub(rb"\s+", b"", y)]
    return changed[0] if len(changed) == 1 else None


def select(mapfile, pkgdir):
    with open(mapfile) as f:
        m = json.load(f)
    where = mutated_line(pkgdir)
    if where is None:
        return ""
    tests = set(m["lines"].get(where[0], {}).get(str(where[1]), []))
    if not tests or tests & set(m["failed_alone"]):
        return ""
    tests |= {t for t in os.environ.get("MUTATION_ALWAYS", "").split(",") if t in m["tests"]}
    return "^(" + "|".join(sorted(re.escape(t) for t in tests)) + ")$"


def table(out, pkgs):
    print(f"{'package':<18} {'killed':>6} {'lived':>6} {'timed out':>9} {'not viable':>10} "
          f"{'not covered':>11} {'efficacy':>9}  lived in")
    for pkg in pkgs:
        pkg = pkg.removeprefix("./")
        try:
            with open(os.path.join(out, pkg.replace("/", "_") + ".json")) as f:
                r = json.load(f)
        except (OSError, ValueError):
            print(f"{pkg:<18} (no result: see the log above)")
            continue
        lived, timed_out = {}, 0
        for f in r.get("files", []):
            for m in f.get("mutations", []):
                if m.get("status") == "LIVED":
                    lived[f["file_name"]] = lived.get(f["file_name"], 0) + 1
                timed_out += m.get("status") == "TIMED OUT"
        where = ", ".join(f"{os.path.basename(k)} {v}"
                          for k, v in sorted(lived.items(), key=lambda kv: -kv[1]))
        print(f"{pkg:<18} {r.get('mutants_killed', 0):>6} {r.get('mutants_lived', 0):>6} "
              f"{timed_out:>9} {r.get('mutants_not_viable', 0):>10} "
              f"{r.get('mutants_not_covered', 0):>11} {r.get('test_efficacy', 0):>8.1f}%  {where}")


def main(argv):
    if argv[1:2] == ["map"] and len(argv) == 5:
        build_map(argv[2], argv[3], argv[4])
    elif argv[1:2] == ["select"] and len(argv) == 4:
        print(select(argv[2], argv[3]))
    elif argv[1:2] == ["table"] and len(argv) >= 4:
        table(argv[2], argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
