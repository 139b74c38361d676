#!/usr/bin/env bash
# Installs the independent clients that web/clienttest runs against the served site, pinned, from
# the package registries only, into a folder cached outside the clone and keyed by a hash of their
# pins (scripts/tools/*); prints the folder. Like scripts/pyenv.sh, and apart from it: these are not
# the harness's packages (internal/harness/requirements.txt keys the multi-GB torch env).
#   venv/          schemathesis, feedparser, jsonschema, and ruff (the harness's linter: make lint-python) (PyPI;
#                  tools/requirements.txt, every version pinned)
#   node_modules/  axe-core (npm; tools/package.json)
#   vnu/           the Nu Html Checker, nu.validator:validator and its dependencies (Maven Central; tools/pom.xml)
# and, from Debian, rsvg-convert (librsvg2-bin) and a Java runtime, when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pins="$root/scripts/tools"
hash=$(cat "$0" "$pins/requirements.txt" "$pins/package.json" "$pins/pom.xml" | sha256sum | cut -c1-16)
base="${SCANNER_CACHE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/torchtpu-scanner}"
dir="$base/tools-$hash"
if [ -f "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi
need=()
command -v rsvg-convert >/dev/null 2>&1 || need+=(librsvg2-bin)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "tools.sh: please install ${need[*]} (apt-get install ${need[*]}); root is needed" >&2
    exit 1
  fi
  echo "tools.sh: installing ${need[*]} from Debian" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
mkdir -p "$base"
exec 9>"$base/.tools-lock"
flock 9
if [ -f "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi
echo "tools.sh: installing the clients into $dir" >&2
rm -rf "$dir"
mkdir -p "$dir"
py="${PYTHON:-python3}"
"$py" -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install --quiet --progress-bar off --no-deps -r "$pins/requirements.txt" >&2
"$dir/venv/bin/python" -m pip check >&2
cp "$pins/package.json" "$dir/"
(cd "$dir" && npm install --silent --no-audit --no-fund --ignore-scripts --save-exact >&2)
mvn -B -q -f "$pins/pom.xml" -Dmaven.repo.local="$base/m2" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$dir/vnu" >&2
touch "$dir/.complete"
echo "$dir"
