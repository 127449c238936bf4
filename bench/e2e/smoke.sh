#!/usr/bin/env bash
# Smoke run of every peregrine-bench mode against one server (a few hundred messages each, a
# few seconds in all): each must finish with "ok":true and its report must carry the
# histograms, the time series and the environment. Not a timed test: no latency assertions.
# usage: smoke.sh PEREGRINE_BENCH [SERVER_BIN]  (default nats-server on PATH; exit 77, meson's
# "skipped", when there is none)
bench=$1
server=${2:-${NATS_SERVER_BIN:-$(command -v nats-server)}}
if [ -z "$server" ] || [ ! -x "$server" ]; then
  echo "server binary not found; skipping" >&2
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/peregrine-bench-smoke.XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" --js -a 127.0.0.1 -p "$port" --sd "$dir" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
i=0
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  i=$((i + 1))
  if [ $i -gt 100 ]; then cat "$dir/log" >&2; echo "server did not start" >&2; exit 1; fi
  sleep 0.05
done
# Atomic batches arrived in nats-server 2.12, fast-ingest batches in 2.14; Debian's 2.9.10 has neither.
skip=
case $("$server" --version 2>&1) in
  *"nats-server: v2."[0-9].*|*"nats-server: v2.1"[01].*) skip="js-batch js-fast" ;;
  *"nats-server: v2.1"[23].*) skip="js-fast" ;;
esac
fail=0
n=0
while read -r args; do
  [ -z "$args" ] && continue
  mode=${args#--mode }
  mode=${mode%% *}
  if [[ " $skip " == *" $mode "* ]]; then echo "$args -> skipped ($server has no $mode)"; continue; fi
  # shellcheck disable=SC2086
  out=$("$bench" --url "nats://127.0.0.1:$port" $args --count 300 --warmup 20 --duration 10 --json --quiet \
        --hgrm "$dir/last.hgrm")
  echo "$args -> $(cut -c1-400 <<<"$out")"
  n=$((n + 1))
  printf '%s\n' "$out" >"$dir/run$n.json"
  case $out in
    *'"ok":true'*'"histograms":'*'"time_series":'*'"environment":'*) ;;
    *) echo "FAIL: $args"; fail=1 ;;
  esac
  grep -q '^#\[Max' "$dir/last.hgrm" || { echo "FAIL: $args wrote no .hgrm"; fail=1; }
done <<'MODES'
--mode latency --rate 2000
--mode latency --closed --publishers 2
--mode rr --rate 2000 --publishers 2
--mode rr --closed
--mode js-mem --rate 2000
--mode js-file --closed
--mode throughput --publishers 2 --tp-subscribers 2
--mode js-fetch --batch 100 --ack each
--mode js-fetch --batch 1000 --ack all --storage file
--mode js-consume-latency --storage memory
--mode js-consume-latency --storage file
--mode js-ack-rtt
--mode js-batch --batch 10
--mode js-fast --batch 50
--mode js-batch --batch 10 --pipeline 4
--mode js-fast --batch 50 --pipeline 4 --storage file
--mode fanout --subscribers 3 --rate 2000
--mode kv-put --rate 2000
--mode kv-get --closed --keys 10
--mode js-direct-get --rate 2000 --keys 10
--mode js-push-latency --rate 2000
--mode pubsub-pipelined --rate 5000
--mode js-ordered-latency --closed --storage file
MODES
# Pure throughput modes record no latency: only "ok" is checked.
for mode in raw-throughput js-async-mem js-async-file; do
  out=$("$bench" --url "nats://127.0.0.1:$port" --mode $mode --count 3000 --warmup 0 --json --quiet)
  echo "--mode $mode -> $(cut -c1-300 <<<"$out")"
  case $out in *'"ok":true'*) ;; *) echo "FAIL: $mode"; fail=1 ;; esac
done
# compare: the first two reports (latency open and closed loop), a table and a plot; a file that
# is not a report gets a clear error and exit 2.
cmp=$("$bench" compare "$dir/run1.json" "$dir/run2.json" --svg "$dir/cmp.svg" --time-svg "$dir/cmp-time.svg")
echo "$cmp"
case $cmp in *p99999_us*max_us*) ;; *) echo "FAIL: compare table"; fail=1 ;; esac
grep -q '</svg>' "$dir/cmp.svg" && grep -q '</svg>' "$dir/cmp-time.svg" || { echo "FAIL: compare plots"; fail=1; }
echo '{"mode":' >"$dir/bad.json"
"$bench" compare "$dir/run1.json" "$dir/bad.json" 2>"$dir/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'not a peregrine-bench JSON report' "$dir/err" || { echo "FAIL: compare bad input rc=$rc"; fail=1; }
exit $fail
