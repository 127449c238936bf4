#!/usr/bin/env bash
# R3 side by side: a 3-node Peregrine cluster and a 3-node nats-server cluster on loopback, the
# same peregrine-bench clients against each, ratios Peregrine/nats-server in one table.
#
#   bench/cluster_compare.sh [--help] [path/to/peregrine-server]
#
# Server under test: $1, else $PEREGRINE_BIN, else build-test/src/peregrine-server. Reference:
# $NATS_SERVER_BIN, else nats-server on PATH. peregrine-bench: $PEREGRINE_BENCH, else the first
# build*/bench/e2e/peregrine-bench found. Each cluster: servers <side>-a, -b, -c, one config
# file each (server_name, listen, http, jetstream { store_dir }, cluster { name, listen, routes
# to the other two }); the script waits until every server's /jsz names the same meta leader.
# Every mode creates its own file stream (R3, or R1 for r1-*) from a client and
# deletes it afterwards; modes alternate which cluster goes first, as scripts/compare.sh does.
#
# Modes (MODES, space separated):
#   r3-sync-follower  sync publish -> PubAck, one in flight (closed loop), client on a follower
#   r3-sync-leader    the same with the client on the stream leader
#   r3-async          async publish throughput, 256 in flight, client on a follower
#   r3-fetch          fetch throughput through a durable pull consumer (ack each), client on a follower
#   r1-sync-remote    sync publish to an R1 stream, the client on a server that does not hold it
#                     (its PubAck crosses the route both ways)
#   r1-async-remote   async publish throughput (256 in flight) to that R1 stream, the same way
#   failover          js-failover: sync publishes with retries while the stream leader is
#                     kill -9'd FAILOVER_ROUNDS times (restarted each time, waited for until it
#                     is a current replica again); per round kill -> next acknowledged publish,
#                     then every acknowledged message read back from the stream
# Per mode the servers' CPU (utime+stime of all three, from /proc/<pid>/stat) per message.
#
# Knobs (env): SIZE=128 WARMUP=200 JS_COUNT=3000 JSA_COUNT=50000 FETCH_COUNT=50000
#              FETCH_BATCH=100 FAILOVER_ROUNDS=5 DURATION=60 ROUNDS=1 (repeat every mode)
#              PUB_TIMEOUT_MS=1000 (failover: a publish's wait for its PubAck before the retry; a
#                     publish the dead leader swallowed costs this much of the measured gap)
#              MODES="r3-sync-follower r3-sync-leader r3-async r3-fetch failover"
#              SIDES="peregrine nats" (SIDES=nats: nats-server only)
#              OUT_DIR= (keep every run's JSON report, <round>-<mode>-<side>.json, and the logs)
#              PG_EXTRA_CONF= (config lines for Peregrine only; \n separates)
set -euo pipefail

if [[ ${1:-} == --help || ${1:-} == -h ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
peregrine_bin=${1:-${PEREGRINE_BIN:-$repo/build-test/src/peregrine-server}}
nats_bin=${NATS_SERVER_BIN:-$(command -v nats-server || true)}
bench_bin=${PEREGRINE_BENCH:-}
if [[ -z $bench_bin ]]; then
  for b in "$repo"/build-test/bench/e2e/peregrine-bench "$repo"/build*/bench/e2e/peregrine-bench; do
    if [[ -x $b ]]; then bench_bin=$b; break; fi
  done
fi
SIZE=${SIZE:-128}
WARMUP=${WARMUP:-200}
JS_COUNT=${JS_COUNT:-3000}
JSA_COUNT=${JSA_COUNT:-50000}
FETCH_COUNT=${FETCH_COUNT:-50000}
FETCH_BATCH=${FETCH_BATCH:-100}
FAILOVER_ROUNDS=${FAILOVER_ROUNDS:-5}
PUB_TIMEOUT_MS=${PUB_TIMEOUT_MS:-1000}
DURATION=${DURATION:-60}
ROUNDS=${ROUNDS:-1}
MODES=${MODES:-r3-sync-follower r3-sync-leader r3-async r3-fetch failover}
SIDES=${SIDES:-peregrine nats}

die() { echo "cluster_compare.sh: $*" >&2; exit 2; }
for side in $SIDES; do
  case $side in
    peregrine) [[ -x $peregrine_bin ]] || die "peregrine-server not found/executable: $peregrine_bin" ;;
    nats) [[ -n $nats_bin && -x $nats_bin ]] || die "nats-server not found (set NATS_SERVER_BIN)" ;;
    *) die "unknown side $side (peregrine, nats)" ;;
  esac
done
[[ -n $bench_bin && -x $bench_bin ]] || die "peregrine-bench not found (ninja -C <builddir> bench/e2e/peregrine-bench, or set PEREGRINE_BENCH)"
command -v curl >/dev/null || die "curl is needed for /jsz"

work=$(mktemp -d "${TMPDIR:-/tmp}/pg-cluster-compare.XXXXXX")
declare -A pid=() bin_of=() port=() mport=() cport=()
fo_pid=
cleanup() {
  local rc=$?
  [[ -n $fo_pid ]] && kill -KILL "$fo_pid" 2>/dev/null
  for n in "${!pid[@]}"; do kill -TERM "${pid[$n]}" 2>/dev/null || true; done
  for n in "${!pid[@]}"; do
    for _ in $(seq 30); do kill -0 "${pid[$n]}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "${pid[$n]}" 2>/dev/null || true
    wait "${pid[$n]}" 2>/dev/null || true
  done
  if [[ -n ${OUT_DIR:-} ]]; then mkdir -p "$OUT_DIR" && cp "$work"/*.log "$OUT_DIR"/ 2>/dev/null || true; fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Ports below the kernel's ephemeral range, so no outgoing connection takes one meanwhile.
taken=" "
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    [[ $taken == *" $p "* ]] && continue
    if python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$p" 2>/dev/null; then
      taken+="$p "
      echo "$p"
      return
    fi
  done
}

# Writes <side>-{a,b,c}.conf; full-mesh routes (each lists the other two).
write_configs() {
  local side=$1 n other
  for n in a b c; do
    port[$side-$n]=$(free_port); mport[$side-$n]=$(free_port); cport[$side-$n]=$(free_port)
  done
  for n in a b c; do
    {
      printf 'server_name: %s\nlisten: 127.0.0.1:%s\nhttp: 127.0.0.1:%s\n' "$side-$n" "${port[$side-$n]}" "${mport[$side-$n]}"
      printf 'jetstream { store_dir: "%s" }\n' "$work/$side-$n-js"
      printf 'cluster {\n  name: %s\n  listen: 127.0.0.1:%s\n  routes: [\n' "$side-cluster" "${cport[$side-$n]}"
      for other in a b c; do
        [[ $other == "$n" ]] || printf '    nats-route://127.0.0.1:%s\n' "${cport[$side-$other]}"
      done
      printf '  ]\n}\n'
      if [[ $side == peregrine && -n ${PG_EXTRA_CONF:-} ]]; then printf '%b\n' "$PG_EXTRA_CONF"; fi
    } >"$work/$side-$n.conf"
  done
}

start_node() {  # start_node <side-x>: (re)start one server with its config and store
  local name=$1
  "${bin_of[$name]}" -c "$work/$name.conf" >>"$work/$name.log" 2>&1 &
  pid[$name]=$!
  local deadline=$((SECONDS + 20))
  until (exec 3<>"/dev/tcp/127.0.0.1/${port[$name]}") 2>/dev/null; do
    if ((SECONDS >= deadline)) || ! kill -0 "${pid[$name]}" 2>/dev/null; then
      tail -20 "$work/$name.log" >&2
      die "$name (${bin_of[$name]}) did not start on port ${port[$name]}"
    fi
    sleep 0.05
  done
}

meta_leader() {  # meta_leader <side-x>: the meta leader that server's /jsz names, or empty
  curl -s -m 2 "http://127.0.0.1:${mport[$1]}/jsz" 2>/dev/null | python3 -c 'import json, sys
try: print((json.load(sys.stdin).get("meta_cluster") or {}).get("leader", ""))
except ValueError: print("")' 2>/dev/null || true
}

wait_meta() {  # wait_meta <side>: every server agrees on one meta leader (60 s)
  local side=$1 deadline=$((SECONDS + 60)) a b c
  while ((SECONDS < deadline)); do
    a=$(meta_leader "$side-a"); b=$(meta_leader "$side-b"); c=$(meta_leader "$side-c")
    if [[ -n $a && $a == "$b" && $b == "$c" ]]; then echo "$a"; return 0; fi
    sleep 0.2
  done
  die "$side: no agreed meta leader within 60 s (/jsz: '$a' '$b' '$c'); logs in $work"
}

urls_of() { echo "nats://127.0.0.1:${port[$1-a]},nats://127.0.0.1:${port[$1-b]},nats://127.0.0.1:${port[$1-c]}"; }
names_of() { echo "$1-a,$1-b,$1-c"; }

cpu_ticks() {  # cpu_ticks <side>: utime+stime of the side's three servers
  local side=$1 n total=0 f
  for n in a b c; do
    if f=$(cut -d' ' -f14,15 "/proc/${pid[$side-$n]}/stat" 2>/dev/null); then
      total=$((total + ${f% *} + ${f#* }))
    fi
  done
  echo "$total"
}

jget() {  # jget <json-line> <key[.key...]>
  python3 -c 'import json, sys
try:
    v = json.loads(sys.argv[1])
    for k in sys.argv[2].split("."):
        v = v.get(k, "") if isinstance(v, dict) else ""
except ValueError: v = ""
print(str(v).lower() if isinstance(v, bool) else ("" if v is None else v))' "$1" "$2"
}

declare -A mode_args=(
  [r3-sync-follower]="--replicas 3 --mode js-file --closed --place follower"
  [r3-sync-leader]="--replicas 3 --mode js-file --closed --place leader"
  [r3-async]="--replicas 3 --mode js-async-file --place follower"
  [r3-fetch]="--replicas 3 --mode js-fetch --storage file --ack each --batch $FETCH_BATCH --place follower"
  [r1-sync-remote]="--replicas 1 --mode js-file --closed --place follower"
  [r1-async-remote]="--replicas 1 --mode js-async-file --place follower"
)
declare -A counts=([r3-sync-follower]=$JS_COUNT [r3-sync-leader]=$JS_COUNT [r3-async]=$JSA_COUNT
                   [r3-fetch]=$FETCH_COUNT [failover]=1 [r1-sync-remote]=$JS_COUNT [r1-async-remote]=$JSA_COUNT)
for m in $MODES; do [[ -n ${counts[$m]:-} ]] || die "unknown mode $m"; done

# run_failover <side> -> bench_out: js-failover as a coprocess; its @kill/@restart lines are
# served here, in the main shell (it owns the server processes it kills and restarts).
run_failover() {
  local side=$1 line name report="" ts
  coproc FO { exec "$bench_bin" --mode js-failover --url "$(urls_of "$side")" --server-names "$(names_of "$side")" \
                --storage file --replicas 3 --rounds "$FAILOVER_ROUNDS" --pub-timeout "$PUB_TIMEOUT_MS" --size "$SIZE" --subject "cc.fo" \
                --server-note "$side 3-node cluster" --json --quiet 2>>"$work/failover-$side.err"; }
  fo_pid=$FO_PID
  # Our own copies of the pipes: bash closes FO's when the bench exits, maybe before its last line is read.
  local out in
  exec {out}<&"${FO[0]}" {in}>&"${FO[1]}"
  while IFS= read -r line <&"$out"; do
    case $line in
      "@kill "*)
        name=${line#@kill }
        [[ -n ${pid[$name]:-} ]] || { echo "killed 0" >&"$in"; continue; }
        ts=${EPOCHREALTIME/./}
        kill -KILL "${pid[$name]}"
        wait "${pid[$name]}" 2>/dev/null || true
        echo "killed ${ts}000" >&"$in"
        ;;
      "@restart "*)
        name=${line#@restart }
        start_node "$name"
        echo "restarted" >&"$in"
        ;;
      *) report=$line ;;
    esac
  done
  exec {out}<&- {in}>&-
  wait "$fo_pid" 2>/dev/null || true
  fo_pid=
  cat "$work/failover-$side.err" >&2
  : >"$work/failover-$side.err"
  [[ -n $report ]] || report='{"ok":false,"error":"js-failover produced no report"}'
  bench_out=$report
}

# run_bench <side> <mode> <round> -> bench_out: the JSON report line, with "cpu_us_per_msg" added
run_bench() {
  local side=$1 mode=$2 out args t0 t1
  t0=$(cpu_ticks "$side")
  if [[ $mode == failover ]]; then
    run_failover "$side"
    out=$bench_out
  else
    read -r -a args <<<"${mode_args[$mode]}"
    out=$("$bench_bin" --url "$(urls_of "$side")" --server-names "$(names_of "$side")" "${args[@]}" \
          --count "${counts[$mode]}" --size "$SIZE" --warmup "$WARMUP" --duration "$DURATION" --subject "cc.$mode" \
          --server-note "$side 3-node cluster" --json --quiet 2>"$work/bench.err") || true
    [[ -n $out ]] || out="{\"ok\":false,\"error\":\"peregrine-bench produced no output: $(tr -d '\n"' <"$work/bench.err" | head -c 200)\"}"
  fi
  t1=$(cpu_ticks "$side")
  out=$(python3 -c 'import json, sys, os
j = json.loads(sys.argv[1]); n = j.get("received", 0) or 0
if j.get("mode") in ("js-file", "js-fetch"): n += j.get("warmup", 0)  # the warmup messages cost too
if j.get("mode") == "js-fetch": n *= 2  # each fetched message was published (prefill) and fetched
tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
if j.get("mode") == "js-failover": n = 0  # servers restarted: their CPU counters began again
j["cpu_us_per_msg"] = round((int(sys.argv[3]) - int(sys.argv[2])) * tick_us / n, 2) if n else ""
print(json.dumps(j))' "$out" "$t0" "$t1" 2>/dev/null || printf '%s' "$out")
  if [[ -n ${OUT_DIR:-} ]]; then mkdir -p "$OUT_DIR" && printf '%s\n' "$out" >"$OUT_DIR/$3-$mode-$side.json"; fi
  bench_out=$out
}

for side in $SIDES; do
  write_configs "$side"
  for n in a b c; do
    if [[ $side == nats ]]; then bin_of[$side-$n]=$nats_bin; else bin_of[$side-$n]=$peregrine_bin; fi
    start_node "$side-$n"
  done
done
declare -A leader_of
for side in $SIDES; do leader_of[$side]=$(wait_meta "$side"); done

echo "peregrine-server: $peregrine_bin${PG_EXTRA_CONF:+ extra config: $PG_EXTRA_CONF}"
echo "nats-server:      $nats_bin [$("$nats_bin" --version 2>&1 | head -1)]"
for side in $SIDES; do
  echo "$side cluster:    $(urls_of "$side")  meta leader ${leader_of[$side]}"
done
echo "peregrine-bench:  $bench_bin  size=$SIZE warmup=$WARMUP rounds=$ROUNDS"
echo "host:             $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

read -r -a sides <<<"$SIDES"
declare -A results
turn=0
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    order=("${sides[@]}")
    if ((turn % 2 == 1 && ${#sides[@]} == 2)); then order=("${sides[1]}" "${sides[0]}"); fi
    turn=$((turn + 1))
    for side in "${order[@]}"; do
      echo "round $round: $mode against $side ..." >&2
      run_bench "$side" "$mode" "$round"
      results[$round,$mode,$side]=$bench_out
    done
  done
done

ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a + 0 < 0 || b + 0 <= 0) print "-"; else printf "%.2f", a / b }'
}
printf '%-6s %-17s %-20s %14s %14s %9s\n' round mode metric peregrine nats-server pg/nats
printf '%s\n' "-----------------------------------------------------------------------------------"
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    case $mode in
      r3-sync-* | r1-sync-*) metrics=(msgs_per_s p50_us p90_us p99_us max_us cpu_us_per_msg) ;;
      r3-async | r1-async-*) metrics=(msgs_per_s mb_per_s cpu_us_per_msg) ;;
      r3-fetch) metrics=(msgs_per_s mb_per_s p50_us p99_us cpu_us_per_msg) ;;
      failover) metrics=(extra.failover_p50_ms extra.failover_max_ms extra.leader_seen_p50_ms extra.acked extra.readback.missing extra.readback.duplicates) ;;
    esac
    for m in "${metrics[@]}"; do
      pv="" nv=""  # a failed run's figures are not shown (its !! line says why)
      [[ $(jget "${results[$round,$mode,peregrine]:-}" ok) == true ]] && pv=$(jget "${results[$round,$mode,peregrine]}" "$m")
      [[ $(jget "${results[$round,$mode,nats]:-}" ok) == true ]] && nv=$(jget "${results[$round,$mode,nats]}" "$m")
      printf '%-6s %-17s %-20s %14s %14s %9s\n' "$round" "$mode" "${m#extra.}" "${pv:--}" "${nv:--}" "$(ratio "$pv" "$nv")"
    done
    for side in "${sides[@]}"; do
      line=${results[$round,$mode,$side]}
      [[ $(jget "$line" ok) == true ]] || echo "       !! $mode on $side failed: $(jget "$line" error)"
      if [[ $mode == failover ]]; then
        python3 -c 'import json, sys
x = json.loads(sys.argv[1]).get("extra") or {}
for r in x.get("rounds", []):
    print("       %s round %d: killed %s, next ack after %.1f ms, new leader %s seen after %.1f ms, rejoined in %.1f s" % (
        sys.argv[2], r["round"], r["killed"], r["kill_to_ack_ms"], r["new_leader"] or "-", r.get("leader_seen_ms", -1), r["rejoin_s"]))
rb = x.get("readback") or {}
if rb: print("       %s read-back: %s acked, %s stored, %s missing, %s mismatched, %s duplicates, retries %s" % (
    sys.argv[2], rb.get("acked_indexes"), rb.get("stored"), rb.get("missing"), rb.get("mismatched"),
    rb.get("duplicates"), json.dumps(x.get("retries", {}))))' "$line" "$side" 2>/dev/null || true
      fi
    done
  done
done
echo
echo "msgs_per_s / mb_per_s: higher is better; *_us (sync: publish -> PubAck; fetch: one fetch call),"
echo "cpu_us_per_msg (three servers together; fetch: per message published and fetched) and the"
echo "failover times (kill -9 of the stream leader -> next acknowledged publish): lower is better."
