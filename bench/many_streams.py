#!/usr/bin/env python3
"""Many small streams, one server: creates N file streams, each with one durable pull
consumer and one 5-byte message, over one raw NATS connection (request, wait for the reply,
next), and reports the mean create time per stream + consumer + first publish.

  many_streams.py create HOST:PORT N [START]   -> "create_ms_per_stream <float>"
      (streams START..START+N-1; or "create_failed_at <i> <error>" and exit status 2)
  many_streams.py fill HOST:PORT START N
      the same streams, consumers and messages, pipelined (64 requests in flight): to reach
      a large count fast before timing `create` at that count
  many_streams.py ready HOST:PORT N T LAUNCH
      waits (at most T seconds) until $JS.API.INFO shows N streams; prints "ready_s <float>",
      seconds since LAUNCH (a Unix time taken just before the server was started)

Used by bench/many_streams.sh, which runs Peregrine and nats-server side by side.
"""
import json
import socket
import sys
import time


class conn:
    def __init__(self, host, port, timeout=10.0):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.sid = 0
        self.line()  # INFO
        self.s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nPING\r\n')
        while self.line() != b"PONG":
            pass
        self.inbox = "_INBOX.bench%d" % int(time.time() * 1e6)
        self.s.sendall(b"SUB %s.* 1\r\n" % self.inbox.encode())

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def read(self, n):
        while len(self.buf) < n + 2:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def request(self, subject, body):
        self.sid += 1
        reply = "%s.%d" % (self.inbox, self.sid)
        payload = body.encode()
        self.s.sendall(b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), reply.encode(), len(payload), payload))
        while True:
            ln = self.line()
            if ln == b"PING":
                self.s.sendall(b"PONG\r\n")
                continue
            if ln.startswith(b"MSG "):
                parts = ln.split()
                data = self.read(int(parts[-1]))
                if parts[1].decode() == reply:
                    return json.loads(data)
            elif ln.startswith(b"HMSG "):
                parts = ln.split()
                self.read(int(parts[-1]))
            elif ln.startswith(b"-ERR"):
                raise RuntimeError(ln.decode())


def check(resp, what):
    if "error" in resp:
        raise RuntimeError("%s: %s" % (what, resp["error"]))


def create(addr, n, start=0):
    host, port = addr.rsplit(":", 1)
    c = conn(host, int(port))
    t0 = time.monotonic()
    for i in range(start, start + n):
        name = "S%d" % i
        try:
            check(c.request("$JS.API.STREAM.CREATE." + name,
                            json.dumps({"name": name, "subjects": ["s%d.>" % i], "storage": "file"})), name)
            check(c.request("$JS.API.CONSUMER.DURABLE.CREATE.%s.C" % name,
                            json.dumps({"stream_name": name,
                                        "config": {"durable_name": "C", "ack_policy": "explicit"}})), name + " C")
            check(c.request("s%d.x" % i, "hello"), name + " publish")
        except (RuntimeError, OSError, ConnectionError) as e:
            # e.g. out of descriptors: say how far it got (the stream may exist without its consumer)
            print("create_failed_at %d %s" % (i, str(e).replace(" ", "_")[:200]))
            sys.exit(2)
    dt = time.monotonic() - t0
    print("create_ms_per_stream %.3f" % (dt * 1000.0 / n))


def fill(addr, start, n, window=64):
    host, port = addr.rsplit(":", 1)
    c = conn(host, int(port), timeout=60.0)

    def run(make):
        sent = got = 0
        while got < n:
            out = []
            while sent < n and sent - got < window:
                subject, body = make(start + sent)
                payload = body.encode()
                out.append(b"PUB %s %s.f%d %d\r\n%s\r\n" % (subject.encode(), c.inbox.encode(), sent, len(payload), payload))
                sent += 1
            if out:
                c.s.sendall(b"".join(out))
            ln = c.line()
            if ln == b"PING":
                c.s.sendall(b"PONG\r\n")
            elif ln.startswith(b"MSG ") or ln.startswith(b"HMSG "):
                data = c.read(int(ln.split()[-1]))
                if ln.startswith(b"MSG ") and b'"error"' in data:
                    sys.exit("fill failed: %s" % data[:200].decode())
                got += 1

    run(lambda i: ("$JS.API.STREAM.CREATE.S%d" % i,
                   json.dumps({"name": "S%d" % i, "subjects": ["s%d.>" % i], "storage": "file"})))
    run(lambda i: ("$JS.API.CONSUMER.DURABLE.CREATE.S%d.C" % i,
                   json.dumps({"stream_name": "S%d" % i, "config": {"durable_name": "C", "ack_policy": "explicit"}})))
    run(lambda i: ("s%d.x" % i, "hello"))
    print("filled %d" % n)


def ready(addr, n, limit, launched):
    host, port = addr.rsplit(":", 1)
    deadline = launched + limit
    while time.time() < deadline:
        try:
            c = conn(host, int(port), timeout=2.0)
            resp = c.request("$JS.API.INFO", "")
            if resp.get("streams", -1) >= n:
                print("ready_s %.3f" % (time.time() - launched))
                return
        except (OSError, ConnectionError, RuntimeError, ValueError):
            pass
        time.sleep(0.01)
    print("ready_s timeout")
    sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "create":
        create(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    elif len(sys.argv) >= 5 and sys.argv[1] == "fill":
        fill(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) >= 6 and sys.argv[1] == "ready":
        ready(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit(__doc__)
