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

  recheck GO REPORT PKGDIR BASE OUT
                        run each mutant gremlins' REPORT(.json or .log: the
                        path without them) says lived against today's tests
                        (BASE: the commit gremlins ran on; a line that moved
                        since is found by its text); with go test -overlay,
                        the tree is not touched; one line per mutant in OUT
  run GO DRYLOG MAP PKGDIR OUTLOG TIMEOUT
                        gremlins' work without gremlins, for a package whose
                        coverage run cannot pass under load: each mutant
                        gremlins' --dry-run log lists, run with -overlay
  selftest              check the pure parts against cases worked out by hand
  table OUT PKG...     the efficacy per package from gremlins' reports in
                        OUT, and where the lived mutants are

MUTATION_ALWAYS (a comma-separated list of test names) adds tests to every
selection: tests that run the package's code in a child process, whose
coverage the profile does not see.
"""
import json
import os
import re
import signal
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
    skip = os.environ.get("MUTATION_SKIP")
    tests = [t for t in listed if re.match(r"(Test|Fuzz|Example)", t) and not (skip and re.search(skip, t))]
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
    return "" if where is None else tests_for(m, *where)


def tests_for(m, file, line):
    """A -run regexp naming the tests that ran file:line; "" for all."""
    tests = set(m["lines"].get(file, {}).get(str(line), []))
    if not tests or tests & set(m["failed_alone"]):
        return ""
    tests |= {t for t in os.environ.get("MUTATION_ALWAYS", "").split(",") if t in m["tests"]}
    return "^(" + "|".join(sorted(re.escape(t) for t in tests)) + ")$"


# gremlins v0.6.0's default mutations (internal/engine/mappings.go): the
# token at a mutant's position and what it becomes.
MUTATIONS = {
    "ARITHMETIC_BASE": {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
    "CONDITIONALS_BOUNDARY": {">=": ">", ">": ">=", "<=": "<", "<": "<="},
    "CONDITIONALS_NEGATION": {"==": "!=", "!=": "==", ">=": "<", ">": "<=", "<=": ">", "<": ">="},
    "INCREMENT_DECREMENT": {"++": "--", "--": "++"},
    "INVERT_NEGATIVES": {"-": "+"},
}


def mutant_source(src, line, col, kind):
    """src with the mutation applied at line:col (1-based, bytes), or None
    when the token there is not one the mutation applies to."""
    lines = src.split(b"\n")
    text = lines[line - 1]
    at = text[col - 1:]
    for tok, repl in sorted(MUTATIONS.get(kind, {}).items(), key=lambda kv: -len(kv[0])):
        if at.startswith(tok.encode()) and not (len(tok) == 1 and at[1:2] in (b"=", tok.encode(), b">")):
            lines[line - 1] = text[:col - 1] + repl.encode() + at[len(tok):]
            return b"\n".join(lines)
    return None


def run_mutant(go, pkgdir, m, name, line, mutant, tmp, timeout=None):
    """KILLED, LIVED, NOT VIABLE or TIMED OUT: the tests that ran the line
    against the package with name's source replaced by mutant."""
    with open(os.path.join(tmp, name), "wb") as g:
        g.write(mutant)
    with open(os.path.join(tmp, "overlay.json"), "w") as g:
        json.dump({"Replace": {os.path.abspath(os.path.join(pkgdir, name)): os.path.join(tmp, name)}}, g)
    args = [go, "test", "-count=1", "-vet=off", "-ldflags=-s -w", "-failfast",
            "-overlay", os.path.join(tmp, "overlay.json")]
    sel = tests_for(m, name, line)
    args += ["-run", sel] if sel else []
    if os.environ.get("MUTATION_SKIP"):
        args += ["-skip", os.environ["MUTATION_SKIP"]]
    # In a session of its own, so that a mutant that hangs is ended with
    # its test binary and the binary's children, not left running on.
    p = subprocess.Popen(args + ["./" + pkgdir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return "TIMED OUT"
    if p.returncode == 0:
        return "LIVED"
    if re.search(r"\[(build|setup) failed\]", out):
        return "NOT VIABLE"
    return "KILLED"


def run(go, drylog, mapfile, pkgdir, outlog, timeout):
    """gremlins' work without gremlins: every mutant its dry run (--dry-run)
    listed as RUNNABLE, run against the tests that ran its line (per the
    map), with one line per mutant in outlog in gremlins' own format. An
    interrupted run goes on where it stopped."""
    with open(mapfile) as f:
        m = json.load(f)
    done = set()
    if os.path.exists(outlog):
        done = {l.split(" at ")[-1].strip() + " " + l.split()[-3] for l in open(outlog) if " at " in l}
    tmp = tempfile.mkdtemp(prefix="mutrun")
    with open(outlog, "a") as out:
        for st, kind, file, line, col in re.findall(
                r"^\s*(RUNNABLE|NOT COVERED) (\w+) at (.+?):(\d+):(\d+)$", open(drylog).read(), re.M):
            if f"{file}:{line}:{col} {kind}" in done:
                continue
            status = "NOT COVERED"
            if st == "RUNNABLE":
                src = open(os.path.join(pkgdir, file), "rb").read()
                mutant = mutant_source(src, int(line), int(col), kind)
                status = ("SKIPPED" if mutant is None else
                          run_mutant(go, pkgdir, m, file, int(line), mutant, tmp, timeout))
            out.write(f"{status:>12} {kind} at {file}:{line}:{col}\n")
            out.flush()


def moved_line(then, now, line):
    """Where line of the file as it was (then) is in the file now: the same
    number if the file is unchanged, else the one line with the same text;
    None if there is not exactly one."""
    if then == now:
        return line
    text = then.split(b"\n")[line - 1]
    found = [i + 1 for i, l in enumerate(now.split(b"\n")) if l == text]
    return found[0] if len(found) == 1 else None


def recheck(go, report, pkgdir, base, out):
    """Run every mutant the report says lived against today's tests (the
    package's files must be as they were at commit base) and write the
    outcome of each to out; print the efficacy before and after."""
    mapfile = out + ".map.json"
    build_map(go, pkgdir, mapfile)
    with open(mapfile) as f:
        m = json.load(f)
    r = read_report(report)
    if r is None:
        sys.exit(f"no gremlins report or log at {report}.json/.log")
    rows, killed_now = [], 0
    tmp = tempfile.mkdtemp(prefix="recheck")
    for f in r.get("files", []):
        name = os.path.basename(f["file_name"])
        path = os.path.join(pkgdir, name)
        src = open(path, "rb").read()
        then = subprocess.run(["git", "show", f"{base}:{path}"], capture_output=True).stdout
        for mu in f.get("mutations", []):
            if mu["status"] != "LIVED":
                continue
            where = f"{name}:{mu['line']}:{mu['column']} {mu['type']}"
            line = moved_line(then, src, mu["line"])
            mutant = line and mutant_source(src, line, mu["column"], mu["type"])
            if not mutant:
                rows.append(f"{where} NOT RECHECKED (its line changed since {base})")
                continue
            status = run_mutant(go, pkgdir, m, name, line, mutant, tmp)
            killed_now += status == "KILLED"
            rows.append(f"{where} {status}")
            print(rows[-1], file=sys.stderr)
    with open(out, "w") as g:
        g.write("\n".join(rows) + "\n")
    k, lv = r.get("mutants_killed", 0), r.get("mutants_lived", 0)
    if k == 0:  # a list of lived mutants, not a run: no efficacy to give
        print(f"{pkgdir}: {killed_now} of {lv} lived mutants now killed")
    elif k + lv:
        print(f"{pkgdir}: efficacy {100 * k / (k + lv):.1f}% in the run, "
              f"{100 * (k + killed_now) / (k + lv):.1f}% with today's tests "
              f"({killed_now} of {lv} lived mutants now killed)")


def read_report(stem):
    """gremlins' report stem.json, or, for a run that was stopped (the report
    is written at its end), the same figures from its log stem.log."""
    try:
        with open(stem + ".json") as f:
            return json.load(f)
    except (OSError, ValueError):
        pass
    try:
        log = open(stem + ".log").read()
    except OSError:
        return None
    files, counts = {}, {}
    for st, kind, file, line, col in re.findall(
            r"^\s*(KILLED|LIVED|NOT VIABLE|TIMED OUT|NOT COVERED|SKIPPED) (\w+) at (.+?):(\d+):(\d+)$", log, re.M):
        files.setdefault(file, []).append({"type": kind, "status": st, "line": int(line), "column": int(col)})
        counts[st] = counts.get(st, 0) + 1
    k, lv = counts.get("KILLED", 0), counts.get("LIVED", 0)
    return {"files": [{"file_name": f, "mutations": m} for f, m in files.items()],
            "mutants_killed": k, "mutants_lived": lv, "mutants_not_viable": counts.get("NOT VIABLE", 0),
            "mutants_not_covered": counts.get("NOT COVERED", 0),
            "test_efficacy": 100 * k / (k + lv) if k + lv else 0, "partial": True}


def table(out, pkgs):
    print(f"{'package':<18} {'killed':>6} {'lived':>6} {'timed out':>9} {'not viable':>10} "
          f"{'not covered':>11} {'efficacy':>9}  lived in")
    for pkg in pkgs:
        pkg = pkg.removeprefix("./")
        r = read_report(os.path.join(out, pkg.replace("/", "_")))
        if r is None:
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


def selftest():
    """The pure parts against cases worked out by hand; mutation.sh runs it
    first, so a broken selector cannot make a run's figures wrong."""
    os.environ.pop("MUTATION_ALWAYS", None)
    src = b"package x\nfunc f(a, b int) bool { return a >= b && a-b > -1 }\n"
    line = src.split(b"\n")[1]
    cases = [  # (token to find, offset in it, type, the line after)
        (b">=", 0, "CONDITIONALS_BOUNDARY", b"a > b && a-b > -1"),
        (b">=", 0, "CONDITIONALS_NEGATION", b"a < b && a-b > -1"),
        (b"a-b", 1, "ARITHMETIC_BASE", b"a >= b && a+b > -1"),
        (b"-1", 0, "INVERT_NEGATIVES", b"a >= b && a-b > +1"),
        (b"> -", 0, "CONDITIONALS_BOUNDARY", b"a >= b && a-b >= -1"),
    ]
    for tok, off, kind, want in cases:
        got = mutant_source(src, 2, line.find(tok) + 1 + off, kind)
        assert got and want in got.split(b"\n")[1], (tok, kind, got)
    assert mutant_source(src, 2, line.find(b">=") + 1, "INCREMENT_DECREMENT") is None
    assert moved_line(b"a\nb\nc", b"a\nb\nc", 2) == 2
    assert moved_line(b"x\nx", b"x\nx", 2) == 2  # unchanged: the line itself, even if repeated
    assert moved_line(b"a\nb\nc", b"z\na\nb\nc", 2) == 3
    assert moved_line(b"a\nb\nc", b"b\nb", 2) is None
    m = {"tests": ["TestA", "TestB", "TestC"], "failed_alone": ["TestC"],
         "lines": {"f.go": {"3": ["TestA"], "4": ["TestA", "TestC"]}}}
    assert tests_for(m, "f.go", 3) == "^(TestA)$"
    assert tests_for(m, "f.go", 4) == ""  # a test that fails alone: run all
    assert tests_for(m, "f.go", 5) == ""  # no test recorded: run all
    print("mutation_tests.py: self-test passed", file=sys.stderr)


def main(argv):
    if argv[1:2] == ["map"] and len(argv) == 5:
        build_map(argv[2], argv[3], argv[4])
    elif argv[1:2] == ["select"] and len(argv) == 4:
        print(select(argv[2], argv[3]))
    elif argv[1:2] == ["recheck"] and len(argv) == 7:
        recheck(*argv[2:])
    elif argv[1:2] == ["run"] and len(argv) == 8:
        run(*argv[2:7], float(argv[7]))
    elif argv[1:2] == ["selftest"]:
        selftest()
    elif argv[1:2] == ["table"] and len(argv) >= 4:
        table(argv[2], argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
