#!/usr/bin/env bash
# Side-by-side end-to-end benchmark: peregrine-server vs nats-server, same machine, same run.
#
#   scripts/compare.sh [path/to/peregrine-server]
#
# Server under test: $1, else $PEREGRINE_BIN, else build-main/src/peregrine-server.
# Reference: $NATS_SERVER_BIN, else nats-server on PATH. peregrine-bench: $PEREGRINE_BENCH (or
# $PG_BENCH), else the first build*/bench/e2e/peregrine-bench found. Both servers get the same invocation
# (`-a 127.0.0.1 -p <port> -c <conf>`) and the same config. For each mode peregrine-bench runs against
# both, alternating which goes first, and the table shows peregrine/nats-server per metric
# (msgs/s: higher is better; latencies: lower is better).
#
# Knobs (env): SIZE=128 LAT_COUNT=20000 RR_COUNT=20000 TP_COUNT=1000000 TP_PUBS=2 WARMUP=1000
#              RAW_COUNT=2000000 JS_COUNT=5000 JSA_COUNT=200000
#              FETCH_COUNT=200000 CONSUME_COUNT=20000 ACK_COUNT=20000
#              ROUNDS=1 (repeat every mode, alternating order each time) DURATION=60
#              RATE= (latency, rr, js-mem, js-file: open loop at RATE msgs/s per publisher,
#                     percentiles corrected for coordinated omission; unset: --closed, one in flight)
#              OUT_DIR= (keep every run's full JSON report there, <round>-<mode>-<server>.json)
#              PG_EXTRA_CONF="js_thread: true" (config lines for Peregrine only; \n separates)
#              TLS_DIR=tests/data/tls (both servers serve TLS with server.pem/server-key.pem from
#                     there and peregrine-bench trusts its ca.pem; raw-throughput cannot run)
#              MODES="latency rr throughput raw-throughput js-mem js-file js-async-mem js-async-file
#                     js-fetch-100 js-fetch-1000 js-fetch-100-ackall js-fetch-1000-ackall
#                     js-consume-latency-mem js-consume-latency-file js-ack-rtt"
# Consumer modes: js-fetch-<batch>[-ackall] = fetch throughput through a durable pull consumer
# (ack each message, or ack_policy all with one ack per batch; p*_us = one fetch call);
# js-consume-latency-* = publish -> delivery on a waiting pull request (one-way);
# js-ack-rtt = ack sync round trip. js-batch-100[-file] (not in the default MODES) = atomic
# batches of 100 (2.12+; nats-server 2.9.10 has none, so its column shows the error).
# Both servers run with JetStream on (store in a temp dir); js-file on Peregrine acks after
# the O_DIRECT write completed, on nats-server after the write into the page cache.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
peregrine_bin=${1:-${PEREGRINE_BIN:-$repo/build-main/src/peregrine-server}}
nats_bin=${NATS_SERVER_BIN:-$(command -v nats-server || true)}
bench_bin=${PEREGRINE_BENCH:-${PG_BENCH:-}}
if [[ -z $bench_bin ]]; then
  for b in "$repo"/build-it/bench/e2e/peregrine-bench "$repo"/build-main/bench/e2e/peregrine-bench "$repo"/build*/bench/e2e/peregrine-bench; do
    if [[ -x $b ]]; then bench_bin=$b; break; fi
  done
fi
SIZE=${SIZE:-128}
LAT_COUNT=${LAT_COUNT:-20000}
RR_COUNT=${RR_COUNT:-20000}
TP_COUNT=${TP_COUNT:-1000000}
TP_PUBS=${TP_PUBS:-2}
WARMUP=${WARMUP:-1000}
ROUNDS=${ROUNDS:-1}
DURATION=${DURATION:-60}
RAW_COUNT=${RAW_COUNT:-2000000}
JS_COUNT=${JS_COUNT:-5000}
JSA_COUNT=${JSA_COUNT:-200000}
FETCH_COUNT=${FETCH_COUNT:-200000}
CONSUME_COUNT=${CONSUME_COUNT:-20000}
ACK_COUNT=${ACK_COUNT:-20000}
MODES=${MODES:-latency rr throughput raw-throughput js-mem js-file js-async-mem js-async-file js-fetch-100 js-fetch-1000 js-fetch-100-ackall js-fetch-1000-ackall js-consume-latency-mem js-consume-latency-file js-ack-rtt}

die() { echo "compare.sh: $*" >&2; exit 2; }
[[ -x $peregrine_bin ]] || die "peregrine-server not found/executable: $peregrine_bin"
[[ -n $nats_bin && -x $nats_bin ]] || die "nats-server not found (set NATS_SERVER_BIN)"
[[ -n $bench_bin && -x $bench_bin ]] || die "peregrine-bench not found (build it: ninja -C <builddir> bench/e2e/peregrine-bench, or set PEREGRINE_BENCH)"

work=$(mktemp -d "${TMPDIR:-/tmp}/pg-compare.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server <name> <binary> -> sets port_<name>
start_server() {
  local name=$1 bin=$2 port conf
  port=$(free_port)
  conf="$work/$name.conf"
  printf 'port: %s\njetstream { store_dir: "%s" }\n' "$port" "$work/$name-js" >"$conf"
  if [[ $name == peregrine && -n ${PG_EXTRA_CONF:-} ]]; then printf '%b\n' "$PG_EXTRA_CONF" >>"$conf"; fi
  if [[ -n ${TLS_DIR:-} ]]; then
    printf 'tls { cert_file: "%s/server.pem", key_file: "%s/server-key.pem" }\n' "$TLS_DIR" "$TLS_DIR" >>"$conf"
  fi
  "$bin" -a 127.0.0.1 -p "$port" -c "$conf" >"$work/$name.log" 2>&1 &
  pids+=($!)
  local deadline=$((SECONDS + 5))
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ((SECONDS >= deadline)) || ! kill -0 "${pids[-1]}" 2>/dev/null; then
      cat "$work/$name.log" >&2
      die "$name ($bin) did not start on port $port"
    fi
    sleep 0.05
  done
  printf -v "port_$name" '%s' "$port"
}

start_server peregrine "$peregrine_bin"
start_server nats "$nats_bin"

jget() {  # jget <json-line> <top-level key>
  python3 -c 'import json, sys
try: v = json.loads(sys.argv[1]).get(sys.argv[2], "")
except ValueError: v = ""
print(str(v).lower() if isinstance(v, bool) else v)' "$1" "$2"
}

# Table label -> peregrine-bench arguments (labels not listed are its modes themselves).
declare -A mode_args=(
  [js-fetch-100]="--mode js-fetch --batch 100 --ack each"
  [js-fetch-1000]="--mode js-fetch --batch 1000 --ack each"
  [js-fetch-100-ackall]="--mode js-fetch --batch 100 --ack all"
  [js-fetch-1000-ackall]="--mode js-fetch --batch 1000 --ack all"
  [js-consume-latency-mem]="--mode js-consume-latency --storage memory"
  [js-consume-latency-file]="--mode js-consume-latency --storage file"
  [js-ack-rtt]="--mode js-ack-rtt --storage memory"
  [js-batch-100]="--mode js-batch --batch 100 --storage memory"
  [js-batch-100-file]="--mode js-batch --batch 100 --storage file"
)

# run_bench <server-name> <mode label> <count> <round> -> prints the JSON report line (ok:false on failure)
run_bench() {
  local name=$1 mode=$2 count=$3 port_var="port_$1" out args loop=(--closed)
  read -r -a args <<<"${mode_args[$mode]:---mode $mode}"
  local pubs=()
  [[ -n ${RATE:-} ]] && loop=(--rate "$RATE")
  [[ $mode == *throughput ]] && pubs=(--publishers "$TP_PUBS")  # latency modes: one publisher
  local tls=()
  [[ -n ${TLS_DIR:-} ]] && tls=(--tls-ca "$TLS_DIR/ca.pem")
  out=$("$bench_bin" --url "nats://127.0.0.1:${!port_var}" "${tls[@]}" "${args[@]}" --count "$count" --size "$SIZE" \
        --warmup "$WARMUP" --duration "$DURATION" "${pubs[@]}" --subject "cmp.$mode" "${loop[@]}" \
        --server-note "$name" --json --quiet 2>"$work/bench.err") || true
  if [[ -z $out ]]; then
    out="{\"ok\":false,\"error\":\"peregrine-bench produced no output: $(tr -d '\n"' <"$work/bench.err" | head -c 200)\"}"
  fi
  [[ -n ${OUT_DIR:-} ]] && mkdir -p "$OUT_DIR" && printf '%s\n' "$out" >"$OUT_DIR/$4-$mode-$name.json"
  printf '%s\n' "$out"
}

echo "peregrine-server: $peregrine_bin (port $port_peregrine)${PG_EXTRA_CONF:+ extra config: $PG_EXTRA_CONF}${TLS_DIR:+ TLS ($TLS_DIR)}"
echo "nats-server:      $nats_bin (port $port_nats) [$("$nats_bin" --version 2>&1 | head -1)]"
echo "peregrine-bench:  $bench_bin  size=$SIZE warmup=$WARMUP rounds=$ROUNDS ${RATE:+open loop rate=$RATE/s per publisher}"
echo "host:             $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# Modes and their message counts; MODES picks a subset (space separated).
declare -A counts=([latency]=$LAT_COUNT [rr]=$RR_COUNT [throughput]=$TP_COUNT
                   [raw-throughput]=$RAW_COUNT [js-mem]=$JS_COUNT [js-file]=$JS_COUNT
                   [js-async-mem]=$JSA_COUNT [js-async-file]=$JSA_COUNT
                   [js-fetch-100]=$FETCH_COUNT [js-fetch-1000]=$FETCH_COUNT
                   [js-fetch-100-ackall]=$FETCH_COUNT [js-fetch-1000-ackall]=$FETCH_COUNT
                   [js-consume-latency-mem]=$CONSUME_COUNT [js-consume-latency-file]=$CONSUME_COUNT
                   [js-ack-rtt]=$ACK_COUNT [js-batch-100]=$FETCH_COUNT [js-batch-100-file]=$FETCH_COUNT)
specs=()
for m in $MODES; do
  [[ -n ${counts[$m]:-} ]] || die "unknown mode $m"
  specs+=("$m:${counts[$m]}")
done
declare -A results
turn=0
for round in $(seq "$ROUNDS"); do
  for spec in "${specs[@]}"; do
    mode=${spec%%:*}
    count=${spec##*:}
    # Alternate who goes first so warm caches/CPU frequency do not always favour one side.
    if ((turn % 2 == 0)); then order=(peregrine nats); else order=(nats peregrine); fi
    turn=$((turn + 1))
    for name in "${order[@]}"; do
      echo "round $round: $mode against $name ..." >&2
      results[$round,$mode,$name]=$(run_bench "$name" "$mode" "$count" "$round")
    done
  done
done

ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}

printf '%-6s %-23s %-10s %14s %14s %9s\n' round mode metric peregrine nats-server pg/nats
printf '%s\n' "--------------------------------------------------------------------------------------"
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    p=${results[$round,$mode,peregrine]}
    n=${results[$round,$mode,nats]}
    metrics=(msgs_per_s p50_us p90_us p99_us p999_us max_us)
    [[ $mode == throughput ]] && metrics=(msgs_per_s mb_per_s p50_us p99_us max_us)
    [[ $mode == raw-throughput || $mode == js-async-* ]] && metrics=(msgs_per_s mb_per_s)
    [[ $mode == js-fetch-* ]] && metrics=(msgs_per_s mb_per_s p50_us p99_us)
    for m in "${metrics[@]}"; do
      pv=$(jget "$p" "$m")
      nv=$(jget "$n" "$m")
      printf '%-6s %-23s %-10s %14s %14s %9s\n' "$round" "$mode" "$m" "${pv:--}" "${nv:--}" "$(ratio "$pv" "$nv")"
    done
    for name in peregrine nats; do
      line=${results[$round,$mode,$name]}
      if [[ $(jget "$line" ok) != true ]]; then
        echo "       !! $mode on $name failed: $(jget "$line" error)"
      fi
    done
  done
done
echo
echo "msgs_per_s / mb_per_s: higher is better; *_us latencies (latency: one-way, rr: round trip,"
echo "throughput: one-way under full load incl. queueing; js-fetch-*: one fetch call;"
echo "js-consume-latency-*: publish -> pull delivery; js-ack-rtt: ack sync round trip): lower is better."
# With OUT_DIR: the last round of each mode through `peregrine-bench compare` (per-percentile
# ratios from the full histograms) with overlaid plots in OUT_DIR/<mode>{,-time}.svg.
if [[ -n ${OUT_DIR:-} ]]; then
  for mode in $MODES; do
    a="$OUT_DIR/$ROUNDS-$mode-peregrine.json" b="$OUT_DIR/$ROUNDS-$mode-nats.json"
    grep -q '"histograms"' "$a" 2>/dev/null && grep -q '"histograms"' "$b" 2>/dev/null || continue
    cp "$a" "$OUT_DIR/peregrine.json" && cp "$b" "$OUT_DIR/nats-server.json"
    echo
    echo "== $mode: peregrine-bench compare (#1 peregrine, #2 nats-server) =="
    "$bench_bin" compare "$OUT_DIR/peregrine.json" "$OUT_DIR/nats-server.json" \
      --svg "$OUT_DIR/$mode.svg" --time-svg "$OUT_DIR/$mode-time.svg" | sed '/^  #[12] /d'
    rm -f "$OUT_DIR/peregrine.json" "$OUT_DIR/nats-server.json"
  done
fi
