#!/usr/bin/env bash
# Smoke run of pg-bench's JetStream consumer modes against the reference nats-server (a few
# hundred messages each, a few seconds in all): every mode must finish with "ok":true.
# usage: smoke.sh PG_BENCH. Exit 77 (meson "skipped") when nats-server is not installed.
pg_bench=$1
nats_server=${NATS_SERVER_BIN:-$(command -v nats-server)}
if [ -z "$nats_server" ]; then
  echo "nats-server not found; skipping" >&2
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/pg-bench-smoke.XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$nats_server" -js -a 127.0.0.1 -p "$port" -sd "$dir" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
i=0
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  i=$((i + 1))
  if [ $i -gt 100 ]; then cat "$dir/log" >&2; echo "nats-server did not start" >&2; exit 1; fi
  sleep 0.05
done
fail=0
for args in "--mode js-fetch --batch 100 --ack each" "--mode js-fetch --batch 1000 --ack all --storage file" \
            "--mode js-consume-latency --storage memory" "--mode js-consume-latency --storage file" \
            "--mode js-ack-rtt"; do
  # shellcheck disable=SC2086
  out=$("$pg_bench" --url "nats://127.0.0.1:$port" $args --count 300 --warmup 20 --duration 10 --json --quiet)
  echo "$args -> $out"
  case $out in
    *'"ok":true'*) ;;
    *) fail=1 ;;
  esac
done
exit $fail
