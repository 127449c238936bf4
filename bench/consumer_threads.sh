#!/bin/bash
# Pull-consumer throughput and ack latency per placement (bench/RESULTS.md, session 8):
# the default (JetStream on shard 0), --js_threads 2, and --js_threads 2 --consumer_threads 1.
# Each placement runs every mode ROUNDS times, alternating, on a fresh store; prints one line
# per run with the server's CPU over the run.
# usage: bench/consumer_threads.sh <server-binary>   (from the repository root, after a build)
bin=$1
rounds=${ROUNDS:-2}
count=${COUNT:-20000}
bench=${PGBENCH:-build-test/bench/e2e/peregrine-bench}
modes=("js-fetch --batch 100 --ack each" "js-fetch --batch 1 --ack each" "js-ack-rtt")
placements=("" "--js_threads 2" "--js_threads 2 --consumer_threads 1")
for round in $(seq "$rounds"); do
  for mode in "${modes[@]}"; do
    for place in "${placements[@]}"; do
      port=$((15400 + RANDOM % 500))
      dir=$(mktemp -d /tmp/pg-cthreads.XXXX)
      # shellcheck disable=SC2086
      $bin -js -sd "$dir" $place -p $port > "$dir/log" 2>&1 &
      pid=$!
      for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
      t0=$(awk '{print $14+$15}' /proc/$pid/stat)
      # shellcheck disable=SC2086
      out=$($bench --url nats://127.0.0.1:$port --quiet --json --mode $mode --count "$count" --warmup 500)
      t1=$(awk '{print $14+$15}' /proc/$pid/stat)
      kill $pid
      wait $pid 2>/dev/null
      python3 - "${place:-default}" "$mode" "$((t1 - t0))" "$out" <<'PY'
import json, sys
place, mode, ticks, out = sys.argv[1:]
try:
    j = json.loads(out)
except ValueError:
    print(f"{place:40} {mode:32} no result: {out[:200]}")
    sys.exit(0)
r = j.get("result", j)
print(f"{place:40} {mode:32} cpu_ms {int(ticks) * 10:6} msgs/s {r.get('msgs_per_s')} "
      f"p50_us {r.get('p50_us')} p99_us {r.get('p99_us')}")
PY
      rm -rf "$dir"
    done
  done
done
