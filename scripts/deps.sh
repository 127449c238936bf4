#!/usr/bin/env bash
# Installs what Peregrine needs to build, test and benchmark: Debian packages and the npm
# packages of the nats.js tests. Safe to run again: it installs only what is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

debs=(meson ninja-build pkg-config cmake g++
      liburing-dev libmimalloc-dev libfmt-dev nlohmann-json3-dev libcli11-dev libxxhash-dev
      libgtest-dev libgmock-dev libbenchmark-dev libnats-dev libmicrohttpd-dev nats-server python3
      libssl-dev openssl
      libsodium-dev libcrypt-dev)
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
# Replication (src/repl) uses cowsql raft's raft_step API, new in 0.18; bookworm has 0.15, so
# libraft-dev comes from bookworm-backports on this machine's own Debian mirror.
raft_debs=(libraft-dev)
raft_missing=()
for p in "${raft_debs[@]}"; do
  v=$(dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null | sed -n 's/^install ok installed //p' || true)
  dpkg --compare-versions "${v:-0}" ge 0.22 || raft_missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "${#raft_missing[@]}" -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # The mirror this machine already uses (deb822 URIs: line or a classic deb line).
    mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*debian\)\/\{0,1\}$/\1/p' \
               /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' \
                                   /etc/apt/sources.list 2>/dev/null)
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
    echo "deps: adding bookworm-backports from $mirror"
    printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n' \
      "$mirror" /usr/share/keyrings/debian-archive-keyring.gpg |
      $sudo_cmd tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
  fi
  echo "deps: installing ${raft_missing[*]} from bookworm-backports"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq -t bookworm-backports \
    "${raft_missing[@]}" >/dev/null
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
