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
py="${PYTHON:-python3}"
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
