#!/usr/bin/env bash
# Installs what Peregrine needs to build, test and benchmark: Debian packages and the npm
# packages of the nats.js tests. Safe to run again: it installs only what is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

debs=(meson ninja-build pkg-config cmake g++
      liburing-dev libmimalloc-dev libfmt-dev nlohmann-json3-dev libcli11-dev libxxhash-dev
      libgtest-dev libgmock-dev libbenchmark-dev libnats-dev libmicrohttpd-dev nats-server python3)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm may come from elsewhere than Debian; install Debian's only when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# The libFuzzer build (meson -Dfuzzers=true) needs clang; ask for it with PEREGRINE_WITH_FUZZ=1.
if [ "${PEREGRINE_WITH_FUZZ:-0}" = 1 ]; then
  for p in clang libclang-rt-14-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# DPDK is optional (the kernel transports need none of it); install it when asked with
# PEREGRINE_WITH_DPDK=1 (CI does: the dpdk_transport test then runs instead of skipping).
# About 230 packages, ~2 min on the dev VM. A failure only warns: the build works without it.
if [ "${PEREGRINE_WITH_DPDK:-0}" = 1 ] &&
   ! dpkg-query -W -f='${Status}' libdpdk-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "deps: installing libdpdk-dev"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  { $sudo_cmd apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq libdpdk-dev >/dev/null; } ||
    echo "deps: WARNING: libdpdk-dev could not be installed; building without the DPDK transport"
fi

if [ -f "$here/tests/e2e/package-lock.json" ] && [ ! -d "$here/tests/e2e/node_modules/@nats-io" ]; then
  echo "deps: npm ci in tests/e2e"
  (cd "$here/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error)
fi
