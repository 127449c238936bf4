// nats.js (v3) smoke test: an unmodified JavaScript client against the server binary in
// PEREGRINE_SERVER_BIN, started exactly like the integration tests start it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, sleep, startServer } from "./server.mjs";
import { connect, headers, RequestError } from "@nats-io/transport-node";

let srv;

before(async () => {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  srv = await startServer();
});
after(async () => { if (srv) await srv.stop(); });

const opts = () => ({ servers: `127.0.0.1:${srv.port}`, reconnect: false, timeout: 5000 });

// Collects up to n messages from a subscription, bounded by timeoutMs.
async function collect(sub, n, timeoutMs = 5000) {
  const out = [];
  const timer = setTimeout(() => sub.unsubscribe(), timeoutMs);
  for await (const m of sub) {
    out.push(m);
    if (out.length >= n) break;
  }
  clearTimeout(timer);
  return out;
}

test("INFO advertises headers and a version", async () => {
  const nc = await connect(opts());
  try {
    assert.equal(nc.info.headers, true);
    assert.match(nc.info.version, /^\d+\.\d+\.\d+/);
    assert.equal(nc.info.proto, 1);
    assert.ok(nc.info.max_payload > 0);
  } finally {
    await nc.close();
  }
});

test("pub/sub with multi-value headers", async () => {
  const nc = await connect(opts());
  try {
    const sub = nc.subscribe("e2e.hdr");
    const got = collect(sub, 1);
    const h = headers();
    h.set("X-Trace", "abc");
    h.append("Multi", "one");
    h.append("Multi", "two");
    nc.publish("e2e.hdr", "payload", { headers: h });
    const [m] = await got;
    assert.ok(m, "message not received");
    assert.equal(m.string(), "payload");
    assert.equal(m.headers.get("X-Trace"), "abc");
    assert.deepEqual(m.headers.values("Multi"), ["one", "two"]);
  } finally {
    await nc.close();
  }
});

test("request/reply and no responders", async () => {
  const svc = await connect(opts());
  const client = await connect(opts());
  try {
    const sub = svc.subscribe("e2e.echo", {
      callback: (err, m) => {
        if (!err) m.respond(`re:${m.string()}`, { headers: m.headers });
      },
    });
    await svc.flush();
    for (let i = 0; i < 10; i++) {
      const h = headers();
      h.set("N", String(i));
      const r = await client.request("e2e.echo", `q${i}`, { timeout: 5000, headers: h });
      assert.equal(r.string(), `re:q${i}`);
      assert.equal(r.headers.get("N"), String(i));
    }
    sub.unsubscribe();
    // Nobody listens: a long timeout so only a 503 status can make this fail fast.
    await assert.rejects(client.request("e2e.nobody", "x", { timeout: 10000 }), (err) => {
      assert.ok(err instanceof RequestError && err.isNoResponders(), `unexpected error: ${err}`);
      return true;
    });
  } finally {
    await client.close();
    await svc.close();
  }
});

test("queue group delivers each message to one member", async () => {
  const members = await Promise.all([connect(opts()), connect(opts())]);
  const pub = await connect(opts());
  try {
    const counts = [0, 0];
    let plain = 0;
    members.forEach((nc, i) => nc.subscribe("e2e.work", { queue: "workers", callback: () => { counts[i]++; } }));
    pub.subscribe("e2e.work", { callback: () => { plain++; } });
    await Promise.all(members.map((nc) => nc.flush()));
    const n = 200;
    for (let i = 0; i < n; i++) pub.publish("e2e.work", String(i));
    await pub.flush();
    const deadline = Date.now() + 5000;
    while ((counts[0] + counts[1] < n || plain < n) && Date.now() < deadline) await sleep(10);
    // Flushing members afterwards proves no extra deliveries are still in flight.
    await Promise.all(members.map((nc) => nc.flush()));
    assert.equal(counts[0] + counts[1], n);
    assert.ok(counts[0] > 0 && counts[1] > 0, `uneven split ${counts}`);
    assert.equal(plain, n);
  } finally {
    await pub.close();
    await Promise.all(members.map((nc) => nc.close()));
  }
});

