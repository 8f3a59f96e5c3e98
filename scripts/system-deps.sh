#!/usr/bin/env bash
# Debian packages the tests and bench scripts need: chromium (browser tests), bubblewrap
# (the sandbox), wrk (bench/load.py), iproute2 (network namespaces of the many-host test).
# Installs the missing ones when running as root with apt-get; otherwise says what is missing
# and leaves it to the person (the tests that need them skip, or fail under CI=true).
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "missing system packages: ${missing[*]} (install them with your package manager)" >&2
fi
