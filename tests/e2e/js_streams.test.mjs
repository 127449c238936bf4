// nats.js (v3, @nats-io/jetstream) against the server in PEREGRINE_SERVER_BIN with JetStream
// on a temporary store dir: jsm.streams.add/info/list/update/purge, js.publish (PubAck,
// dedup, expectations), jsm.streams.getMessage, direct get and a direct batch.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, isReference, startServer } from "./server.mjs";
import { connect, headers } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";

let srv;

before(async () => {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  srv = await startServer((dir) => `jetstream {\n  store_dir: "${dir}/js"\n}\n`);
});
after(async () => { if (srv) await srv.stop(); });

const opts = () => ({ servers: `127.0.0.1:${srv.port}`, reconnect: false, timeout: 5000 });

async function withJs(fn) {
  const nc = await connect(opts());
  try {
    await fn(nc, await jetstreamManager(nc), jetstream(nc));
  } finally {
    await nc.close();
  }
}

test("streams add/info/list/update and js.publish", async () => {
  await withJs(async (nc, jsm, js) => {
    const si = await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"] });
    assert.equal(si.config.name, "ORDERS");
    assert.equal(si.config.max_msgs, -1);
    assert.equal(si.config.duplicate_window, 120_000_000_000);
    assert.equal(si.state.messages, 0);

    const enc = new TextEncoder();
    const payload = '{"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:22Z"}';
    let pa = await js.publish("orders.created", enc.encode(payload));
    assert.equal(pa.stream, "ORDERS");
    assert.equal(pa.seq, 1);
    pa = await js.publish("orders.created", enc.encode(payload), { msgID: "m1" });
    assert.equal(pa.seq, 2);
    pa = await js.publish("orders.created", enc.encode(payload), { msgID: "m1" });
    assert.equal(pa.seq, 2);
    assert.equal(pa.duplicate, true);
    await assert.rejects(js.publish("orders.x", enc.encode("x"), { expect: { lastSequence: 1 } }),
      (err) => /wrong last sequence: 2/.test(err.message));

    const info = await jsm.streams.info("ORDERS");
    assert.equal(info.state.messages, 2);
    assert.equal(info.state.last_seq, 2);
    assert.equal(info.state.bytes, 30 + 14 + 91 + 34 + 14 + 91 + "NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n".length);

    const names = [];
    for await (const s of jsm.streams.list()) names.push(s.config.name);
    assert.deepEqual(names, ["ORDERS"]);

    const updated = await jsm.streams.update("ORDERS", { max_msgs: 10, allow_direct: true });
    assert.equal(updated.config.max_msgs, 10);
    assert.equal(updated.config.allow_direct, true);

    const sm = await jsm.streams.getMessage("ORDERS", { seq: 1 });
    assert.equal(sm.subject, "orders.created");
    assert.equal(sm.string(), payload);

    await assert.rejects(jsm.streams.add({ name: "ARCHIVE", subjects: ["orders.*"] }),
      (err) => /subjects overlap with an existing stream/.test(err.message));
  });
});

test("direct get single and batch", async () => {
  await withJs(async (nc, jsm, js) => {
    await jsm.streams.add({ name: "DG", subjects: ["dg.>"], allow_direct: true });
    for (const s of ["dg.a", "dg.b", "dg.a"]) await js.publish(s, new TextEncoder().encode(s));
    const m = await jsm.direct.getMessage("DG", { last_by_subj: "dg.a" });
    assert.equal(m.seq, 3);
    assert.equal(m.subject, "dg.a");
    const iter = await jsm.direct.getBatch("DG", { seq: 1, batch: 3 });
    const got = [];
    for await (const sm of iter) got.push([sm.seq, sm.pending]);
    assert.deepEqual(got.map((g) => g[0]), [1, 2, 3]);
    assert.deepEqual(got.map((g) => g[1]), [2, 1, 0]);
  });
});

test("purge and delete through the manager", async () => {
  await withJs(async (nc, jsm, js) => {
    await jsm.streams.add({ name: "PG", subjects: ["pg.>"], storage: "memory" });
    for (let i = 0; i < 5; i++) await js.publish("pg.a", new TextEncoder().encode(String(i)));
    assert.equal(await jsm.streams.deleteMessage("PG", 3, false), true);
    const pr = await jsm.streams.purge("PG", { keep: 1 });
    assert.equal(pr.purged, 3);
    const info = await jsm.streams.info("PG");
    assert.equal(info.state.first_seq, 5);
    assert.equal(await jsm.streams.delete("PG"), true);
  });
});

// Atomic batch publishing (2.12+; nats-server 2.9.10 stores each message at once instead).
const atomicSkip = { skip: isReference ? "nats-server 2.9.10 lacks atomic batches" : false };

test("atomic batch: js.startBatch / add / commit stores the whole batch with one PubAck", atomicSkip, async () => {
  await withJs(async (nc, jsm, js) => {
    await jsm.streams.add({ name: "BATCH", subjects: ["batch.>"], allow_atomic: true });
    const enc = new TextEncoder();
    const b = await js.startBatch("batch.a", enc.encode("one"));
    b.add("batch.b", enc.encode("two"));
    await b.add("batch.a", enc.encode("three"), { ack: true });
    const ack = await b.commit("batch.c", enc.encode("four"));
    assert.equal(ack.stream, "BATCH");
    assert.equal(ack.seq, 4);
    assert.equal(ack.count, 4);
    assert.equal(ack.batch, b.id);
    const last = await jsm.streams.getMessage("BATCH", { seq: 4 });
    assert.equal(last.subject, "batch.c");
    assert.equal(last.header.get("Nats-Batch-Commit"), "1");
    assert.equal(last.header.get("Nats-Batch-Sequence"), "4");
    assert.equal((await jsm.streams.info("BATCH")).state.messages, 4);
  });
});

test("atomic batch: gaps, disabled streams and failed checks store nothing", atomicSkip, async () => {
  await withJs(async (nc, jsm) => {
    await jsm.streams.add({ name: "PLAIN", subjects: ["plain.>"] });
    await jsm.streams.add({ name: "AB", subjects: ["ab.>"], allow_atomic: true });
    const enc = new TextEncoder();
    const dec = new TextDecoder();
    const send = async (subj, id, seq, commit, extra = {}) => {
      const h = headers();
      h.set("Nats-Batch-Id", id);
      if (seq !== undefined) h.set("Nats-Batch-Sequence", String(seq));
      if (commit) h.set("Nats-Batch-Commit", commit);
      for (const [k, v] of Object.entries(extra)) h.set(k, v);
      const r = await nc.request(subj, enc.encode("x"), { headers: h, timeout: 2000 });
      return r.data.length ? JSON.parse(dec.decode(r.data)) : {};
    };
    assert.equal((await send("plain.x", "P1", 1)).error.err_code, 10174);
    assert.equal((await send("ab.x", "A1")).error.err_code, 10175);
    assert.deepEqual(await send("ab.x", "A1", 1), {});
    const gap = await send("ab.x", "A1", 3);
    assert.deepEqual(gap.error, { code: 400, err_code: 10176, description: "atomic publish batch is incomplete" });
    assert.equal((await send("ab.x", "A1", 2, "1")).error.err_code, 10176);  // the batch is gone
    // A failing check at commit fails the whole batch.
    assert.deepEqual(await send("ab.x", "A2", 1, undefined, { "Nats-Msg-Id": "m1" }), {});
    const dup = await send("ab.y", "A2", 2, "1", { "Nats-Msg-Id": "m1" });
    assert.equal(dup.error.err_code, 10201);
    // eob commits without storing the marker.
    assert.deepEqual(await send("ab.x", "A3", 1), {});
    assert.deepEqual(await send("ab.x", "A3", 2), {});
    const eob = await send("ab.x", "A3", 3, "eob");
    assert.deepEqual(eob, { stream: "AB", seq: 2, batch: "A3", count: 2 });
    assert.equal((await jsm.streams.info("AB")).state.messages, 2);
    assert.equal((await jsm.streams.info("PLAIN")).state.messages, 0);
  });
});

// Subject delete markers (ADR-43, 2.11+): max_age removing a subject's last message leaves a
// marker that a nats.js consumer sees with its headers; the marker then expires too.
test("subject delete markers reach a nats.js consumer", { skip: isReference ? "nats-server 2.9.10 has no delete markers" : false }, async () => {
  await withJs(async (nc, jsm, js) => {
    const si = await jsm.streams.add({ name: "SDM", subjects: ["sdm.>"], max_age: 1_000_000_000,
                                       subject_delete_marker_ttl: 1_000_000_000 });
    assert.equal(si.config.allow_msg_ttl, true);
    assert.equal(si.config.allow_rollup_hdrs, true);
    await js.publish("sdm.key", new TextEncoder().encode("v1"));
    const c = await js.consumers.get("SDM");  // ordered consumer
    const iter = await c.consume();
    const seen = [];
    for await (const m of iter) {
      seen.push({ subject: m.subject, seq: m.seq, reason: m.headers?.get("Nats-Marker-Reason") ?? "",
                  ttl: m.headers?.get("Nats-TTL") ?? "", size: m.data.length });
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, [{ subject: "sdm.key", seq: 1, reason: "", ttl: "", size: 2 },
                            { subject: "sdm.key", seq: 2, reason: "MaxAge", ttl: "1s", size: 0 }]);
    for (let i = 0; i < 80 && (await jsm.streams.info("SDM")).state.messages !== 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const st = (await jsm.streams.info("SDM")).state;
    assert.equal(st.messages, 0);
    assert.equal(st.last_seq, 2);
  });
});
