#!/usr/bin/env python3
"""Sends the same JetStream requests to Peregrine and to Debian's nats-server 2.9.10 and diffs
the replies (JSON parsed, so key order and Go's \\u003e escaping do not count).

Differences that come from newer nats-server behaviour (streams.md §14) are removed before
the diff and listed at the end; anything else is a failure (exit 1).

usage: js_compare.py PEREGRINE_BIN [NATS_SERVER_BIN]
"""
import json, os, shutil, socket, subprocess, sys, tempfile, time

# Request script: (subject, headers or None, body). Replies are compared one by one.
SCRIPT = [
    ("$JS.API.INFO", None, ""),
    ("$JS.API.STREAM.NAMES", None, ""),
    ("$JS.API.STREAM.CREATE.ORDERS", None, '{"name":"ORDERS","subjects":["orders.>"]}'),
    ("$JS.API.STREAM.CREATE.ARCHIVE", None, '{"name":"ARCHIVE","subjects":["orders.*"]}'),
    ("$JS.API.STREAM.CREATE.X", None, '{"name":"Y"}'),
    ("$JS.API.STREAM.CREATE.X", None, '{"name":"X","sealed":true}'),
    ("$JS.API.STREAM.CREATE.X", None, '{"name":"X","num_replicas":3}'),
    ("$JS.API.STREAM.CREATE.X", None, '{"name":"X","max_age":1000}'),
    ("$JS.API.STREAM.CREATE.X", None, '{"name":"X","max_age":1000000000,"duplicate_window":2000000000}'),
    ("$JS.API.STREAM.CREATE.X", None, '{"name":"X","discard_new_per_subject":true}'),
    ("$JS.API.STREAM.CREATE.X", None, '{"name":"X","deny_purge":true,"allow_rollup_hdrs":true}'),
    ("$JS.API.STREAM.CREATE.X", None, '{"name":"X","mirror_direct":true}'),
    ("orders.created", None, '{"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:22Z"}'),
    ("orders.created", None, '{"order_id":"ord_2zr9","customer":"globex","total_cents":1500,"ts":"2026-05-22T10:14:25Z"}'),
    ("orders.shipped", None, '{"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:31Z"}'),
    ("$JS.API.STREAM.INFO.ORDERS", None, ""),
    ("orders.created", {"Nats-Msg-Id": "A1"}, "x"),
    ("orders.created", {"Nats-Msg-Id": "A1"}, "x"),
    ("orders.created", {"Nats-Expected-Stream": "OTHER"}, "x"),
    ("orders.created", {"Nats-Expected-Last-Sequence": "1"}, "x"),
    ("orders.created", {"Nats-Expected-Last-Sequence": "4"}, "x"),
    ("orders.shipped", {"Nats-Expected-Last-Subject-Sequence": "1"}, "x"),
    ("orders.new", {"Nats-Expected-Last-Subject-Sequence": "0"}, "x"),
    ("orders.new", {"Nats-Expected-Last-Msg-Id": "nope"}, "x"),
    ("orders.new", {"Nats-Rollup": "sub"}, "x"),
    ("$JS.API.STREAM.INFO.ORDERS", None, '{"subjects_filter":">"}'),
    ("$JS.API.STREAM.MSG.GET.ORDERS", None, '{"seq":2}'),
    ("$JS.API.STREAM.MSG.GET.ORDERS", None, '{"last_by_subj":"orders.shipped"}'),
    ("$JS.API.STREAM.MSG.GET.ORDERS", None, '{"seq":99}'),
    ("$JS.API.STREAM.MSG.DELETE.ORDERS", None, '{"seq":2}'),
    ("$JS.API.STREAM.MSG.DELETE.ORDERS", None, '{"seq":2}'),
    ("$JS.API.STREAM.INFO.ORDERS", None, '{"deleted_details":true}'),
    ("$JS.API.STREAM.PURGE.ORDERS", None, '{"filter":"orders.shipped"}'),
    ("$JS.API.STREAM.PURGE.ORDERS", None, '{"seq":1,"keep":1}'),
    ("$JS.API.STREAM.PURGE.ORDERS", None, '{"keep":1}'),
    ("$JS.API.STREAM.PURGE.ORDERS", None, '{"seq":100}'),
    ("orders.created", None, "x"),
    ("$JS.API.STREAM.UPDATE.ORDERS", None, '{"name":"ORDERS","subjects":["orders.>"],"storage":"memory"}'),
    ("$JS.API.STREAM.UPDATE.ORDERS", None, '{"name":"ORDERS","subjects":["orders.>"],"discard":"new","max_msgs":1,"allow_direct":true}'),
    ("orders.created", None, "x"),
    ("$JS.API.DIRECT.GET.ORDERS", None, '{"seq":100}'),
    ("$JS.API.DIRECT.GET.ORDERS.orders.created", None, ""),
    ("$JS.API.DIRECT.GET.ORDERS", None, '{"seq":999}'),
    ("$JS.API.STREAM.CREATE.LIM", None, '{"name":"LIM","subjects":["lim.>"],"storage":"memory","max_msgs_per_subject":2}'),
    ("lim.a", None, "x"), ("lim.a", None, "x"), ("lim.a", None, "x"),
    ("$JS.API.STREAM.INFO.LIM", None, ""),
    ("$JS.API.STREAM.CREATE.I", None, '{"name":"I","subjects":["i.>"],"retention":"interest"}'),
    ("i.a", None, "x"), ("i.a", None, "x"),
    ("$JS.API.STREAM.INFO.I", None, ""),
    ("$JS.API.STREAM.LIST", None, '{"subject":"lim.a"}'),
    ("$JS.API.STREAM.DELETE.LIM", None, '{"x":1}'),
    ("$JS.API.STREAM.DELETE.LIM", None, ""),
    ("$JS.API.STREAM.DELETE.LIM", None, ""),
]

# Newer-server fields (streams.md §14): present in Peregrine, absent in 2.9.10.
NEWER_FIELDS = {"compression", "consumer_limits", "allow_msg_ttl", "metadata", "cluster", "ts",
                "reserved_memory", "reserved_storage", "level"}
VOLATILE = {"created", "first_ts", "last_ts", "time", "ts"}


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def start(bin_, tmp, extra):
    port = free_port()
    proc = subprocess.Popen([bin_, "-js", "-sd", tmp, "-p", str(port), "-a", "127.0.0.1"] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(250):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close(); return proc, port
        except OSError:
            time.sleep(0.02)
    proc.kill(); raise SystemExit(f"{bin_} did not start")


def run(bin_):
    tmp = tempfile.mkdtemp(prefix="pg-cmp-")
    proc, port = start(bin_, tmp, [])
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(3)
    s.recv(65536)  # INFO
    s.settimeout(0.08)
    s.sendall(b'CONNECT {"headers":true,"no_responders":true,"verbose":false}\r\nSUB _R 1\r\n')
    replies = []
    for subj, hdrs, body in SCRIPT:
        b = body.encode()
        if hdrs:
            h = ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n").encode()
            s.sendall(b"HPUB %s _R %d %d\r\n%s%s\r\n" % (subj.encode(), len(h), len(h) + len(b), h, b))
        else:
            s.sendall(b"PUB %s _R %d\r\n%s\r\n" % (subj.encode(), len(b), b))
        data = b""
        # A reply is complete once the connection stays quiet briefly after it.
        deadline = time.time() + 3.0
        while time.time() < deadline:
            try:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            except socket.timeout:
                if data: break
        replies.append(parse(data))
    s.close(); proc.terminate(); proc.wait(5); shutil.rmtree(tmp, ignore_errors=True)
    return replies


def parse(data):
    """Every MSG/HMSG in the reply bytes as (headers without volatile lines, parsed body)."""
    out = []
    while data:
        line, _, rest = data.partition(b"\r\n")
        parts = line.split()
        if not parts or parts[0] not in (b"MSG", b"HMSG"):
            data = rest; continue
        total = int(parts[-1]); hlen = int(parts[-2]) if parts[0] == b"HMSG" else 0
        blob, data = rest[:total], rest[total + 2:]
        hdr = [l for l in blob[:hlen].decode().split("\r\n") if l and not l.startswith("Nats-Time-Stamp")]
        body = blob[hlen:].decode()
        try:
            body = normalise(json.loads(body))
        except ValueError:
            pass
        out.append((hdr, body))
    return out


def normalise(v):
    if isinstance(v, dict):
        return {k: ("<t>" if k in VOLATILE else normalise(x)) for k, x in v.items() if k not in NEWER_FIELDS}
    if isinstance(v, list):
        return [normalise(x) for x in v]
    return v


def main():
    pg = sys.argv[1]
    ns = sys.argv[2] if len(sys.argv) > 2 else shutil.which("nats-server")
    if not ns:
        print("nats-server not found; skipping"); return 77
    a, b = run(pg), run(ns)
    bad = 0
    for (subj, _, body), x, y in zip(SCRIPT, a, b):
        if x != y:
            bad += 1
            print(f"DIFF {subj} {body}\n  peregrine:   {x}\n  nats-server: {y}")
    print(f"{len(SCRIPT) - bad}/{len(SCRIPT)} replies equal; newer-server fields ignored: {sorted(NEWER_FIELDS)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
