#!/usr/bin/env bash
# Request/reply and pub->sub latency over the DPDK transport beside the kernel socket path,
# in one run: peregrine-bench (a kernel libnats client) against peregrine-server on
#   kernel  - io_uring transport on loopback
#   tap     - DPDK net_tap vdev (--no-huge), the client on the tap's kernel side
#   afpkt   - DPDK net_af_packet on a veth pair (peer offloads off), the client on the peer
# Everything runs inside a private network namespace (unshare -n), so it needs root and
# /dev/net/tun. The server shard is pinned to SERVER_CPU, the client to CLIENT_CPU.
#
#   bench/dpdk_compare.sh [path/to/peregrine-server]
# Env: PEREGRINE_BENCH or PG_BENCH (peregrine-bench binary), COUNT=10000 WARMUP=1000 SIZE=128 MODES="rr latency"
#      PATHS="kernel tap afpkt" SERVER_CPU=1 CLIENT_CPU=0 SERVER_ARGS="--poll busy" (every server)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
server=${1:-${PEREGRINE_BIN:-$repo/build-release/src/peregrine-server}}
bench_bin=${PEREGRINE_BENCH:-${PG_BENCH:-}}
if [[ -z $bench_bin ]]; then
  for b in "$repo"/build-release/bench/e2e/peregrine-bench "$repo"/build*/bench/e2e/peregrine-bench; do
    if [[ -x $b ]]; then bench_bin=$b; break; fi
  done
fi
[[ -x $server ]] || { echo "dpdk_compare.sh: no server binary at $server" >&2; exit 2; }
[[ -n $bench_bin && -x $bench_bin ]] || { echo "dpdk_compare.sh: peregrine-bench not found (set PEREGRINE_BENCH)" >&2; exit 2; }

if [[ -z ${PG_DPDK_BENCH_INNER:-} ]]; then
  exec env PG_DPDK_BENCH_INNER=1 unshare -n "$0" "$server"
fi

COUNT=${COUNT:-10000}
WARMUP=${WARMUP:-1000}
SIZE=${SIZE:-128}
MODES=${MODES:-rr latency}
PATHS=${PATHS:-kernel tap afpkt}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
PORT=4222
work=$(mktemp -d "${TMPDIR:-/tmp}/pg-dpdk-bench.XXXXXX")
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; true; }
trap cleanup EXIT
ip link set lo up
eal="-l $SERVER_CPU --no-huge -m 128 --no-pci --no-shconf --no-telemetry --log-level=error --file-prefix=pgb$$"

start() {  # name, server args...
  local name=$1; shift
  # shellcheck disable=SC2086
  "$server" -p $PORT --cpus "$SERVER_CPU" ${SERVER_ARGS:-} "$@" >"$work/$name.log" 2>&1 &
  pid=$!
}
wait_port() {  # host
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/$1/$PORT") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "server did not come up; log:" >&2; cat "$work"/*.log >&2; exit 1
}
wait_iface() { for _ in $(seq 200); do ip link show "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; return 1; }
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

declare -A res
bench() {  # path, host
  for m in $MODES; do
    local out
    out=$(taskset -c "$CLIENT_CPU" "$bench_bin" --quiet --json --url "nats://$2:$PORT" --mode "$m" \
          --count "$COUNT" --warmup "$WARMUP" --size "$SIZE" --closed)
    res[$1.$m]=$out
  done
}

for p in $PATHS; do
  case $p in
    kernel)
      start kernel --transport uring -a 127.0.0.1
      wait_port 127.0.0.1; bench kernel 127.0.0.1; stop ;;
    tap)
      start tap --transport dpdk "--dpdk_eal=$eal --vdev=net_tap0,iface=pgb0" --dpdk_ip 10.212.0.2
      wait_iface pgb0
      ip addr add 10.212.0.1/24 dev pgb0; ip link set pgb0 up
      wait_port 10.212.0.2; bench tap 10.212.0.2; stop ;;
    afpkt)
      # The kernel would hand af_packet GSO frames and partial checksums: offloads off on the peer.
      ip link add pgvc0 type veth peer name pgvd0
      ethtool -K pgvc0 tx off tso off gso off sg off >/dev/null 2>&1 || true
      ip link set pgvd0 up; ip addr add 10.213.0.1/24 dev pgvc0; ip link set pgvc0 up
      start afpkt --transport dpdk "--dpdk_eal=$eal --vdev=net_af_packet0,iface=pgvd0" --dpdk_ip 10.213.0.2
      wait_port 10.213.0.2; bench afpkt 10.213.0.2; stop
      ip link del pgvc0 ;;
  esac
done

field() {  # top-level key of the JSON report (later keys of the same name are nested)
  python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null
}
printf '\n%-8s %-8s %10s %10s %10s %10s %12s\n' path mode p50_us p90_us p99_us p99.9_us msgs/s
for m in $MODES; do
  for p in $PATHS; do
    r=${res[$p.$m]:-}
    [[ -n $r ]] || continue
    printf '%-8s %-8s %10s %10s %10s %10s %12s\n' "$p" "$m" "$(field "$r" p50_us)" "$(field "$r" p90_us)" \
      "$(field "$r" p99_us)" "$(field "$r" p999_us)" "$(field "$r" msgs_per_s)"
  done
done
echo
echo "size=$SIZE count=$COUNT warmup=$WARMUP server_cpu=$SERVER_CPU client_cpu=$CLIENT_CPU server_args='${SERVER_ARGS:-}' loadavg: $(cut -d' ' -f1-3 /proc/loadavg)"
