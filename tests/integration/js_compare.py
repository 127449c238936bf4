#!/usr/bin/env python3
"""Sends the same JetStream requests to Peregrine and to Debian's nats-server 2.9.10 and diffs
the replies (JSON parsed, so key order and Go's \\u003e escaping do not count).

Differences that come from newer nats-server behaviour (streams.md §14) are removed before
the diff and listed at the end; anything else is a failure (exit 1).

With --consumers the consumer script runs instead (CONSUMER.CREATE with many configs, valid and
invalid, INFO, NAMES, LIST, DELETE and MSG.NEXT statuses). While Peregrine answers the consumer
API with no responders the comparison is skipped (exit 77); once it answers, every reply counts.

usage: js_compare.py [--consumers] PEREGRINE_BIN [NATS_SERVER_BIN]
"""
import json, os, shutil, socket, subprocess, sys, tempfile, threading, time

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
    ("$JS.API.STREAM.LEADER.STEPDOWN.ORDERS", None, ""),
    ("$JS.API.STREAM.LEADER.STEPDOWN.NOPE", None, ""),
    ("$JS.API.STREAM.PEER.REMOVE.ORDERS", None, '{"peer":"x"}'),
    ("$JS.API.STREAM.PEER.REMOVE.NOPE", None, ""),
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



def cc(stream, name, config, subject=None):
    """A CONSUMER.CREATE request (subject defaults to the named form when the config has a name)."""
    if subject is None:
        subject = f"$JS.API.CONSUMER.CREATE.{stream}" + (f".{name}" if name else "")
    return (subject, None, json.dumps({"stream_name": stream, "config": config}))


NEXT = "$JS.API.CONSUMER.MSG.NEXT."
ORDER = '{"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:22Z"}'
# Consumer request script (consumers-and-core.md §2, §5), same reply-by-reply comparison. The
# first request is the probe: no responders from Peregrine means its consumer API is not wired.
CONSUMER_SCRIPT = [
    ("$JS.API.CONSUMER.NAMES.NONE", None, ""),
    ("$JS.API.STREAM.CREATE.ORDERS", None, '{"name":"ORDERS","subjects":["orders.>"]}'),
    ("orders.created", None, ORDER), ("orders.created", None, ORDER), ("orders.shipped", None, ORDER),
    # Defaults: only a name, then the CLI's pull --defaults, then a push consumer.
    cc("ORDERS", "plain", {"durable_name": "plain"}),
    cc("ORDERS", "billing", {"durable_name": "billing", "deliver_policy": "all", "ack_policy": "explicit",
                             "replay_policy": "instant"}),
    cc("ORDERS", "billing", {"durable_name": "billing", "deliver_policy": "all", "ack_policy": "explicit",
                             "replay_policy": "instant"}),
    cc("ORDERS", "analytics", {"durable_name": "analytics", "filter_subject": "orders.shipped",
                               "ack_policy": "explicit", "max_batch": 2, "max_expires": 2000000000,
                               "max_bytes": 1000}),
    cc("ORDERS", "monitor", {"durable_name": "monitor", "deliver_subject": "mon.orders", "ack_policy": "none",
                             "idle_heartbeat": 5000000000, "flow_control": True, "headers_only": True}),
    cc("ORDERS", "lastper", {"durable_name": "lastper", "deliver_policy": "last_per_subject",
                             "filter_subject": "orders.*", "ack_policy": "all"}),
    cc("ORDERS", "fromseq", {"durable_name": "fromseq", "deliver_policy": "by_start_sequence",
                             "opt_start_seq": 2, "ack_policy": "explicit", "max_deliver": 3,
                             "backoff": [1000000000, 2000000000], "max_ack_pending": 5, "max_waiting": 3}),
    cc("ORDERS", "fromtime", {"durable_name": "fromtime", "deliver_policy": "by_start_time",
                              "opt_start_time": "2020-01-01T00:00:00Z", "ack_policy": "explicit"}),
    cc("ORDERS", "newest", {"durable_name": "newest", "deliver_policy": "new", "ack_policy": "explicit",
                            "replay_policy": "original", "description": "only new orders",
                            "inactive_threshold": 60000000000, "mem_storage": True}),
    cc("ORDERS", "last", {"durable_name": "last", "deliver_policy": "last", "ack_policy": "explicit",
                          "sample_freq": "50%"}),
    ("$JS.API.STREAM.CREATE.EPH", None, '{"name":"EPH","subjects":["eph.>"],"storage":"memory"}'),
    # 60 s: a loaded machine runs this script for over 10 s, and the final INFO counts consumers.
    cc("EPH", None, {"ack_policy": "explicit", "inactive_threshold": 60000000000}),
    ("$JS.API.CONSUMER.CREATE.EPH", None, '{"stream_name":"EPH","config":{"durable_name":"named"}}'),
    # Invalid configs and subjects.
    cc("ORDERS", "a", {"durable_name": "b"}),
    cc("OTHER", "a", {"durable_name": "a"}, subject="$JS.API.CONSUMER.CREATE.ORDERS.a"),
    cc("NOPE", "a", {"durable_name": "a"}),
    ("$JS.API.CONSUMER.CREATE.ORDERS.x", None, "{bad json"),
    ("$JS.API.CONSUMER.CREATE.ORDERS.x", None, ""),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_policy": "by_start_sequence"}),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_policy": "all", "opt_start_seq": 5}),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_policy": "by_start_time"}),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_policy": "last_per_subject"}),
    cc("ORDERS", "x", {"durable_name": "x", "ack_policy": "sometimes"}),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_policy": "bogus"}),
    cc("ORDERS", "x", {"durable_name": "x", "idle_heartbeat": 1000000000}),
    cc("ORDERS", "x", {"durable_name": "x", "flow_control": True}),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_subject": "d.x", "flow_control": True}),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_subject": "d.x", "max_waiting": 10}),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_group": "g"}),
    cc("ORDERS", "x", {"durable_name": "x", "rate_limit_bps": 1000}),
    cc("ORDERS", "x", {"durable_name": "x", "ack_policy": "explicit", "max_deliver": 2,
                       "backoff": [1000000000, 2000000000, 3000000000]}),
    # max_deliver == len(backoff) is accepted at 2.11+ only (10116 on 2.9.10): one more delivery.
    cc("ORDERS", "bk", {"durable_name": "bk", "ack_policy": "explicit", "max_deliver": 3,
                        "backoff": [1000000000, 2000000000]}),
    cc("ORDERS", "x", {"durable_name": "x", "ack_policy": "none", "max_ack_pending": 10}),
    cc("ORDERS", "x", {"durable_name": "x", "replay_policy": "sometimes"}),
    cc("ORDERS", "x.y", {"durable_name": "x.y"}),
    cc("ORDERS", "x", {"durable_name": "x", "deliver_subject": "orders.loop"}),
    # Updates: what may change and what may not.
    cc("ORDERS", "billing", {"durable_name": "billing", "deliver_policy": "new", "ack_policy": "explicit"}),
    cc("ORDERS", "billing", {"durable_name": "billing", "deliver_policy": "all", "ack_policy": "all"}),
    cc("ORDERS", "billing", {"durable_name": "billing", "deliver_policy": "all", "ack_policy": "explicit",
                             "ack_wait": 10000000000, "max_deliver": 5, "max_ack_pending": 1,
                             "description": "edited"}),
    cc("ORDERS", "billing", {"durable_name": "billing", "deliver_policy": "all", "ack_policy": "explicit",
                             "replay_policy": "original"}),
    cc("ORDERS", "billing", {"durable_name": "billing", "deliver_policy": "all", "ack_policy": "explicit",
                             "deliver_subject": "push.now"}),
    ("$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.legacy", None,
     '{"stream_name":"ORDERS","config":{"durable_name":"legacy","ack_policy":"explicit"}}'),
    ("$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.legacy2", None,
     '{"stream_name":"ORDERS","config":{"durable_name":"other"}}'),
    # Subject forms: no name (durable from the body), name + filter, filter mismatch, name vs durable.
    ("$JS.API.CONSUMER.CREATE.ORDERS", None, '{"stream_name":"ORDERS","config":{"durable_name":"billing2"}}'),
    cc("ORDERS", "fs", {"name": "fs", "durable_name": "fs", "filter_subject": "orders.shipped", "ack_policy": "explicit"},
       subject="$JS.API.CONSUMER.CREATE.ORDERS.fs.orders.shipped"),
    cc("ORDERS", "fs2", {"name": "fs2", "durable_name": "fs2", "filter_subject": "orders.created",
                         "ack_policy": "explicit"}, subject="$JS.API.CONSUMER.CREATE.ORDERS.fs2.orders.shipped"),
    cc("ORDERS", "fs3", {"name": "fs3", "durable_name": "fs3", "ack_policy": "explicit"},
       subject="$JS.API.CONSUMER.CREATE.ORDERS.fs3.orders.shipped"),
    # An explicit inactive_threshold: the 5 s default expires n1 mid-run on one server or the other.
    cc("ORDERS", "n1", {"name": "n1", "ack_policy": "explicit", "inactive_threshold": 60000000000}),
    cc("ORDERS", "n2", {"name": "n2", "durable_name": "other", "ack_policy": "explicit"}),
    ("$JS.API.CONSUMER.LEADER.STEPDOWN.ORDERS.fs", None, ""),
    cc("ORDERS", "fs", {"durable_name": "fs", "filter_subject": "orders.shipped", "ack_policy": "explicit",
                        "max_ack_pending": -1}),
    # More field checks.
    cc("ORDERS", "hb", {"durable_name": "hb", "deliver_subject": "d.hb", "idle_heartbeat": 50000000}),
    cc("ORDERS", "sf", {"durable_name": "sf", "sample_freq": "abc"}),
    cc("ORDERS", "ds", {"durable_name": "ds", "deliver_subject": "d.*"}),
    cc("ORDERS", "r3", {"durable_name": "r3", "num_replicas": 3}),
    cc("ORDERS", "desc", {"durable_name": "desc", "description": "x" * 5000}),
    # Reads.
    ("$JS.API.CONSUMER.INFO.ORDERS.billing", None, ""),
    ("$JS.API.CONSUMER.INFO.ORDERS.analytics", None, ""),
    ("$JS.API.CONSUMER.INFO.ORDERS.fromseq", None, ""),
    ("$JS.API.CONSUMER.INFO.ORDERS.missing", None, ""),
    ("$JS.API.CONSUMER.INFO.NOPE.billing", None, ""),
    ("$JS.API.CONSUMER.NAMES.ORDERS", None, ""),
    ("$JS.API.CONSUMER.NAMES.ORDERS", None, '{"offset":3}'),
    ("$JS.API.CONSUMER.NAMES.NOPE", None, ""),
    ("$JS.API.CONSUMER.LIST.ORDERS", None, '{"offset":8}'),
    # MSG.NEXT: deliveries and statuses.
    (NEXT + "ORDERS.billing", None, ""),
    (NEXT + "ORDERS.fromtime", None, '{"batch":5,"no_wait":true}'),
    (NEXT + "ORDERS.billing", None, '{"batch":1,"no_wait":true,"expires":200000000}'),
    (NEXT + "ORDERS.analytics", None, '{"batch":3}'),
    (NEXT + "ORDERS.analytics", None, '{"batch":1,"expires":3000000000}'),
    (NEXT + "ORDERS.analytics", None, '{"batch":1,"max_bytes":2000}'),
    (NEXT + "ORDERS.analytics", None, '{"batch":1,"expires":1000000000,"idle_heartbeat":800000000}'),
    (NEXT + "ORDERS.analytics", None, '{"batch":2,"no_wait":true}'),
    (NEXT + "ORDERS.analytics", None, '{"batch":1,"no_wait":true}'),
    (NEXT + "ORDERS.analytics", None, '{"batch":2,"expires":200000000}'),
    (NEXT + "ORDERS.monitor", None, '{"batch":1}'),
    (NEXT + "ORDERS.missing", None, '{"batch":1}'),
    (NEXT + "ORDERS.lastper", None, "2"),
    cc("ORDERS", "mb", {"durable_name": "mb", "ack_policy": "explicit"}),
    (NEXT + "ORDERS.mb", None, '{"batch":5,"max_bytes":50,"expires":1000000000}'),
    (NEXT + "ORDERS.mb", None, '{"batch":5,"max_bytes":300,"no_wait":true}'),
    (NEXT + "ORDERS.mb", None, "{bad"),
    (NEXT + "ORDERS.mb", None, "abc"),
    (NEXT + "ORDERS.mb", None, '{"batch":-1,"no_wait":true}'),
    (NEXT + "ORDERS.mb", None, '{"batch":1,"no_wait":true,"unknown":1}'),
    ("$JS.API.CONSUMER.INFO.ORDERS.lastper", None, ""),
    # Work queue rules.
    ("$JS.API.STREAM.CREATE.WQ", None, '{"name":"WQ","subjects":["wq.>"],"retention":"workqueue"}'),
    cc("WQ", "w1", {"durable_name": "w1", "ack_policy": "explicit"}),
    cc("WQ", "w2", {"durable_name": "w2", "ack_policy": "explicit"}),
    cc("WQ", "w3", {"durable_name": "w3", "ack_policy": "none", "filter_subject": "wq.none"}),
    ("$JS.API.CONSUMER.DELETE.WQ.w1", None, ""),
    cc("WQ", "us", {"durable_name": "us", "ack_policy": "explicit", "filter_subject": "wq.us"}),
    cc("WQ", "all", {"durable_name": "all", "ack_policy": "explicit", "filter_subject": "wq.>"}),
    cc("WQ", "p", {"durable_name": "p", "ack_policy": "explicit", "filter_subject": "wq.p",
                   "deliver_subject": "d.wq"}),
    # Deletes.
    ("$JS.API.CONSUMER.DELETE.ORDERS.plain", None, ""),
    ("$JS.API.CONSUMER.DELETE.ORDERS.plain", None, ""),
    ("$JS.API.CONSUMER.DELETE.NOPE.plain", None, ""),
    ("$JS.API.CONSUMER.NAMES.ORDERS", None, ""),
    ("$JS.API.STREAM.INFO.ORDERS", None, ""),
    ("$JS.API.INFO", None, ""),
    # After the INFO (whose consumer count the ephemerals' timers race): requests nothing answers.
    (NEXT + "NOPE.billing", None, '{"batch":1}'),
    ("$JS.API.DIRECT.GET.NOPE", None, '{"seq":1}'),
]

# Newer-server fields (streams.md §14, consumers-and-core.md §12.1): present in Peregrine, absent
# in 2.9.10.
NEWER_FIELDS = {"compression", "consumer_limits", "allow_msg_ttl", "metadata", "cluster", "ts",
                "reserved_memory", "reserved_storage", "level", "priority_groups", "priority_policy",
                "priority_timeout", "paused", "pause_remaining", "pause_until"}
VOLATILE = {"created", "first_ts", "last_ts", "time", "ts", "last_active"}


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


def run(bin_, script):
    tmp = tempfile.mkdtemp(prefix="pg-cmp-")
    proc, port = start(bin_, tmp, [])
    # Advisories on a connection of their own, read at the end (only their field order is
    # compared: which advisories each server sends differs by version).
    ev = socket.create_connection(("127.0.0.1", port)); ev.settimeout(3)
    ev.recv(65536)
    ev.sendall(b'CONNECT {"headers":true,"verbose":false}\r\nSUB $JS.EVENT.ADVISORY.> 1\r\nPING\r\n')
    pong = b""
    while b"PONG" not in pong:
        pong += ev.recv(65536)
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(3)
    s.recv(65536)  # INFO
    s.settimeout(0.08)
    s.sendall(b'CONNECT {"headers":true,"no_responders":true,"verbose":false}\r\nSUB _R 1\r\n')
    replies = []
    for subj, hdrs, body in script:
        b = body.encode()
        if hdrs:
            h = ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n").encode()
            s.sendall(b"HPUB %s _R %d %d\r\n%s%s\r\n" % (subj.encode(), len(h), len(h) + len(b), h, b))
        else:
            s.sendall(b"PUB %s _R %d\r\n%s\r\n" % (subj.encode(), len(b), b))
        data = b""
        # A reply is complete once the connection stays quiet briefly after it; requests that are
        # answered with exactly one message stop as soon as that message is complete.
        single = not subj.startswith(("$JS.API.CONSUMER.MSG.NEXT.", "$JS.API.DIRECT."))
        # Pull deliveries may trickle: a longer quiet gap ends them (slow sanitizer builds).
        s.settimeout(0.15 if subj.startswith("$JS.API.CONSUMER.MSG.NEXT.") else 0.08)
        deadline = time.time() + 3.0
        while time.time() < deadline:
            try:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
                if single and one_message(data): break
            except socket.timeout:
                if data: break
        replies.append(parse(data))
    events = b""
    ev.settimeout(0.3)
    try:
        while True:
            chunk = ev.recv(65536)
            if not chunk: break
            events += chunk
    except socket.timeout:
        pass
    ev.close(); s.close(); proc.terminate(); proc.wait(5); shutil.rmtree(tmp, ignore_errors=True)
    advisories = {}
    for hdr, body in parse(events):
        if isinstance(body, dict):
            advisories.setdefault(body.get("type"), body)
    return replies, advisories


def one_message(data):
    """True once data holds a complete MSG/HMSG (line, payload and CRLF)."""
    line, sep, rest = data.partition(b"\r\n")
    parts = line.split()
    return bool(sep) and bool(parts) and parts[0] in (b"MSG", b"HMSG") and len(rest) >= int(parts[-1]) + 2


def run_both(a_bin, b_bin, script):
    """Runs the script against both servers at once (each on its own server and connection)."""
    out = {}
    threads = [threading.Thread(target=lambda k=k, b=b: out.__setitem__(k, run(b, script)))
               for k, b in (("a", a_bin), ("b", b_bin))]
    for t in threads: t.start()
    for t in threads: t.join()
    if "a" not in out or "b" not in out:
        raise SystemExit("a comparison run failed")
    return out["a"], out["b"]


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
        if parts[0] != b"HMSG" or hlen != total:  # a delivery: keep its subject and ack reply shape
            hdr.insert(0, parts[1].decode())
            if len(parts) == (6 if parts[0] == b"HMSG" else 5):
                hdr.insert(1, ack_shape(parts[3].decode()))
        body = blob[hlen:].decode()
        try:
            body = normalise(json.loads(body))
        except ValueError:
            pass
        out.append((hdr, body))
    return out


def ack_shape(reply):
    """$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending> with the timestamp
    masked; other reply subjects as they are."""
    t = reply.split(".")
    if len(t) == 9 and t[:2] == ["$JS", "ACK"]:
        t[7] = "<ts>"
    return ".".join(t)


def normalise(v):
    if isinstance(v, dict):
        out = {k: ("<t>" if k in VOLATILE else normalise(x)) for k, x in v.items() if k not in NEWER_FIELDS}
        # An ephemeral consumer's name is random on both servers.
        if "stream_name" in out and isinstance(out.get("config"), dict) and "durable_name" not in out["config"]:
            out["name"] = "<ephemeral>"
        return out
    if isinstance(v, list):
        return [normalise(x) for x in v]
    return v


NO_RESPONDERS = [(["NATS/1.0 503"], "")]

# Documented 2.9.10 -> newest behaviour changes (consumers-and-core.md §2.5, §12.1) that Peregrine
# follows. reconcile() rewrites a Peregrine reply into the 2.9.10 form only where the pair shows
# exactly that change; the requests whose outcome differs (a filter not overlapping the stream's
# subjects, negative max_batch, backoff with max_deliver -1: accepted by newest; negative ack_wait:
# stored by 2.9.10, 10183 on newest; negative inactive_threshold: stored vs reset to 0) are left out.
OLD_10084 = "consumer in pull mode requires ack policy"
NEW_10084 = "consumer in pull mode requires explicit ack policy on workqueue stream"


BAD_REQUEST = "NATS/1.0 400 Bad Request - "


def reconcile(subject, mine, ref):
    notes = []
    # The detail after "400 Bad Request - " is Go's encoding/json error text on nats-server.
    if (len(mine) == 1 == len(ref) and mine[0][1] == "" == ref[0][1] and len(mine[0][0]) == 1 == len(ref[0][0])
            and mine[0][0][0].startswith(BAD_REQUEST) and ref[0][0][0].startswith(BAD_REQUEST)
            and mine[0][0][0] != ref[0][0][0]):
        notes.append(f"JSON parser error detail: {mine[0][0][0][len(BAD_REQUEST):]!r} vs {ref[0][0][0][len(BAD_REQUEST):]!r}")
        return ref, notes
    if subject.startswith("$JS.API.CONSUMER.MSG.NEXT.") and mine == NO_RESPONDERS and ref == []:
        notes.append("MSG.NEXT to a missing consumer: 503 (newest) vs no reply (2.9.10)")
        return [], notes
    if subject.startswith("$JS.API.DIRECT.GET.") and mine == NO_RESPONDERS and ref == []:
        notes.append("DIRECT.GET to a missing stream: 503 (newest) vs no reply (2.9.10)")
        return [], notes
    if len(mine) != 1 or len(ref) != 1 or not isinstance(mine[0][1], dict) or not isinstance(ref[0][1], dict):
        return mine, notes
    p, n = json.loads(json.dumps(mine[0][1])), ref[0][1]
    infos = [(p, n)]
    if isinstance(p.get("consumers"), list) and isinstance(n.get("consumers"), list):
        infos += [(a, b) for a, b in zip(p["consumers"], n["consumers"]) if isinstance(a, dict) and isinstance(b, dict)]
    for a, b in infos:
        ca, cb = a.get("config"), b.get("config")
        if isinstance(ca, dict) and isinstance(cb, dict) and "name" in ca and "name" not in cb:
            del ca["name"]
            notes.append("config.name on legacy durables and ephemerals (newest)")
        fa, fb = a.get("ack_floor"), b.get("ack_floor")
        if (isinstance(fa, dict) and isinstance(fb, dict) and fa.get("consumer_seq") == 0 == fb.get("consumer_seq")
                and fb.get("stream_seq") == 0 and fa.get("stream_seq", 0) > 0):
            fa["stream_seq"] = 0
            notes.append("ack floor starts at the start sequence - 1 (newest) vs 0 (2.9.10)")
    ea, eb = p.get("error"), n.get("error")
    if isinstance(ea, dict) and isinstance(eb, dict):
        if (ea.get("err_code") == 10025 == eb.get("err_code") and eb.get("description") == "invalid JSON"
                and ea.get("description", "").startswith("invalid JSON: ")):
            ea["description"] = eb["description"]
            notes.append("10025 carries the decoder's error text (newest)")
        if ea.get("description") == NEW_10084 and eb.get("description") == OLD_10084:
            ea["description"] = OLD_10084
            notes.append("10084 text (newest)")
        if (ea.get("description") == "can not update pull consumer to push based"
                and eb.get("description") == "max waiting can not be updated"):
            ea["description"] = eb["description"]
            notes.append("pull->push update checked before max_waiting (newest)")
    return [(mine[0][0], p)], notes


def order_diffs(a, b, path=""):
    """Where keys both replies have come in a different order: nats-server writes its Go structs'
    field order, and users diff --json output, so order counts too."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        ka, kb = [k for k in a if k in b], [k for k in b if k in a]
        if ka != kb:
            out.append(f"{path or '.'}: {ka} vs {kb}")
        for k in ka:
            out += order_diffs(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            out += order_diffs(x, y, f"{path}[{i}]")
    return out


def main():
    args = sys.argv[1:]
    consumers = "--consumers" in args
    args = [a for a in args if a != "--consumers"]
    pg = args[0]
    ns = args[1] if len(args) > 1 else shutil.which("nats-server")
    if not ns:
        print("nats-server not found; skipping"); return 77
    script = CONSUMER_SCRIPT if consumers else SCRIPT
    if consumers and run(pg, script[:1])[0][0] == NO_RESPONDERS:
        print("peregrine answers $JS.API.CONSUMER.NAMES with no responders: consumer API not wired yet; "
              "consumer comparisons skipped")
        return 77
    (a, adv_a), (b, adv_b) = run_both(pg, ns, script)
    if consumers and b[0] == NO_RESPONDERS:
        print("nats-server did not answer the consumer probe"); return 1
    bad = 0
    newer = set()
    for (subj, _, body), x, y in zip(script, a, b):
        if consumers:
            x, notes = reconcile(subj, x, y)
            newer.update(notes)
        if x != y:
            bad += 1
            print(f"DIFF {subj} {body}\n  peregrine:   {x}\n  nats-server: {y}")
        else:
            order = [d for (_, bx), (_, by) in zip(x, y) for d in order_diffs(bx, by)]
            if order:
                bad += 1
                print(f"FIELD ORDER {subj} {body}\n  " + "\n  ".join(order))
    common = sorted(set(adv_a) & set(adv_b))
    for t in common:
        for d in order_diffs(adv_a[t], adv_b[t]):
            bad += 1
            print(f"FIELD ORDER advisory {t}: {d}")
    print(f"{len(script) - bad}/{len(script)} replies equal; newer-server fields ignored: {sorted(NEWER_FIELDS)}")
    print(f"advisories compared for field order: {common}")
    for note in sorted(newer):
        print(f"  known difference, not counted: {note}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
