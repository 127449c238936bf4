#!/usr/bin/env python3
"""Proof that peregrine-bench corrects for coordinated omission.

Runs request/reply open loop at a fixed 1000 req/s for 4 s against a real server and freezes
the server (SIGSTOP) for 200 ms in the middle. The ~200 requests that should have been sent
during the stall are sent late, back to back, once it ends: measured from their intended send
time (corrected) the tail shows the stall (p99.9 and max >= 150 ms); measured from the actual
send (uncorrected) only the single request in flight when it froze waited, so the uncorrected
p99.9 stays far below it (its max is that one request).

usage: correction_test.py PEREGRINE_BENCH SERVER_BIN [extra bench args, e.g. --closed to see it
fail]  ($PEREGRINE_SERVER_BIN_OVERRIDE wins)
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

STALL_S = 0.2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, proc):
    for _ in range(200):
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def main():
    bench = sys.argv[1]
    server = os.environ.get("PEREGRINE_SERVER_BIN_OVERRIDE") or sys.argv[2]
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        log = open(os.path.join(tmp, "server.log"), "w")
        srv = subprocess.Popen([server, "-a", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log)
        try:
            if not wait_ready(port, srv):
                print(open(os.path.join(tmp, "server.log")).read())
                print("server did not start")
                return 1
            cmd = [bench, "--url", f"nats://127.0.0.1:{port}", "--mode", "rr", "--rate", "1000",
                   "--duration", "4", "--warmup", "0", "--json", "--quiet"] + sys.argv[3:]
            run = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
            time.sleep(1.5)  # well inside the measured phase (it starts as soon as connected)
            srv.send_signal(signal.SIGSTOP)
            time.sleep(STALL_S)
            srv.send_signal(signal.SIGCONT)
            out, _ = run.communicate(timeout=30)
        finally:
            srv.send_signal(signal.SIGCONT)
            srv.terminate()
            srv.wait(timeout=5)
    report = json.loads(out)
    if not report["ok"]:
        print("run failed:", report["error"])
        return 1
    lat = report["latency"]
    # A closed-loop run (--closed) has one "measured" histogram and no send delay.
    cor = lat.get("corrected", lat.get("measured"))
    unc = lat.get("uncorrected", cor)
    delay = lat.get("send_delay", {"p99_us": 0.0, "p999_us": 0.0, "max_us": 0.0})
    series = report["time_series"]
    print(f"samples {cor['count']}, intervals (max us): {[p['max_us'] for p in series]}")
    for name, h in (("corrected", cor), ("uncorrected", unc), ("send delay", delay)):
        print(f"{name:12} p99 {h['p99_us']:>10.1f} us  p99.9 {h['p999_us']:>10.1f} us  max {h['max_us']:>10.1f} us")
    stall_us = STALL_S * 1e6
    checks = [
        ("corrected p99.9 shows the stall", cor["p999_us"] >= 0.75 * stall_us),
        ("corrected max shows the stall", cor["max_us"] >= 0.9 * stall_us),
        ("send delay max shows the stall", delay["max_us"] >= 0.75 * stall_us),
        ("uncorrected p99.9 does not", unc["p999_us"] < 0.5 * stall_us),
        ("uncorrected p99 does not", unc["p99_us"] < 0.25 * stall_us),
        ("ran at the requested rate", cor["count"] >= 3500),
        # The per-interval series puts the stall in one or two intervals of the 4 s.
        ("time series shows the stall", max((p["max_us"] for p in series), default=0) >= 0.75 * stall_us),
        ("time series has the other intervals", len(series) >= 4),
    ]
    failed = [name for name, ok in checks if not ok]
    for name, ok in checks:
        print(("ok   " if ok else "FAIL ") + name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
