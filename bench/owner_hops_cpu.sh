#!/bin/bash
# Server CPU across one peregrine-bench run with --js_threads 2, and what each JetStream owner
# handled (/metrics peregrine_jetstream_owner_messages_total). bench/RESULTS.md, session 7.
# usage: bench/owner_hops_cpu.sh <server-binary> <label> <peregrine-bench args...>
# (run from the repository root after building build-test)
bin=$1; label=$2; shift 2
port=$((14400 + RANDOM % 500)); http=$((port+1000))
dir=$(mktemp -d /tmp/pg-hops.XXXX)
$bin -js -sd $dir --js_threads 2 -p $port -m $http > $dir/log 2>&1 &
pid=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:$http/varz && break; sleep 0.1; done
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
${PGBENCH:-build-test/bench/e2e/peregrine-bench} --url nats://127.0.0.1:$port --quiet --json "$@" > $dir/out.json
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
o0=$(curl -s http://127.0.0.1:$http/metrics | grep '^peregrine_jetstream_owner_messages_total{owner="0"}' | awk '{print $2}')
o1=$(curl -s http://127.0.0.1:$http/metrics | grep '^peregrine_jetstream_owner_messages_total{owner="1"}' | awk '{print $2}')
kill $pid; wait $pid 2>/dev/null
python3 - "$label" "$((t1-t0))" "$o0" "$o1" $dir/out.json <<'PY'
import json,sys
label,ticks,o0,o1,f=sys.argv[1:]
j=json.load(open(f))
def find(d,keys):
  for k in keys:
    if k in d: return d[k]
  return None
r=j.get('result',j)
print(label, 'server_cpu_ms', int(ticks)*10, 'owner0', o0, 'owner1', o1, 'msgs_per_s', r.get('msgs_per_s'), 'p50_us', r.get('p50_us'), 'p99_us', r.get('p99_us'))
PY
rm -rf $dir
