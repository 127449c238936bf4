#!/bin/bash
# usage: N=40 bench/stream_isolation_loop.sh <peregrine-server> <peregrine-bench>   (bench/RESULTS.md, session 18)
# Reproduces the stall found beside a saturating stream in the pinned isolation placement
# (PINNED=1 of bench/stream_isolation.sh): A (js-async-mem, owner 0) publishes throughout on
# cpu 1 while B (js-file, owner 1) runs N short closed-loop rounds on cpu 0, each a fresh
# connection, stream delete and create, 2,000 sync publishes and a delete. A round that gets
# no reply within nats.c's 5 s prints FAIL with the request that timed out. Connections go to
# shards round-robin and each B round opens two (its own, then one for the report's INFO), so
# B's own connection stays on shard 0 once a throwaway one has put A on shard 1.
bin=$1; bench=$2; n=${N:-40}
port=$((16900 + RANDOM % 500)); dir=$(mktemp -d /tmp/pg-abl.XXXX)
$bin -js -sd "$dir" --js_threads 2 --consumer_threads 1 --shards 2 --cpus 0,1,1,0,0 -p $port > "$dir/log" 2>&1 &
srv=$!
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
throwaway() { (exec 3<>/dev/tcp/127.0.0.1/$port; head -c 1 <&3 > /dev/null) 2>/dev/null; }
throwaway  # connection 1: shard 0
taskset -c 1 $bench --url nats://127.0.0.1:$port --quiet --json --mode js-async-mem --subject a \
  --count 300000000 --warmup 0 > "$dir/a.json" 2>&1 &
apid=$!; sleep 1.5  # A: connection 2, shard 1
fails=0
for i in $(seq 1 "$n"); do
  out=$(taskset -c 0 $bench --url nats://127.0.0.1:$port --quiet --json --mode js-file --subject b --closed \
        --count 2000 --warmup 10)
  line=$(python3 -c "import json,sys; r=json.loads(sys.argv[1]); print('ok' if r['ok'] else 'FAIL', r['error'] or '', 'sent', r['sent'], 'p50_us', r['p50_us'], 'p99_us', r['p99_us'], 'max_us', r['max_us'])" "$out")
  echo "round $i: $line"
  case $line in FAIL*) fails=$((fails + 1)) ;; esac
done
kill -0 $apid 2>/dev/null || echo "A stopped early: $(grep -o '"error":"[^"]*"' "$dir/a.json")"
kill $apid 2>/dev/null; wait $apid 2>/dev/null
kill $srv; wait $srv 2>/dev/null
echo "$fails of $n rounds failed"
rm -rf "$dir"
