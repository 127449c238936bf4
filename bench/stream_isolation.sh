#!/bin/bash
# usage: bench/stream_isolation.sh <peregrine-server> <peregrine-bench>   (bench/RESULTS.md, session 9)
# A = PGBENCH_MEM (owner 0 of 2), B = PGBENCH_FILE (owner 1): js-async-mem on A, js-file on B.
# B's sync publish p99 alone vs beside a saturating async publisher on A (--js_threads 2 --consumer_threads 1).
# Pinned (PINNED=1, needs 2+ cpus): two client shards and each stream's path on a cpu of its
# own: shard 0, owner 1 (B's) and the consumer thread on cpu 0 with B's client, shard 1 and
# owner 0 (A's) on cpu 1 with A's client: a core per path, as on a bigger host. Connections
# go to shards round-robin and each bench run opens two (its own, and one at the end for the
# report's server INFO), so a throwaway connection before A puts A on shard 1 and B on 0.
bin=$1; bench=$2
flags="--js_threads 2 --consumer_threads 1"; a_pin=(); b_pin=()
if [ "${PINNED:-0}" = 1 ]; then
  flags="$flags --shards 2 --cpus 0,1,1,0,0"; a_pin=(taskset -c 1); b_pin=(taskset -c 0)
fi
port=$((16400 + RANDOM % 500)); dir=$(mktemp -d /tmp/pg-ab.XXXX)
$bin -js -sd "$dir" $flags -p $port > "$dir/log" 2>&1 &
pid=$!
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in alone beside alone2; do
  if [ "$run" = beside ]; then
    [ "${PINNED:-0}" = 1 ] && (exec 3<>/dev/tcp/127.0.0.1/$port; head -c 1 <&3 > /dev/null) 2>/dev/null
    "${a_pin[@]}" $bench --url nats://127.0.0.1:$port --quiet --json --mode js-async-mem --subject a --count 2000000 --warmup 0 > "$dir/a.json" 2>&1 &
    apid=$!; sleep 1
  fi
  out=$("${b_pin[@]}" $bench --url nats://127.0.0.1:$port --quiet --json --mode js-file --subject b --closed --count 5000 --warmup 200)
  python3 -c "import json,sys; j=json.loads(sys.argv[2]); r=j.get('result',j); print(sys.argv[1], 'B sync: p50_us', r.get('p50_us'), 'p99_us', r.get('p99_us'), 'msgs/s', r.get('msgs_per_s'), '' if r.get('ok', True) else 'FAILED: ' + str(r.get('error')))" "$run" "$out"
  if [ "$run" = beside ]; then
    if kill -0 $apid 2>/dev/null; then echo "A still publishing when B finished (saturating throughout)"; kill $apid; fi
    wait $apid 2>/dev/null
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j.get('result',j); print('A async:', r.get('msgs_per_s'), 'msgs/s')" "$dir/a.json" 2>/dev/null || echo "A: no report (killed while running)"
  fi
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
kill $pid; wait $pid 2>/dev/null; rm -rf "$dir"
