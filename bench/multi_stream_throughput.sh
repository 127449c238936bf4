#!/usr/bin/env bash
# Aggregate async publish throughput over N streams, each with its own publisher process
# (peregrine-bench js-async-mem, --stream S1..SN), under each server placement given. Prints
# each publisher's rate and the sum. Issue 10's "aggregate throughput over 4 streams with 2
# owner threads" (bench/RESULTS.md).
#   bench/multi_stream_throughput.sh <server> <bench> [placement ...]
#   e.g. ... build-test/src/peregrine-server build-test/bench/e2e/peregrine-bench "" "--js_threads 2"
# Env: STREAMS (4), COUNT per publisher (400000), STORAGE (memory|file), PORT (14556).
set -euo pipefail
server=${1:?server binary}
bench=${2:?peregrine-bench binary}
shift 2
[ $# -gt 0 ] || set -- "" "--js_thread" "--js_threads 2" "--js_threads 4"
streams=${STREAMS:-4}
count=${COUNT:-400000}
port=${PORT:-14556}
mode=js-async-mem
[ "${STORAGE:-memory}" = file ] && mode=js-async-file
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
for placement in "$@"; do
  rm -rf "$work/sd"
  # shellcheck disable=SC2086  # the placement is flags
  "$server" -js -sd "$work/sd" -a 127.0.0.1 -p "$port" $placement >"$work/server.log" 2>&1 &
  spid=$!
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  pids=()
  for i in $(seq "$streams"); do
    "$bench" --url "nats://127.0.0.1:$port" --mode "$mode" --count "$count" --duration 30 --stream "S$i" \
      --subject "s$i" --json --quiet >"$work/r$i.json" &
    pids+=($!)
  done
  wait "${pids[@]}"
  kill "$spid"; wait "$spid" 2>/dev/null || true
  python3 - "$placement" "$work" "$streams" <<'PY'
import json, sys
placement, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rates = []
for i in range(1, n + 1):
    j = json.load(open(f"{work}/r{i}.json"))
    if not j.get("ok"):
        print(f"{placement or 'default'}: S{i} failed: {j.get('error')}")
        sys.exit(1)
    rates.append(j["msgs_per_s"])
print(f"{placement or 'default':16} sum {sum(rates):>10,.0f} msgs/s   each: " + ", ".join(f"{r:,.0f}" for r in rates))
PY
done
