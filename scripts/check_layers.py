#!/usr/bin/env python3
"""Fail on a project #include that goes against the layer table below.

Usage: check_layers.py [--root DIR]   check the tree at DIR (default: this repo)
       check_layers.py --self-test    check the checker on small temporary trees

Each offending include is printed as 'file:line: #include "x": reason'. Exit status 0 when
the tree is clean, 1 on any violation or stale exception, 2 on bad usage.
"""
import argparse
import os
import re
import sys
import tempfile

# The layer table, lowest first. A file may include its own component, any component of a
# lower tier, and the peers listed in PEERS; never a higher tier or an unlisted peer.
# tests/ and bench/ are outside the table and may include anything.
TIERS = [
    ["src/base"],                              # assertions, errors, log, clock, rings
    ["io"],                                    # file and io_uring backends
    ["src/shard", "src/proto", "storage", "net"],
    ["src/core"],                              # server, clients, sublist, dispatch
    ["src/repl"],                              # replication: Raft groups (cowsql raft)
    ["src/js"],                                # JetStream
    ["src/main.cc"],                           # wiring: picks the concrete pieces
    ["src/cli"],                               # the peregrine CLI: a libnats client, no server code
]

# Same-tier includes that are allowed (includer -> included).
PEERS = {
    ("net", "src/shard"): "a transport runs on (and wakes) a shard loop",
}

# What a higher layer (other than src/main.cc, which does the wiring) may see of a component:
# its interface, not the concrete implementations behind it.
INTERFACES = {
    "net": ["net/transport.h", "net/tls_options.h", "net/tls_stream.h"],
    "storage": ["storage/store.h", "storage/consumer_state.h"],
}
WIRING = "src/main.cc"

# Violations known today: (file, included path) -> one-line reason it is not fixed yet.
# An exception that no longer matches anything is reported too, so this list stays true.
EXCEPTIONS = {
    ("src/js/jetstream_storage.cc", "storage/file_store.h"):
        "opens file stores and writes config meta records into the file log; needs a store factory",
    ("src/js/jetstream_storage.cc", "storage/memory_store.h"): "creates memory stores; needs a store factory",
    ("src/js/cluster_streams_hosted.h", "storage/memory_store.h"):
        "a replica's store (the Raft log is its durable copy); needs a store factory",
    ("src/js/consumer_api.cc", "storage/file_store.h"):
        "consumer meta goes into the stream's file log (file_store_of); needs a store interface call",
}

SCANNED = ["src", "io", "net", "storage"]
SOURCE_EXT = (".h", ".hh", ".hpp", ".cc", ".cpp", ".cxx")
GENERATED = {"peregrine_config.h"}  # written by meson into the build root; below every layer
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')

COMPONENTS = [c for tier in TIERS for c in tier]
TIER_OF = {c: i for i, tier in enumerate(TIERS) for c in tier}


def component_of(path):
    """The table component a repo-relative path belongs to, or None if outside the table."""
    best = None
    for c in COMPONENTS:
        if path == c or path.startswith(c + "/"):
            if best is None or len(c) > len(best):
                best = c
    return best


def resolve(root, includer, target, angled):
    """Repo-relative path of an include target; None if it is not a project file."""
    if target in GENERATED:
        return None
    if angled:  # a system header (<net/if.h>) unless the tree has that file
        return target if os.path.isfile(os.path.join(root, target)) else None
    local = os.path.normpath(os.path.join(os.path.dirname(includer), target))
    if "/" not in target or target.startswith("."):
        if os.path.exists(os.path.join(root, local)):
            return local
    return os.path.normpath(target)


def why_not(includer, inc_comp, target, tgt_comp):
    """Reason the include is against the table, or None if it is allowed."""
    if tgt_comp is None or tgt_comp == inc_comp:
        return None
    ti, tt = TIER_OF[inc_comp], TIER_OF[tgt_comp]
    if tt > ti:
        return f"{inc_comp} (tier {ti}) may not include the higher layer {tgt_comp} (tier {tt})"
    if tt == ti and (inc_comp, tgt_comp) not in PEERS:
        return f"{inc_comp} may not include its peer {tgt_comp} (allowed peers: {peer_text()})"
    if tt < ti and tgt_comp in INTERFACES and includer != WIRING \
            and target not in INTERFACES[tgt_comp]:
        seen = ", ".join(INTERFACES[tgt_comp])
        return f"{inc_comp} sees only {seen} of {tgt_comp}; the concrete parts are src/main.cc's to wire"
    return None


def peer_text():
    return ", ".join(f"{a} -> {b}" for a, b in PEERS) or "none"


def source_files(root):
    for top in SCANNED:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def check(root, exceptions):
    """Returns (problems, excused): lists of printable lines."""
    problems, excused, used = [], [], set()
    for rel in source_files(root):
        inc_comp = component_of(rel)
        if inc_comp is None:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                raw = m.group(1) or m.group(2)
                target = resolve(root, rel, raw, angled=m.group(1) is None)
                if target is None:
                    continue
                reason = why_not(rel, inc_comp, target, component_of(target))
                if reason is None:
                    continue
                text = f'{rel}:{lineno}: #include "{raw}": {reason}'
                if (rel, target) in exceptions:
                    used.add((rel, target))
                    excused.append(f"{text} [known exception: {exceptions[(rel, target)]}]")
                else:
                    problems.append(text)
    for key in sorted(set(exceptions) - used):
        problems.append(f"stale exception {key[0]} -> {key[1]}: no such violation any more; "
                        "remove it from EXCEPTIONS")
    return problems, excused


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def self_test():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as root:
        write(root, "src/base/log.h", "#pragma once\n")
        write(root, "src/core/server.h", '#include "src/base/log.h"\n#include "net/transport.h"\n')
        write(root, "net/transport.h", '#include "src/shard/loop.h"\n#include <vector>\n')
        write(root, "src/shard/loop.h", '#include "log_local.h"\n')
        write(root, "src/shard/log_local.h", "#pragma once\n")
        write(root, "src/main.cc", '#include "net/uring_transport.h"\n#include "peregrine_config.h"\n')
        write(root, "src/core/sockets.cc", '#include <net/if.h>\n#include <src/core/server.h>\n')
        write(root, "tests/unit/x_test.cc", '#include "src/main.cc"\n')
        problems, _ = check(root, {})
        expect(problems == [], f"clean tree reported {problems}")

        write(root, "src/base/bad.h", '#pragma once\n  #  include "src/core/server.h"\n')
        write(root, "src/proto/parser.h", '#include "storage/store.h"\n')
        write(root, "storage/store.h", '#include <src/core/server.h>\n')
        write(root, "src/js/stream.cc", '#include "storage/file_store.h"\n#include "storage/store.h"\n')
        problems, _ = check(root, {})
        expect(len(problems) == 4, f"expected 4 problems, got {problems}")
        expect(any(p.startswith("storage/store.h:1:") for p in problems),
               f"upward <...> include of a project file not reported: {problems}")
        expect(any(p.startswith('src/base/bad.h:2: #include "src/core/server.h"') for p in problems),
               f"upward include not reported with file:line: {problems}")
        expect(any(p.startswith("src/proto/parser.h:1:") and "peer" in p for p in problems),
               f"peer include not reported: {problems}")
        expect(any(p.startswith("src/js/stream.cc:1:") for p in problems),
               f"concrete store include not reported: {problems}")

        excused_one = {("src/js/stream.cc", "storage/file_store.h"): "reason",
                       ("src/js/gone.cc", "storage/file_store.h"): "stale"}
        problems, excused = check(root, excused_one)
        expect(len(excused) == 1, f"exception not applied: {excused}")
        expect(any(p.startswith("stale exception src/js/gone.cc") for p in problems),
               f"stale exception not reported: {problems}")

    for f in failures:
        print("self-test FAILED:", f)
    print("self-test", "failed" if failures else "passed")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "src")):
        print(f"check_layers: {root} has no src/ directory", file=sys.stderr)
        return 2
    problems, excused = check(root, EXCEPTIONS)
    for line in excused:
        print(line)
    for line in problems:
        print(line)
    print(f"check_layers: {len(problems)} violation(s), {len(excused)} known exception(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
