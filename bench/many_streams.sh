#!/usr/bin/env bash
# Many small streams, Peregrine and nats-server side by side (issue 15 item 7).
# For each N in $COUNTS and each server: a fresh store, N file streams each with one durable
# consumer and one 5-byte message (bench/many_streams.py), then RSS, disk use (du) and the
# start-up time of a restart until $JS.API.INFO answers with all N streams.
#   bench/many_streams.sh [peregrine-server] [nats-server]
#   cpu_ms/str: the server's utime + stime over the creates, per stream (wall time follows the load).
#   COUNTS="1000 10000" (default "1000"), BASE=/tmp/pg-many-streams-$$, PORT (default: a free one),
#   NOFILE=65536: raise the hard descriptor limit first (needs CAP_SYS_RESOURCE, which the
#   development VM's container lacks: there it stays 20,000, and nats-server 2.9.10, holding
#   ~2 descriptors per file stream, stops at ~9,994 streams)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PG=${1:-$here/../build-test/src/peregrine-server}
NATS=${2:-$(command -v nats-server || echo /usr/sbin/nats-server)}
COUNTS=${COUNTS:-1000}
BASE=${BASE:-/tmp/pg-many-streams-$$}
# Below the ephemeral range: a port the kernel hands out to outgoing connections may be taken
# again by one (another test's client) between the run and the restart.
PORT=${PORT:-$((20000 + $$ % 10000))}

# Both servers raise their soft descriptor limit to the hard one themselves; start them with it
# raised anyway. fds = ls /proc/PID/fd | wc -l after the creates and after the restart.
if [[ -n ${NOFILE:-} ]]; then ulimit -Hn "$NOFILE" && ulimit -Sn "$NOFILE" || true; fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "descriptor limit $(ulimit -n); $(uptime)"

start() {  # name store -> sets pid
  case $1 in
    peregrine) "$PG" --js --sd "$2" -p "$PORT" >"$BASE/$1.log" 2>&1 & ;;
    nats) "$NATS" -js -sd "$2" -p "$PORT" >"$BASE/$1.log" 2>&1 & ;;
  esac
  pid=$!
  sleep 0.2
  kill -0 "$pid" 2>/dev/null || { echo "$1 did not start:"; tail -3 "$BASE/$1.log"; exit 1; }
}
stop() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# utime + stime of the whole process, in clock ticks (a loaded box stretches wall time, not CPU).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

printf '%-10s %7s %14s %11s %9s %10s %11s %11s %7s %9s\n' server streams create_ms/str cpu_ms/str rss_MB disk_MB disk_KB/str startup_s fds fds_rest
for n in $COUNTS; do
  for srv in peregrine nats; do
    rm -rf "$BASE" && mkdir -p "$BASE"
    store=$BASE/store
    start "$srv" "$store"
    python3 "$here/many_streams.py" ready "127.0.0.1:$PORT" 0 30 "$(date +%s.%N)" >/dev/null
    made=$n
    cpu0=$(cpu_ticks "$pid")
    out=$(python3 "$here/many_streams.py" create "127.0.0.1:$PORT" "$n" || true)
    create=$(echo "$out" | awk '{print $2}')
    cpu=$(echo "($(cpu_ticks "$pid") - $cpu0) * 1000 / $(getconf CLK_TCK) / $n" | bc -l)
    if [[ $out == create_failed_at* ]]; then
      echo "$srv: $out" >&2
      made=$create  # streams 0..made-1 are complete; restart waits for those
      create="failed@$create"
    fi
    sleep 1  # let consumer state snapshots and flushes settle before measuring
    rss=$(rss_kb "$pid")
    fds=$(ls "/proc/$pid/fd" | wc -l)
    disk=$(du -sk "$store" | awk '{print $1}')
    stop
    launch=$(date +%s.%N)
    start "$srv" "$store"
    up=$(python3 "$here/many_streams.py" ready "127.0.0.1:$PORT" "$made" 600 "$launch" | awk '{print $2}')
    fds_rest=$(ls "/proc/$pid/fd" | wc -l)
    stop
    printf '%-10s %7d %14s %11.2f %9.1f %10.1f %11.1f %11s %7d %9d\n' "$srv" "$n" "$create" "$cpu" "$(echo "$rss/1024" | bc -l)" \
      "$(echo "$disk/1024" | bc -l)" "$(echo "$disk/$n" | bc -l)" "$up" "$fds" "$fds_rest"
  done
done
rm -rf "$BASE"
