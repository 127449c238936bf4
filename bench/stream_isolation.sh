#!/bin/bash
# usage: bench/stream_isolation.sh <peregrine-server> <peregrine-bench>   (bench/RESULTS.md, session 9)
# A = PGBENCH_MEM (owner 0 of 2), B = PGBENCH_FILE (owner 1): js-async-mem on A, js-file on B.
# B's sync publish p99 alone vs beside a saturating async publisher on A (--js_threads 2 --consumer_threads 1).
bin=$1; bench=$2
port=$((16400 + RANDOM % 500)); dir=$(mktemp -d /tmp/pg-ab.XXXX)
$bin -js -sd "$dir" --js_threads 2 --consumer_threads 1 -p $port > "$dir/log" 2>&1 &
pid=$!
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in alone beside alone2; do
  if [ "$run" = beside ]; then
    $bench --url nats://127.0.0.1:$port --quiet --json --mode js-async-mem --subject a --count 2000000 --warmup 0 > "$dir/a.json" 2>&1 &
    apid=$!; sleep 1
  fi
  out=$($bench --url nats://127.0.0.1:$port --quiet --json --mode js-file --subject b --closed --count 5000 --warmup 200)
  python3 -c "import json,sys; j=json.loads(sys.argv[2]); r=j.get('result',j); print(sys.argv[1], 'B sync: p50_us', r.get('p50_us'), 'p99_us', r.get('p99_us'), 'msgs/s', r.get('msgs_per_s'))" "$run" "$out"
  if [ "$run" = beside ]; then
    if kill -0 $apid 2>/dev/null; then echo "A still publishing when B finished (saturating throughout)"; kill $apid; fi
    wait $apid 2>/dev/null
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j.get('result',j); print('A async:', r.get('msgs_per_s'), 'msgs/s')" "$dir/a.json" 2>/dev/null || echo "A: no report (killed while running)"
  fi
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
kill $pid; wait $pid 2>/dev/null; rm -rf "$dir"
