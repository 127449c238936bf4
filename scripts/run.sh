#!/usr/bin/env bash
# One command to a running server: install what is missing, build a release binary, start
# peregrine-server with JetStream on (store in the embedded default directory unless -sd is
# given). Extra arguments go to the server, e.g. scripts/run.sh -p 4333 -sd /data/js
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
scripts/deps.sh
if [ ! -d build-release ]; then
  meson setup build-release --buildtype=release >/dev/null
fi
ninja -C build-release -j"${JOBS:-2}" src/peregrine-server
exec build-release/src/peregrine-server -js "$@"
