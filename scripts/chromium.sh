#!/usr/bin/env bash
# Installs Debian's chromium (for the browser tests) and wrk (for make bench) when missing.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "chromium.sh: please install ${need[*]} (apt-get install ${need[*]}); root is needed" >&2
  exit 1
fi
echo "installing ${need[*]} from Debian" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
