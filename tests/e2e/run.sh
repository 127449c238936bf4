#!/bin/sh
# Runs the nats.js test files given as arguments (default: every *.test.mjs). Exit 77 (meson
# "skipped") when node or the npm dependencies are
# missing: run `npm ci` in tests/e2e first.
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
  echo "node not found; skipping" >&2
  exit 77
fi
if [ ! -d "$here/node_modules/@nats-io/transport-node" ]; then
  echo "tests/e2e/node_modules missing (run: cd tests/e2e && npm ci); skipping" >&2
  exit 77
fi
if [ -z "${PEREGRINE_SERVER_BIN_OVERRIDE:-}${PEREGRINE_SERVER_BIN:-}${PEREGRINE_E2E_REF:-}" ]; then
  echo "PEREGRINE_SERVER_BIN not set; skipping" >&2
  exit 77
fi
cd "$here" || exit 1
if [ $# -eq 0 ]; then set -- ./*.test.mjs; fi
exec node --test "$@"
