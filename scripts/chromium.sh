#!/usr/bin/env bash
# Installs Debian's chromium (for the browser tests), wrk (for make bench) and tcmalloc (which the runner
# preloads into the harness; a harness test checks the runtime records it) when missing.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
/sbin/ldconfig -p 2>/dev/null | grep -q 'libtcmalloc_minimal\.so\.4' || need+=(libtcmalloc-minimal4)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "chromium.sh: please install ${need[*]} (apt-get install ${need[*]}); root is needed" >&2
  exit 1
fi
echo "installing ${need[*]} from Debian" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
