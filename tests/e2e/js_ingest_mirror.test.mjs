// nats.js (v3, @nats-io/jetstream 3.4) against the server in PEREGRINE_SERVER_BIN:
//  - fast-ingest batches with the client's own startFastIngest (exported from
//    "@nats-io/jetstream/internal"): add / ping / end / last on memory and file streams with
//    allow_batched, and the error a stream without it answers (10205);
//  - a mirror (ORDERS-ARCHIVE of ORDERS) and a sourcing stream (ALL-ORDERS of ORDERS-US and
//    ORDERS-EU) kept across a SIGTERM restart on the same store dir: no gap, no duplicate;
//  - a KV bucket (the stream kvm.create makes; @nats-io/kv is not installed, so the bucket is
//    made with jsm and written with js.publish on $KV.<bucket>.<key>, as the kv client does)
//    with a mirror_direct mirror answering $JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key>,
//    and per-key TTLs (kv.create(key, value, ttl) on a bucket with markerTTL).
// PEREGRINE_E2E_REF=1 runs the file against nats-server 2.9.10, skipping what it lacks
// (fast ingest: 2.14; per-message TTL and delete markers: 2.11).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, isReference, sleep, startServer, until } from "./server.mjs";
import { connect, createInbox } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startFastIngest } from "@nats-io/jetstream/internal";

const dec = new TextDecoder();
const jsConf = (dir) => `jetstream {\n  store_dir: "${dir}/js"\n}\n`;

// One server for the fast-ingest and KV tests; the restart test starts its own.
let srv;
before(async () => {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  srv = await startServer(jsConf);
});
after(async () => { if (srv) await srv.stop(); });

const opts = (port) => ({ servers: `127.0.0.1:${port}`, reconnect: false, timeout: 5000 });

async function withJs(port, fn) {
  const nc = await connect(opts(port));
  try {
    await fn(nc, await jetstreamManager(nc), jetstream(nc));
  } finally {
    await nc.close();
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Fast-ingest batches (nats-server 2.14+).

const fiSkip = isReference ? "nats-server 2.9.10 lacks fast-ingest batches (2.14)" : false;
const N = 500;
const fiSubject = (storage, i) => `fi.${storage}.${i % 3 === 0 ? "a" : "b"}`;

for (const storage of ["memory", "file"]) {
  test(`fast ingest (${storage}): ${N} messages with add/ping/end, then a batch closed by last()`,
    { skip: fiSkip, timeout: 30000 }, async () => {
      await withJs(srv.port, async (nc, jsm) => {
        const name = `FI_${storage.toUpperCase()}`;
        const si = await jsm.streams.add({ name, subjects: [`fi.${storage}.>`], storage, allow_batched: true });
        assert.equal(si.config.allow_batched, true);

        const fi = await startFastIngest(nc, fiSubject(storage, 1), "m1", { allowGaps: false, ackInterval: 10 });
        const gaps = [];
        const gapsDone = (async () => { for await (const g of fi.gaps()) gaps.push(g); })();
        let lastAck = 0;
        for (let i = 2; i <= N; i++) {
          const p = await fi.add(fiSubject(storage, i), `m${i}`);
          assert.equal(p.batchSeq, i);
          assert.ok(p.ackSeq <= i);
          if (i % 100 === 0) {
            const pr = await fi.ping();
            assert.equal(pr.batchSeq, i, "ping reports the batch sequence of the last add");
            assert.ok(pr.ackSeq >= lastAck && pr.ackSeq <= i, `ping ackSeq ${pr.ackSeq} after ${lastAck}, at ${i}`);
            lastAck = pr.ackSeq;
          }
        }
        assert.ok(lastAck > 0, "no flow ack seen by the last ping");
        const ack = await fi.end();
        assert.deepEqual({ ...ack }, { stream: name, seq: N, batch: fi.batch, count: N });
        assert.deepEqual(await fi.done(), ack);
        await gapsDone;
        assert.deepEqual(gaps, []);

        const st = (await jsm.streams.info(name)).state;
        assert.equal(st.messages, N);
        assert.equal(st.first_seq, 1);
        assert.equal(st.last_seq, N);
        // Every message in publish order, as a plain publish stores it (no batch headers).
        for (let seq = 1; seq <= N; seq++) {
          const sm = await jsm.streams.getMessage(name, { seq });
          assert.equal(sm.subject, fiSubject(storage, seq), `subject at ${seq}`);
          assert.equal(sm.string(), `m${seq}`, `payload at ${seq}`);
          if (seq === 1 || seq === 250 || seq === N) assert.equal(sm.header.get("Nats-Batch-Id"), "");
        }

        // A second batch ended by last(): its final message is stored and counted.
        const fi2 = await startFastIngest(nc, `fi.${storage}.c`, "x1", { allowGaps: true });
        assert.notEqual(fi2.batch, fi.batch);
        await fi2.add(`fi.${storage}.c`, "x2");
        const ack2 = await fi2.last(`fi.${storage}.d`, "x3");
        assert.deepEqual({ ...ack2 }, { stream: name, seq: N + 3, batch: fi2.batch, count: 3 });
        const lastMsg = await jsm.streams.getMessage(name, { seq: N + 3 });
        assert.equal(lastMsg.subject, `fi.${storage}.d`);
        assert.equal(lastMsg.string(), "x3");
        assert.equal((await jsm.streams.info(name)).state.messages, N + 3);
        await fi.add(`fi.${storage}.a`, "late").then(
          () => assert.fail("add after end() must fail"), (e) => assert.match(e.message, /batch closed/));
      });
    });
}

test("fast ingest: a stream without allow_batched refuses the batch (10205) and stores nothing",
  { skip: fiSkip, timeout: 15000 }, async () => {
    await withJs(srv.port, async (nc, jsm) => {
      await jsm.streams.add({ name: "FI_PLAIN", subjects: ["fiplain.>"] });
      await assert.rejects(startFastIngest(nc, "fiplain.x", "x", { allowGaps: false }), (err) => {
        assert.equal(err.name, "JetStreamApiError");
        assert.equal(err.code, 10205);
        assert.equal(err.status, 400);
        assert.equal(err.message, "batch publish is disabled");
        return true;
      });
      // The frame on the wire, as nats-server 2.14 sends it to the batch's reply subject.
      const inbox = createInbox();
      const sub = nc.subscribe(`${inbox}.>`, { max: 1, timeout: 5000 });
      nc.publish("fiplain.x", "x", { reply: `${inbox}.10.fail.1.0.$FI` });
      for await (const m of sub) {
        assert.deepEqual(JSON.parse(dec.decode(m.data)), {
          error: { code: 400, err_code: 10205, description: "batch publish is disabled" }, stream: "FI_PLAIN", seq: 0,
        });
      }
      assert.equal((await jsm.streams.info("FI_PLAIN")).state.messages, 0);
    });
  });

// ---------------------------------------------------------------------------------------------
// 2. A mirror and a sourcing stream across a restart of the server on the same store dir.

const orderBody = (region, i) =>
  `{"order_id":"${region}-${i}","customer":"acme-co","total_cents":${1000 + i},"ts":"2026-05-22T10:14:22Z"}`;

async function publishOrders(js, from, to) {
  for (let i = from; i <= to; i++) {
    await js.publish(i % 2 ? "orders.created" : "orders.shipped", orderBody("o", i));
    await js.publish(`us.orders.${i % 2 ? "created" : "shipped"}`, orderBody("us", i));
    await js.publish(`eu.orders.${i % 2 ? "created" : "shipped"}`, orderBody("eu", i));
  }
}

// Every message of a stream, sequence 1 to last_seq (nothing deleted in these streams).
async function allMsgs(jsm, name) {
  const st = (await jsm.streams.info(name)).state;
  const out = [];
  for (let seq = st.first_seq; seq <= st.last_seq; seq++) {
    const m = await jsm.streams.getMessage(name, { seq });
    out.push({ seq: m.seq, subject: m.subject, data: m.string(), source: m.header.get("Nats-Stream-Source") });
  }
  return { state: st, msgs: out };
}

// Waits until the mirror holds the origin's last sequence and the sourcing stream holds
// `total` messages, then waits a little more so a late duplicate would show.
async function caughtUp(jsm, total) {
  await until("ORDERS-ARCHIVE to reach ORDERS' last sequence", async () => {
    const o = (await jsm.streams.info("ORDERS")).state;
    const m = (await jsm.streams.info("ORDERS-ARCHIVE")).state;
    return m.last_seq === o.last_seq && m.messages === o.messages;
  });
  await until(`ALL-ORDERS to hold ${total} messages`, async () =>
    (await jsm.streams.info("ALL-ORDERS")).state.messages >= total);
  await sleep(500);
}

test("mirror and source: no gap and no duplicate across a SIGTERM restart on the same store dir",
  { timeout: 60000 }, async () => {
    const own = await startServer(jsConf);
    try {
      let nc = await connect(opts(own.port));
      let jsm = await jetstreamManager(nc);
      let js = jetstream(nc);
      await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"], storage: "file" });
      await jsm.streams.add({ name: "ORDERS-US", subjects: ["us.orders.>"], storage: "file" });
      await jsm.streams.add({ name: "ORDERS-EU", subjects: ["eu.orders.>"], storage: "file" });
      const mi = await jsm.streams.add({ name: "ORDERS-ARCHIVE", storage: "file", mirror: { name: "ORDERS" } });
      assert.equal(mi.config.mirror.name, "ORDERS");
      await jsm.streams.add({ name: "ALL-ORDERS", storage: "file",
                              sources: [{ name: "ORDERS-US" }, { name: "ORDERS-EU" }] });

      await publishOrders(js, 1, 20);
      await caughtUp(jsm, 40);
      // Some more, the server stopped right after (the mirror may or may not have them yet).
      await publishOrders(js, 21, 30);
      await nc.close();
      const how = await own.restart();
      assert.equal(how.killed, false, "the server did not exit on SIGTERM within 2 s");

      nc = await connect(opts(own.port));
      jsm = await jetstreamManager(nc);
      js = jetstream(nc);
      const names = [];
      for await (const s of jsm.streams.list()) names.push(s.config.name);
      assert.deepEqual(names.sort(), ["ALL-ORDERS", "ORDERS", "ORDERS-ARCHIVE", "ORDERS-EU", "ORDERS-US"]);
      assert.equal((await jsm.streams.info("ORDERS")).state.last_seq, 30);
      await publishOrders(js, 31, 40);
      await caughtUp(jsm, 80);

      const origin = await allMsgs(jsm, "ORDERS");
      const mirror = await allMsgs(jsm, "ORDERS-ARCHIVE");
      assert.equal(origin.state.messages, 40);
      assert.deepEqual([mirror.state.messages, mirror.state.first_seq, mirror.state.last_seq], [40, 1, 40]);
      assert.deepEqual(mirror.msgs.map(({ seq, subject, data }) => ({ seq, subject, data })),
                       origin.msgs.map(({ seq, subject, data }) => ({ seq, subject, data })));
      const mInfo = await jsm.streams.info("ORDERS-ARCHIVE");
      assert.equal(mInfo.mirror.name, "ORDERS");
      assert.equal(mInfo.mirror.lag, 0);

      // Every sourced message once, each origin's messages in their order.
      const all = await allMsgs(jsm, "ALL-ORDERS");
      assert.equal(all.state.messages, 80);
      for (const region of ["us", "eu"]) {
        const got = all.msgs.filter((m) => m.subject.startsWith(`${region}.`));
        const want = [];
        for (let i = 1; i <= 40; i++)
          want.push({ subject: `${region}.orders.${i % 2 ? "created" : "shipped"}`, data: orderBody(region, i) });
        assert.deepEqual(got.map(({ subject, data }) => ({ subject, data })), want, `messages sourced from ${region}`);
        const srcName = region === "us" ? "ORDERS-US" : "ORDERS-EU";
        got.forEach((m, i) =>
          assert.match(m.source, new RegExp(`^${srcName} ${i + 1}( |$)`), `Nats-Stream-Source of ${region} #${i + 1}`));
      }
      await nc.close();
    } finally {
      await own.stop();
    }
  });

// SIGTERM with consumers (a durable, a mirror's and a source's internal ones) must end the
// process cleanly: nats-server 2.9.10 exits with status 1 and no signal. Peregrine used to
// die of SIGSEGV here (its consumers unsubscribed through an internal client already gone).
test("SIGTERM with consumers exits without a crash", { timeout: 30000 }, async () => {
  const own = await startServer(jsConf);
  try {
    await withJs(own.port, async (nc, jsm, js) => {
      await jsm.streams.add({ name: "S", subjects: ["s.>"], storage: "file" });
      await jsm.consumers.add("S", { durable_name: "D", ack_policy: "explicit" });
      await jsm.streams.add({ name: "M", storage: "file", mirror: { name: "S" } });
      await js.publish("s.x", "x");
      await until("the mirror", async () => (await jsm.streams.info("M")).state.messages === 1);
    });
    const how = await own.restart();
    assert.deepEqual([how.signal, how.killed], [null, false], `exit on SIGTERM: ${JSON.stringify(how)}`);
    await withJs(own.port, async (nc, jsm) => {
      assert.equal((await jsm.consumers.info("S", "D")).num_pending, 1);
    });
  } finally {
    const how = await own.stop();
    assert.deepEqual([how.signal, how.killed], [null, false], `exit on SIGTERM: ${JSON.stringify(how)}`);
  }
});

// ---------------------------------------------------------------------------------------------
// 3. KV: a mirror answering direct gets for its origin, and per-key TTLs.

// The stream @nats-io/kv's kvm.create makes for a bucket (history 1).
const kvStream = (bucket, extra = {}) => ({
  name: `KV_${bucket}`, subjects: [`$KV.${bucket}.>`], retention: "limits", storage: "file", discard: "new",
  max_msgs_per_subject: 1, max_msgs: -1, max_bytes: -1, max_age: 0, max_msg_size: -1, num_replicas: 1,
  allow_rollup_hdrs: true, deny_delete: true, allow_direct: true, duplicate_window: 120_000_000_000, ...extra,
});

// A raw direct get; resolves to { code, stream, subject, seq, value, headers }.
async function directGet(nc, subject, body = "") {
  const m = await nc.request(subject, body, { timeout: 2000 });
  const h = m.headers;
  return { code: h?.code ?? 0, stream: h?.get("Nats-Stream") ?? "", subject: h?.get("Nats-Subject") ?? "",
           seq: Number(h?.get("Nats-Sequence") ?? 0), value: dec.decode(m.data), headers: h };
}

test("KV: a mirror_direct mirror answers direct gets sent to the origin bucket", { timeout: 30000 }, async () => {
  await withJs(srv.port, async (nc, jsm, js) => {
    await jsm.streams.add(kvStream("config"));
    const keys = { "db.host": "10.0.0.7", "db.port": "5432", "feature.x": "on" };
    for (const [k, v] of Object.entries(keys)) await js.publish(`$KV.config.${k}`, v);
    await js.publish("$KV.config.feature.x", "off");  // history 1: the new value replaces it
    const want = { ...keys, "feature.x": "off" };

    // As nats.go makes a mirror bucket: mirror of KV_config, mirror_direct, allow_direct.
    const mi = await jsm.streams.add({ name: "KV_config_mirror", storage: "file", max_msgs_per_subject: 1,
                                       allow_rollup_hdrs: true, deny_delete: true, allow_direct: true,
                                       mirror_direct: true, mirror: { name: "KV_config" } });
    assert.equal(mi.config.mirror_direct, true);
    await until("the mirror to catch up", async () =>
      (await jsm.streams.info("KV_config_mirror")).state.last_seq === 4);

    // Origin and mirror both answer (one queue group); either gives the current value.
    const answeredBy = new Set();
    for (let round = 0; round < 5; round++) {
      for (const [k, v] of Object.entries(want)) {
        const r = await directGet(nc, `$JS.API.DIRECT.GET.KV_config.$KV.config.${k}`);
        assert.equal(r.code, 0);
        assert.equal(r.value, v);
        assert.equal(r.subject, `$KV.config.${k}`);
        answeredBy.add(r.stream);
      }
    }
    for (const s of answeredBy) assert.ok(["KV_config", "KV_config_mirror"].includes(s), s);

    // The origin stops answering direct gets: its mirror still does, for the origin's name.
    const up = await jsm.streams.update("KV_config", { allow_direct: false });
    assert.equal(up.config.allow_direct, false);
    for (const [k, v] of Object.entries(want)) {
      const r = await directGet(nc, `$JS.API.DIRECT.GET.KV_config.$KV.config.${k}`);
      assert.deepEqual([r.code, r.stream, r.subject, r.value], [0, "KV_config_mirror", `$KV.config.${k}`, v]);
    }
    assert.equal((await directGet(nc, "$JS.API.DIRECT.GET.KV_config.$KV.config.feature.x")).seq, 4);
    const byBody = await directGet(nc, "$JS.API.DIRECT.GET.KV_config",
                                   JSON.stringify({ last_by_subj: "$KV.config.db.port" }));
    assert.deepEqual([byBody.stream, byBody.value, byBody.seq], ["KV_config_mirror", "5432", 2]);
    const missing = await directGet(nc, "$JS.API.DIRECT.GET.KV_config.$KV.config.nope");
    assert.equal(missing.code, 404);
    // New values reach the mirror and are read through the origin's name.
    await js.publish("$KV.config.db.host", "10.0.0.8");
    await until("the new value through the mirror", async () =>
      (await directGet(nc, "$JS.API.DIRECT.GET.KV_config.$KV.config.db.host")).value === "10.0.0.8");
  });
});

test("KV: per-key TTL (kv.create(key, value, ttl) on a bucket with markerTTL) removes the key",
  { skip: isReference ? "nats-server 2.9.10 lacks per-message TTL and delete markers (2.11)" : false, timeout: 30000 },
  async () => {
    await withJs(srv.port, async (nc, jsm, js) => {
      // kvm.create("sessions", { markerTTL: 2000 }): allow_msg_ttl and subject_delete_marker_ttl.
      const si = await jsm.streams.add(kvStream("sessions",
                                                { allow_msg_ttl: true, subject_delete_marker_ttl: 2_000_000_000 }));
      assert.equal(si.config.allow_msg_ttl, true);
      assert.equal(si.config.subject_delete_marker_ttl, 2_000_000_000);
      // kv.create(key, value, ttl): only if the key does not exist, with a Nats-TTL header.
      const create = (key, value, ttl) =>
        js.publish(`$KV.sessions.${key}`, value, { expect: { lastSubjectSequence: 0 }, ...(ttl ? { ttl } : {}) });
      const pa = await create("u1", "token-1", "1s");
      assert.equal(pa.seq, 1);
      await assert.rejects(create("u1", "token-2", "1s"), (err) => /wrong last sequence: 1/.test(err.message));
      assert.equal((await create("keep", "forever")).seq, 2);

      const first = await jsm.streams.getMessage("KV_sessions", { seq: 1 });
      assert.equal(first.header.get("Nats-TTL"), "1s");
      assert.equal((await directGet(nc, "$JS.API.DIRECT.GET.KV_sessions.$KV.sessions.u1")).value, "token-1");

      // Gone after its TTL; the last message on the key is then a delete marker (empty, MaxAge).
      const t0 = Date.now();
      await until("u1 to expire", async () => (await jsm.streams.getMessage("KV_sessions", { seq: 1 })) === null, 5000);
      assert.ok(Date.now() - t0 < 4000, "expired long after its 1 s TTL");
      // (what kv.get / kv.watch report as a PURGE; nats-server 2.11+ writes it on TTL expiry).
      const marker = await directGet(nc, "$JS.API.DIRECT.GET.KV_sessions.$KV.sessions.u1");
      assert.equal(marker.code, 0, "no delete marker after the key's TTL");
      assert.equal(marker.seq, 3);
      assert.equal(marker.value, "");
      assert.equal(marker.headers.get("Nats-Marker-Reason"), "MaxAge");
      assert.equal(marker.headers.get("Nats-TTL"), "2s");
      assert.equal(marker.headers.get("Nats-Rollup"), "sub");
      // The marker expires in turn: the key has no message left.
      await until("the marker to expire", async () =>
        (await directGet(nc, "$JS.API.DIRECT.GET.KV_sessions.$KV.sessions.u1")).code === 404, 6000);
      assert.equal((await directGet(nc, "$JS.API.DIRECT.GET.KV_sessions.$KV.sessions.keep")).value, "forever");
    });
  });
