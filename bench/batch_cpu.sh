#!/usr/bin/env bash
# Batch ingest throughput and the server's CPU per message (bench/RESULTS.md, "Session 6:
# batch throughput"). One fresh server per run (store in a temp dir); server CPU is
# utime+stime from /proc/<pid>/stat around the measured run (10 ms ticks), divided by the
# messages the run measured.
#
#   bench/batch_cpu.sh [peregrine-server] [peregrine-bench]
#
# Knobs (env): COUNT=1000000 (memory; file runs use COUNT/2) BATCH=1000 SIZE=16 PIPELINE=8
#              RUNS="js-batch:memory js-batch:file js-fast:memory js-fast:file js-async-mem js-async-file"
#              ROUNDS=1 PG_ARGS= (extra server flags)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
server=${1:-$repo/build-test/src/peregrine-server}
bench=${2:-$repo/build-test/bench/e2e/peregrine-bench}
COUNT=${COUNT:-1000000}
BATCH=${BATCH:-1000}
SIZE=${SIZE:-16}
PIPELINE=${PIPELINE:-8}
ROUNDS=${ROUNDS:-1}
RUNS=${RUNS:-js-batch:memory js-batch:file js-fast:memory js-fast:file js-async-mem js-async-file}
tck=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pg-batch-cpu.XXXXXX")
pid=
cleanup() {
  if [[ -n $pid ]]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

printf '%-16s %-8s %12s %14s %10s\n' mode storage msgs/s server_us/msg ok
for round in $(seq "$ROUNDS"); do
  for run in $RUNS; do
    mode=${run%%:*}
    storage=memory
    [[ $run == *:* ]] && storage=${run#*:}
    [[ $mode == js-async-file ]] && storage=file
    count=$COUNT
    [[ $storage == file ]] && count=$((COUNT / 2))
    extra=()
    case $mode in
      js-batch|js-fast) extra=(--batch "$BATCH" --pipeline "$PIPELINE" --storage "$storage") ;;
      *) count=$((count * 3 / 10)) ;;  # async publish (256 in flight) is slower: a shorter run
    esac
    args=(--mode "$mode" --count "$count" --size "$SIZE" --warmup 0 --json --quiet "${extra[@]}")
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    rm -rf "$work/js"
    # shellcheck disable=SC2086
    "$server" -a 127.0.0.1 -p "$port" --js --sd "$work/js" ${PG_ARGS:-} >"$work/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
    before=$(cpu_ticks "$pid")
    out=$("$bench" --url "nats://127.0.0.1:$port" "${args[@]}" || true)
    after=$(cpu_ticks "$pid")
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
    python3 - "$out" "$mode" "$storage" "$before" "$after" "$tck" <<'PY'
import json, sys
out, mode, storage, before, after, tck = sys.argv[1:]
try: j = json.loads(out)
except ValueError: j = {"ok": False, "msgs_per_s": 0, "received": 0}
n = j.get("received") or j.get("sent") or 0
us = (int(after) - int(before)) / int(tck) * 1e6 / n if n else float("nan")
print(f"{mode:<16} {storage:<8} {j.get('msgs_per_s', 0):>12.0f} {us:>14.2f} {str(j.get('ok')).lower():>10}")
if not j.get("ok"): print("   ", out[:300], file=sys.stderr)
PY
  done
done
