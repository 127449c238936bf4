#!/usr/bin/env bash
# Does HTTP monitoring stall the client data path? Request/reply round trips (peregrine-bench rr, closed loop)
# with 500 idle connections of 10 subscriptions each, first alone, then while another
# process fetches /connz?subs=1 (all 500 connections with their subscriptions) in a loop.
# Usage: bench/monitor_impact.sh <server binary> [peregrine-bench] [count]
set -euo pipefail
bin=${1:?server binary}
bench=${2:-build-release/bench/e2e/peregrine-bench}
count=${3:-20000}
work=$(mktemp -d)
trap 'kill $holder $srv 2>/dev/null || true; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000)); mon=$((port + 1))
"$bin" -a 127.0.0.1 -p $port -m $mon >"$work/log" 2>&1 &
srv=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$mon/healthz" >/dev/null && break; sleep 0.05; done
python3 - "$port" >"$work/holder.log" 2>&1 <<'PY' &
import socket, sys, time
socks = []
for i in range(500):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.recv(4096)
    s.sendall(b'CONNECT {"verbose":false}\r\n' + b''.join(b'SUB idle.%d.%d %d\r\n' % (i, j, j) for j in range(10)))
    socks.append(s)
time.sleep(3600)
PY
holder=$!
for _ in $(seq 200); do
  n=$(curl -s "http://127.0.0.1:$mon/varz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["connections"])')
  [ "$n" -ge 500 ] && break; sleep 0.05
done
run() { "$bench" --url nats://127.0.0.1:$port --mode rr --closed --count "$count" --json --quiet; }
field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d['$2'])" "$1"; }
base=$(run)
: >"$work/fetches"
( while :; do curl -s "http://127.0.0.1:$mon/connz?subs=1&limit=1024" >/dev/null && echo >>"$work/fetches"; done ) &
poller=$!
loaded=$(run)
kill $poller; wait $poller 2>/dev/null || true
bytes=$(curl -s "http://127.0.0.1:$mon/connz?subs=1&limit=1024" | wc -c)
echo "server: $bin"
echo "connz?subs=1 body: $bytes bytes, fetched $(wc -l <"$work/fetches") times during the loaded run"
printf '%-22s %10s %10s %10s %10s %10s %5s\n' run p50_us p99_us p999_us max_us req_per_s ok
for r in base loaded; do
  j=${!r}
  printf '%-22s %10s %10s %10s %10s %10s %5s\n' "$r" "$(field "$j" p50_us)" "$(field "$j" p99_us)" "$(field "$j" p999_us)" \
    "$(field "$j" max_us)" "$(field "$j" msgs_per_s)" "$(field "$j" ok)"
done
