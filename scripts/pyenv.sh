#!/usr/bin/env bash
# Creates (or reuses) the harness's Python environment, cached outside the clone
# and keyed by a hash of requirements.txt. Prints the interpreter's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
req="$root/internal/harness/requirements.txt"
hash=$(sha256sum "$req" | cut -c1-16)
base="${SCANNER_CACHE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/torchtpu-scanner}"
venv="$base/venv-$hash"
if [ -x "$venv/bin/python" ] && [ -f "$venv/.complete" ]; then
  echo "$venv/bin/python"
  exit 0
fi
mkdir -p "$base"
# Two makes at once (make run in one terminal, make test in another) must
# not build the same environment twice: the second waits for the first.
exec 9>"$base/.lock"
flock 9
if [ -x "$venv/bin/python" ] && [ -f "$venv/.complete" ]; then
  echo "$venv/bin/python"
  exit 0
fi
# The pins (numpy, torch, transformers, torch-tpu) need Python 3.11 or newer. $PYTHON when set, else the
# first of python3, python3.14 ... python3.11 that is new enough (Ubuntu 22.04, a TPU VM's, has 3.10 as
# python3 and python3.11 as a package). Refuse an older one here, in one line, not deep inside pip.
new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
py="${PYTHON:-}"
if [ -z "$py" ]; then
  for c in python3 python3.14 python3.13 python3.12 python3.11; do
    if command -v "$c" >/dev/null 2>&1 && new_enough "$c"; then py=$c; break; fi
  done
  py="${py:-python3}"
fi
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || ver=""
if [ -z "$ver" ] || ! new_enough "$py"; then
  echo "pyenv: the harness needs Python >= 3.11, but ${py} is ${ver:-not a working Python}: install python3.11 and python3.11-venv (Ubuntu 22.04: sudo apt-get install python3.11 python3.11-venv), or name a newer interpreter with PYTHON=" >&2
  exit 1
fi
if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "pyenv: ${py} (Python ${ver}) cannot create a virtual environment: install python${ver}-venv (Debian/Ubuntu: sudo apt-get install python${ver}-venv)" >&2
  exit 1
fi
echo "pyenv: creating $venv (first run downloads torch, several GB)" >&2
rm -rf "$venv.tmp"
"$py" -m venv "$venv.tmp"
"$venv.tmp/bin/python" -m pip install --quiet --upgrade pip >&2
"$venv.tmp/bin/python" -m pip install --quiet --progress-bar off -r "$req" >&2
# A venv is not relocatable: rebuild scripts point at .tmp, so move by recreating the path.
rm -rf "$venv"
mv "$venv.tmp" "$venv"
# Fix the shebangs and activate scripts that still name the temporary path.
grep -rlI --null "$venv.tmp" "$venv/bin" 2>/dev/null | xargs -0 -r sed -i "s#$venv.tmp#$venv#g"
touch "$venv/.complete"
echo "$venv/bin/python"
