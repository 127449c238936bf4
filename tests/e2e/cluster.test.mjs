// nats.js against a two-server cluster (B routes to A): the client learns the cluster from
// INFO connect_urls, request/reply and queue groups work across the route, and a client
// connected to A with only A's URL fails over to B when A stops.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, freePort, sleep, startServer } from "./server.mjs";
import { connect } from "@nats-io/transport-node";

let a, b;
const clusterConf = (name, cport, routes) => () =>
  `server_name: ${name}\ncluster {\n  name: e2e\n  listen: 127.0.0.1:${cport}\n` +
  (routes.length ? `  routes: [${routes.map((p) => `nats-route://127.0.0.1:${p}`).join(", ")}]\n` : "") + "}\n";

// Resolves once a fresh client of `srv` sees `want` servers in connect_urls (bounded).
async function waitForCluster(srv, want, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const nc = await connect({ servers: `127.0.0.1:${srv.port}`, reconnect: false, timeout: 5000 });
    const urls = nc.info?.connect_urls ?? [];
    await nc.close();
    if (urls.length === want) return urls;
    await sleep(50);
  }
  throw new Error(`no cluster of ${want} seen from port ${srv.port}`);
}

before(async () => {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  const ca = await freePort();
  const cb = await freePort();
  a = await startServer(clusterConf("A", ca, []));
  b = await startServer(clusterConf("B", cb, [ca]));
  await waitForCluster(a, 2);
  await waitForCluster(b, 2);
});
after(async () => {
  if (b) await b.stop();
  if (a) await a.stop();
});

// Retries a request until the responder's interest crossed the route (503 before that).
async function requestWhenReady(nc, subject, data, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await nc.request(subject, data, { timeout: 2000 });
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(50);
    }
  }
}

test("INFO connect_urls lists both servers", async () => {
  const urls = await waitForCluster(a, 2);
  assert.deepEqual([...urls].sort(), [`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`].sort());
});

test("request/reply and a queue group across the route", async () => {
  const onA = await connect({ servers: `127.0.0.1:${a.port}`, reconnect: false });
  const onB = await connect({ servers: `127.0.0.1:${b.port}`, reconnect: false });
  onB.subscribe("e2e.echo", { callback: (_e, m) => m.respond(m.data) });
  await onB.flush();
  const r = await requestWhenReady(onA, "e2e.echo", "hello");
  assert.equal(r.string(), "hello");

  const got = new Map();
  const count = (who) => (_e, m) => got.set(m.string(), (got.get(m.string()) ?? []).concat(who));
  onA.subscribe("e2e.work", { queue: "w", callback: count("a") });
  onB.subscribe("e2e.work", { queue: "w", callback: count("b") });
  onB.subscribe("e2e.ready", { callback: (_e, m) => m.respond() });
  await onA.flush();
  await onB.flush();
  await requestWhenReady(onA, "e2e.ready", "");  // B's queue member is known on A by now
  for (let i = 0; i < 100; i++) onA.publish("e2e.work", String(i));
  await onA.flush();
  const deadline = Date.now() + 10000;
  while (got.size < 100 && Date.now() < deadline) await sleep(20);
  await sleep(200);
  assert.equal(got.size, 100);
  for (const [k, who] of got) assert.equal(who.length, 1, `message ${k} went to ${who}`);
  await onA.close();
  await onB.close();
});

test("a client fails over to the server it learned from connect_urls", async () => {
  const nc = await connect({
    servers: `127.0.0.1:${a.port}`, reconnectTimeWait: 100, maxReconnectAttempts: 50, timeout: 5000,
  });
  const reconnected = (async () => {
    for await (const s of nc.status()) if (s.type === "reconnect") return s;
  })();
  await a.stop();
  a = null;
  let timer;
  const timeout = new Promise((_r, reject) => { timer = setTimeout(() => reject(new Error("no reconnect")), 15000); });
  await Promise.race([reconnected, timeout]);
  clearTimeout(timer);
  assert.equal(nc.getServer(), `127.0.0.1:${b.port}`);
  const sub = nc.subscribe("e2e.after", { max: 1 });
  nc.publish("e2e.after", "still here");
  for await (const m of sub) assert.equal(m.string(), "still here");
  await nc.close();
});
