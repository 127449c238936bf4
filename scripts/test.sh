#!/usr/bin/env bash
# One command for the whole test suite: install what is missing, build, run every suite
# (unit, fuzz corpus replay, storage, integration with libnats, e2e with nats.js), then the
# unit, fuzz-replay and integration suites again under ASan+UBSan (the integration programs
# are the plain build's, driving the sanitized server). Prints "N passed, N failed, N skipped".
# SKIP_SANITIZE=1 skips the sanitizer pass.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
scripts/deps.sh || exit 1
jobs=${JOBS:-2}
status=0
logs=()

run_suites() {  # build dir, meson setup args..., then suites after --
  local dir=$1; shift
  local setup=() suites=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do setup+=("$1"); shift; done
  shift
  suites=("$@")
  if [ ! -d "$dir" ]; then
    meson setup "$dir" "${setup[@]}" >/dev/null || return 1
  fi
  echo "== building $dir"
  local targets=()
  # ONLY_NEEDED=1: build what the chosen suites run, not every target
  if [ "${ONLY_NEEDED:-0}" = 1 ]; then
    local listed
    listed=$(python3 scripts/suite_targets.py "$dir" "${suites[@]}") || return 1
    mapfile -t targets <<<"$listed"
  fi
  ninja -C "$dir" -j"$jobs" "${targets[@]}" >"$dir/ninja.log" 2>&1 || { tail -50 "$dir/ninja.log"; return 1; }
  local args=()
  for s in "${suites[@]}"; do args+=(--suite "$s"); done
  echo "== testing $dir (${suites[*]})"
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "$jobs" \
    --timeout-multiplier "${TIMEOUT_MULT:-1}" "${args[@]}"
}

run_suites build-test --buildtype=debugoptimized -- unit fuzz storage integration e2e bench || status=1
logs+=(build-test/meson-logs/testlog.junit.xml)
if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  # sanitizers make everything 2-3x slower; a loaded CI box must not turn that into timeouts
  # (no benchmarks and no DPDK there: neither runs under the sanitizers). The integration
  # suite runs the plain build's test programs against the sanitized server: only the
  # server and the unit tests are compiled under the sanitizers.
  ONLY_NEEDED=1 TIMEOUT_MULT=3 run_suites build-asan --buildtype=debug -Db_sanitize=address,undefined \
    -Db_lundef=false -Dmimalloc=disabled -Dbenchmarks=false -Ddpdk=disabled \
    -Dintegration_exes_from="$here/build-test" -- unit fuzz integration || status=1
  logs+=(build-asan/meson-logs/testlog.junit.xml)
fi
python3 scripts/junit_count.py "${logs[@]}" || status=1
exit $status
