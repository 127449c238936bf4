#!/usr/bin/env bash
# Idle CPU with many small streams, Peregrine and nats-server side by side: N file streams,
# each with one durable consumer and one message (bench/many_streams.py create), then the
# server's utime+stime over 10 s of idling, printed as % of one core.
#   bench/many_streams_idle.sh [peregrine-server] [nats-server]   (N=1000, PORT=a free one)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PG=${1:-$here/../build-test/src/peregrine-server}
NATS=${2:-$(command -v nats-server || echo /usr/sbin/nats-server)}
N=${N:-1000}
PORT=${PORT:-$((20000 + $$ % 10000))}
BASE=$(mktemp -d /tmp/pg-idle.XXXXXX)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for srv in peregrine nats; do
  rm -rf "$BASE/store"
  case $srv in
    peregrine) "$PG" --js --sd "$BASE/store" -p "$PORT" >"$BASE/$srv.log" 2>&1 & ;;
    nats) "$NATS" -js -sd "$BASE/store" -p "$PORT" >"$BASE/$srv.log" 2>&1 & ;;
  esac
  pid=$!
  python3 "$here/many_streams.py" ready "127.0.0.1:$PORT" 0 30 "$(date +%s.%N)" >/dev/null
  python3 "$here/many_streams.py" create "127.0.0.1:$PORT" "$N" >/dev/null
  sleep 2
  t0=$(ticks "$pid")
  sleep 10
  t1=$(ticks "$pid")
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  # clock ticks are 10 ms: ticks over 10 s = percent of one core
  echo "$srv streams=$N idle_cpu_pct=$((t1 - t0))"
done
rm -rf "$BASE"
