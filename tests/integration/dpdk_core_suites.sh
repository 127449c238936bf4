#!/usr/bin/env bash
# Runs an unmodified integration test binary (argv) against peregrine-server on the DPDK
# transport: in a private network namespace the server's user-space stack owns 127.0.0.1 on a
# net_tap device, so the harness's clients (libnats, raw sockets) reach it through the tap,
# never through the kernel's loopback, which stays down. Every server the harness starts
# gets the DPDK keys through PEREGRINE_EXTRA_CONF; a watcher gives each new tap its kernel
# side (127.0.0.2/8, route_localnet) while the harness waits for the port.
# Exit 77 (skipped) with the reason when DPDK, /dev/net/tun or namespaces are missing.
set -uo pipefail

if [[ -z ${PG_DPDK_SUITE_INNER:-} ]]; then
  case ${PEREGRINE_HAVE_DPDK:-0} in
    1) ;;
    sanitized) echo "SKIP: not run in sanitizer builds (the EAL's memory setup is not validated under ASan)"; exit 77 ;;
    *) echo "SKIP: peregrine-server was built without DPDK"; exit 77 ;;
  esac
  [[ -r /dev/net/tun && -w /dev/net/tun ]] || { echo "SKIP: /dev/net/tun is missing or not accessible"; exit 77; }
  command -v ip >/dev/null || { echo "SKIP: the ip tool (iproute2) is missing"; exit 77; }
  unshare -n true 2>/dev/null || { echo "SKIP: cannot create a network namespace (needs root/CAP_SYS_ADMIN)"; exit 77; }
  exec env PG_DPDK_SUITE_INNER=1 unshare -n "$0" "$@"
fi

# 127.0.0.0/8 on a real device: allowed only with route_localnet; binding the harness's
# "free port" probe to 127.0.0.1 needs ip_nonlocal_bind since no device owns the address.
sysctl -qw net.ipv4.ip_nonlocal_bind=1 net.ipv4.conf.all.route_localnet=1 \
  net.ipv4.conf.default.route_localnet=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 ||
  { echo "SKIP: cannot set the namespace's sysctls"; exit 77; }
iface=pgdpdk0
(
  while :; do
    if ip link show "$iface" >/dev/null 2>&1 && ! ip -4 addr show dev "$iface" | grep -q 127.0.0.2; then
      ip addr add 127.0.0.2/8 dev "$iface" 2>/dev/null && ip link set "$iface" up 2>/dev/null
    fi
    sleep 0.02
  done
) &
watcher=$!
trap 'kill $watcher 2>/dev/null' EXIT
export PEREGRINE_EXTRA_CONF="transport: dpdk
dpdk_ip: \"127.0.0.1\"
dpdk_netmask: \"255.0.0.0\"
dpdk_eal: \"-l 0 --no-huge -m 64 --no-pci --no-shconf --no-telemetry --log-level=error --file-prefix=pgs$$ --vdev=net_tap0,iface=$iface\""
# PG_DPDK_SUITE_SHARDS=N / PG_DPDK_SUITE_QUEUES=M: N shards on M queue pairs (M < N: by
# software steering).
if [[ -n ${PG_DPDK_SUITE_SHARDS:-} ]]; then
  PEREGRINE_EXTRA_CONF+="
shards: $PG_DPDK_SUITE_SHARDS"
fi
if [[ -n ${PG_DPDK_SUITE_QUEUES:-} ]]; then
  PEREGRINE_EXTRA_CONF+="
dpdk_queues: $PG_DPDK_SUITE_QUEUES"
fi
"$@"
