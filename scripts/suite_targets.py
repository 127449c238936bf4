#!/usr/bin/env python3
"""Prints the ninja targets (paths relative to the build directory) that the tests of the
given meson suites need: their programs and what they depend on. scripts/test.sh builds only
these for the sanitizer pass.

usage: suite_targets.py BUILD_DIR SUITE...
"""
import json
import os
import subprocess
import sys


def introspect(build_dir: str, what: str):
    out = subprocess.run(["meson", "introspect", build_dir, what], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build_dir = os.path.abspath(sys.argv[1])
    wanted = set(sys.argv[2:])
    files_of = {t["id"]: t["filename"] for t in introspect(build_dir, "--targets")}
    needed = set()
    for test in introspect(build_dir, "--tests"):
        # suites are "project:suite"
        if not wanted & {s.split(":", 1)[-1] for s in test["suite"]}:
            continue
        paths = [test["cmd"][0]] + [f for dep in test["depends"] for f in files_of.get(dep, [])]
        for p in paths:
            p = os.path.abspath(p)
            if p.startswith(build_dir + os.sep):
                needed.add(os.path.relpath(p, build_dir))
    if not needed:
        print(f"no tests in suites {sorted(wanted)} under {build_dir}", file=sys.stderr)
        return 1
    print("\n".join(sorted(needed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
