// nats.js (v3, @nats-io/jetstream) consumer acceptance tests, part 2: ack kinds, redelivery and
// max_deliver, ack policies, a worker pool, the ordered consumer, pull statuses as clients see them,
// WorkQueue and Interest retention. All validated against nats-server 2.9.10
// (PEREGRINE_E2E_REF=1 tests/e2e/run.sh consumer_acks.test.mjs). Part 1 is consumers.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isReference, sleep } from "./server.mjs";
import { connect } from "@nats-io/transport-node";
import { AckPolicy, RetentionPolicy, jetstream } from "@nats-io/jetstream";
import {
  NS, drain, enc, js, jsm, nc, order, publishOrders, rawPull, srv, stream, useServer,
} from "./consumer_fixture.mjs";

useServer();

test("ack, nak, nak(delay), working and term", async () => {
  await stream("ACKS", ["acks.>"]);
  await publishOrders([["acks.a", "1"], ["acks.a", "2"], ["acks.a", "3"]]);
  await jsm.consumers.add("ACKS", { durable_name: "shipping", ack_policy: AckPolicy.Explicit, ack_wait: 3000 * NS });
  const c = await js.consumers.get("ACKS", "shipping");

  // nak: immediate redelivery with a higher delivery count.
  let [m] = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(m.seq, 1);
  assert.equal(m.info.deliveryCount, 1);
  assert.equal(m.redelivered, false);
  m.nak();
  await sleep(50);  // acks are plain publishes: let the server take it before the next pull
  [m] = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(m.seq, 1);
  assert.equal(m.info.deliveryCount, 2);
  assert.equal(m.redelivered, true);
  assert.equal(await m.ackAck(), true);

  // nak(delay): the message is not back before the delay, then is.
  [m] = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(m.seq, 2);
  m.nak(700);
  await sleep(50);
  let next = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.deepEqual(next.map((x) => x.seq), [3], "seq 2 is held back, seq 3 comes first");
  next[0].ack();
  next = await drain(await c.fetch({ max_messages: 1, expires: 1500 }));
  assert.deepEqual(next.map((x) => [x.seq, x.info.deliveryCount]), [[2, 2]]);

  // working: +WPI at 2 s restarts the 3 s ack wait, so nothing comes back in the window 2.5-3.5 s
  // (without it the redelivery would land at 3 s, inside that window).
  m = next[0];
  await sleep(2000);
  m.working();
  await sleep(500);
  let info = await c.info();
  assert.equal(info.num_ack_pending, 1);
  assert.equal(info.num_redelivered, 1, "seq 2 was redelivered once (the nak), not by ack wait");
  next = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(next.length, 0, "in progress keeps it from being redelivered");

  // term: never redelivered, no longer pending.
  // 2.9.10 ignores "+TERM <reason>" (only a bare +TERM matches there); reasons came in 2.10.
  if (isReference) m.term(); else m.term("bad order");
  await sleep(50);
  info = await c.info();
  assert.equal(info.num_ack_pending, 0);
  assert.equal(info.ack_floor.stream_seq, 3);
  next = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(next.length, 0);
});

test("redelivery after ack_wait carries the delivery count; max_deliver stops it", async () => {
  await stream("REDEL", ["redel.>"]);
  await publishOrders([["redel.a", "1"]]);
  await jsm.consumers.add("REDEL", {
    durable_name: "r", ack_policy: AckPolicy.Explicit, ack_wait: 500 * NS, max_deliver: 2,
  });
  const c = await js.consumers.get("REDEL", "r");
  const [m1] = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(m1.info.deliveryCount, 1);
  let info = await c.info();
  assert.equal(info.num_ack_pending, 1);
  assert.equal(info.delivered.stream_seq, 1);
  assert.equal(info.ack_floor.stream_seq, 0);
  const [m2] = await drain(await c.fetch({ max_messages: 1, expires: 2000 }));
  assert.equal(m2.seq, 1);
  assert.equal(m2.info.deliveryCount, 2);
  assert.equal(m2.redelivered, true);
  info = await c.info();
  assert.equal(info.num_redelivered, 1);
  assert.equal(info.delivered.consumer_seq, 2);
  // Reached max_deliver: not delivered a third time.
  const third = await drain(await c.fetch({ max_messages: 1, expires: 1200 }));
  assert.equal(third.length, 0);
  // The message stays in the (limits) stream.
  assert.equal((await jsm.streams.info("REDEL")).state.messages, 1);
});

test("ack_policy all acks everything below; ack_policy none needs no acks", async () => {
  await stream("ACKALL", ["aa.>"]);
  for (let i = 1; i <= 5; i++) await js.publish("aa.x", enc.encode(`m${i}`));
  await jsm.consumers.add("ACKALL", { durable_name: "all", ack_policy: AckPolicy.All });
  let c = await js.consumers.get("ACKALL", "all");
  const msgs = await drain(await c.fetch({ max_messages: 5, expires: 1000 }));
  assert.equal(msgs.length, 5);
  let info = await c.info();
  assert.equal(info.num_ack_pending, 5);
  assert.equal(await msgs[3].ackAck(), true);
  info = await c.info();
  assert.equal(info.num_ack_pending, 1);
  assert.equal(info.ack_floor.stream_seq, 4);
  assert.equal(info.ack_floor.consumer_seq, 4);

  await jsm.consumers.add("ACKALL", { durable_name: "none", ack_policy: AckPolicy.None });
  c = await js.consumers.get("ACKALL", "none");
  const got = await drain(await c.fetch({ max_messages: 5, expires: 1000 }));
  assert.equal(got.length, 5);
  info = await c.info();
  assert.equal(info.num_ack_pending, 0);
  assert.equal(info.ack_floor.stream_seq, 5);
  assert.equal(info.config.ack_policy, "none");
});

test("many workers on one consumer each get distinct messages", async () => {
  await stream("POOL", ["pool.>"]);
  const N = 60;
  for (let i = 1; i <= N; i++) await js.publish("pool.shipped", enc.encode(order(`o${i}`)));
  await jsm.consumers.add("POOL", { durable_name: "shipping", ack_policy: AckPolicy.Explicit });
  const workers = await Promise.all([1, 2, 3].map(async () => {
    const wc = await connect({ servers: `127.0.0.1:${srv.port}`, reconnect: false });
    const c = await jetstream(wc).consumers.get("POOL", "shipping");
    const seqs = [];
    for (;;) {
      const got = await drain(await c.fetch({ max_messages: 5, expires: 1000 }));
      if (got.length === 0) break;
      for (const m of got) {
        seqs.push(m.seq);
        await m.ackAck();
      }
    }
    await wc.close();
    return seqs;
  }));
  const all = workers.flat().sort((a, b) => a - b);
  assert.equal(all.length, N, "no duplicates, nothing lost");
  assert.deepEqual(all, Array.from({ length: N }, (_, i) => i + 1));
  assert.ok(workers.filter((w) => w.length > 0).length >= 2, "the load was shared");
  const info = await jsm.consumers.info("POOL", "shipping");
  assert.equal(info.num_ack_pending, 0);
  assert.equal(info.num_redelivered, 0);
});

test("ordered consumer (no name) reads the whole stream in order", async () => {
  await stream("RECON", ["recon.>"]);
  for (let i = 1; i <= 20; i++) await js.publish(i % 2 ? "recon.created" : "recon.shipped", enc.encode(`m${i}`));
  const c = await js.consumers.get("RECON");
  const iter = await c.consume();
  const seqs = [];
  let infos = [];
  const guard = setTimeout(() => iter.stop(), 5000);
  for await (const m of iter) {
    seqs.push(m.seq);
    if (seqs.length === 1) for await (const ci of jsm.consumers.list("RECON")) infos.push(ci);
    if (m.info.pending === 0) break;
  }
  clearTimeout(guard);
  assert.deepEqual(seqs, Array.from({ length: 20 }, (_, i) => i + 1));
  // What the library created: one ephemeral, memory, ack-none consumer.
  assert.equal(infos.length, 1);
  assert.equal(infos[0].config.ack_policy, "none");
  assert.equal(infos[0].config.mem_storage, true);
  assert.equal(infos[0].config.num_replicas, 1);
  assert.equal(infos[0].config.durable_name, undefined);

  const filtered = await js.consumers.get("RECON", { filter_subjects: "recon.shipped" });
  const msgs = await drain(await filtered.fetch({ max_messages: 10, expires: 2000 }));
  assert.deepEqual(msgs.map((m) => m.seq), [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]);
});

// What a KV watcher reads (kv.watch(): last_per_subject over $KV.<bucket>.>, ordered): each
// key's newest value once, the pending count reaching 0 on the last, then every update. Also
// run with a consumer thread (nats_js_consumer_acks_consthreads1), where the consumer lives
// apart from its stream's owner.
test("ordered last_per_subject consumer watches a KV-style bucket", async () => {
  await stream("KV_W", ["$KV.W.>"], { max_msgs_per_subject: 5 });
  for (let rev = 0; rev < 3; rev++)
    for (let k = 0; k < 30; k++) await js.publish(`$KV.W.k${k}`, enc.encode(`r${rev}`));
  const c = await js.consumers.get("KV_W", { filter_subjects: "$KV.W.>", deliver_policy: "last_per_subject" });
  const iter = await c.consume();
  const seen = [];
  const values = new Map();
  const guard = setTimeout(() => iter.stop(), 8000);
  let updated = false;
  for await (const m of iter) {
    seen.push(m.seq);
    values.set(m.subject, new TextDecoder().decode(m.data));
    if (m.info.pending === 0 && !updated) {  // the initial values are in: change two keys
      updated = true;
      assert.equal(seen.length, 30);
      await js.publish("$KV.W.k4", enc.encode("r3"));
      await js.publish("$KV.W.fresh", enc.encode("f0"));
    } else if (m.info.pending === 0 && seen.length >= 32) {
      break;
    }
  }
  clearTimeout(guard);
  iter.stop();
  assert.deepEqual(seen, [...Array.from({ length: 30 }, (_, i) => 61 + i), 91, 92]);
  assert.equal(values.get("$KV.W.k4"), "r3");
  assert.equal(values.get("$KV.W.k9"), "r2");
  assert.equal(values.get("$KV.W.fresh"), "f0");
});

test("pull statuses: 404 No Messages, 408 Request Timeout, 409 limits, 409 Consumer Deleted", async () => {
  await stream("STAT", ["stat.>"]);
  await jsm.consumers.add("STAT", { durable_name: "s", ack_policy: AckPolicy.Explicit, max_batch: 5,
    max_expires: 2000 * NS });
  const next = "$JS.API.CONSUMER.MSG.NEXT.STAT.s";

  let r = await rawPull(next, { batch: 1, no_wait: true });
  assert.deepEqual(r.map((x) => [x.code, x.description]), [[404, "No Messages"]]);

  r = await rawPull(next, { batch: 3, expires: 200 * NS });
  assert.deepEqual(r.map((x) => [x.code, x.description]), [[408, "Request Timeout"]]);
  assert.equal(r[0].headers.get("Nats-Pending-Messages"), "3");
  assert.equal(r[0].headers.get("Nats-Pending-Bytes"), "0");

  r = await rawPull(next, { batch: 6, expires: 200 * NS });
  assert.deepEqual(r.map((x) => [x.code, x.description]), [[409, "Exceeded MaxRequestBatch of 5"]]);
  r = await rawPull(next, { batch: 1, expires: 3000 * NS });
  assert.deepEqual(r.map((x) => [x.code, x.description]), [[409, "Exceeded MaxRequestExpires of 2s"]]);
  r = await rawPull(next, '{"batch":');
  assert.equal(r[0].code, 400);
  assert.match(r[0].description, /^Bad Request/);

  // A message then a no_wait pull for more than there is: 1 message then 408 with what is left.
  await js.publish("stat.x", enc.encode("one"));
  r = await rawPull(next, { batch: 5, no_wait: true });
  assert.equal(r[0].code, 0);
  assert.equal(r[0].subject, "stat.x");
  assert.match(r[0].reply, /^\$JS\.ACK\.STAT\.s\.1\.1\.1\.\d+\.0$/);
  assert.ok([404, 408].includes(r[1].code), `no_wait ends with 404/408, got ${r[1].code}`);

  // nats.js fetch sees none of this as an error: an empty fetch just ends.
  const c = await js.consumers.get("STAT", "s");
  const empty = await drain(await c.fetch({ max_messages: 2, expires: 1000 }));
  assert.equal(empty.length, 0);

  // Deleting the consumer ends a waiting pull with 409 Consumer Deleted.
  const waiting = rawPull(next, { batch: 1, expires: 1900 * NS }, 2500);
  await sleep(200);
  assert.equal((await jsm.consumers.info("STAT", "s")).num_waiting, 1);
  await jsm.consumers.delete("STAT", "s");
  r = await waiting;
  assert.deepEqual(r.map((x) => [x.code, x.description]), [[409, "Consumer Deleted"]]);
});

test("WorkQueue retention removes acked messages; Interest once every consumer acked", async () => {
  await stream("FULFILLMENT", ["fulfill.>"], { retention: RetentionPolicy.Workqueue });
  await publishOrders([["fulfill.us", "u1"], ["fulfill.eu", "e1"]]);
  await jsm.consumers.add("FULFILLMENT", { durable_name: "shippers", ack_policy: AckPolicy.Explicit });
  await assert.rejects(jsm.consumers.add("FULFILLMENT", { durable_name: "eu-shippers", ack_policy: AckPolicy.Explicit }),
    (e) => /multiple non-filtered consumers not allowed on workqueue stream/.test(e.message));
  let c = await js.consumers.get("FULFILLMENT", "shippers");
  let [m] = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(await m.ackAck(), true);
  assert.equal((await jsm.streams.info("FULFILLMENT")).state.messages, 1);
  await jsm.consumers.delete("FULFILLMENT", "shippers");
  await jsm.consumers.add("FULFILLMENT", { durable_name: "us", filter_subject: "fulfill.us", ack_policy: AckPolicy.Explicit });
  await jsm.consumers.add("FULFILLMENT", { durable_name: "eu", filter_subject: "fulfill.eu", ack_policy: AckPolicy.Explicit });
  await assert.rejects(jsm.consumers.add("FULFILLMENT", { durable_name: "all", filter_subject: "fulfill.>",
    ack_policy: AckPolicy.Explicit }), (e) => /filtered consumer not unique on workqueue stream/.test(e.message));
  c = await js.consumers.get("FULFILLMENT", "eu");
  [m] = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(m.subject, "fulfill.eu");
  assert.equal(await m.ackAck(), true);
  assert.equal((await jsm.streams.info("FULFILLMENT")).state.messages, 0);

  await stream("INTEREST", ["interest.>"], { retention: RetentionPolicy.Interest });
  await jsm.consumers.add("INTEREST", { durable_name: "a", ack_policy: AckPolicy.Explicit });
  await jsm.consumers.add("INTEREST", { durable_name: "b", ack_policy: AckPolicy.Explicit });
  await publishOrders([["interest.x", "i1"], ["interest.x", "i2"]]);
  assert.equal((await jsm.streams.info("INTEREST")).state.messages, 2);
  for (const name of ["a", "b"]) {
    const ic = await js.consumers.get("INTEREST", name);
    const got = await drain(await ic.fetch({ max_messages: 2, expires: 1000 }));
    assert.equal(got.length, 2);
    for (const x of got) assert.equal(await x.ackAck(), true);
    const left = (await jsm.streams.info("INTEREST")).state.messages;
    assert.equal(left, name === "a" ? 2 : 0, `after consumer ${name} acked`);
  }
});

test("advisories: created, nak, terminated, max deliveries, deleted", async () => {
  await stream("ADV", ["adv.>"]);
  const seen = [];
  const sub = nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>", {
    callback: (err, m) => { if (!err) seen.push({ subject: m.subject, ...m.json() }); },
  });
  await nc.flush();
  await jsm.consumers.add("ADV", { durable_name: "audit", ack_policy: AckPolicy.Explicit, ack_wait: 400 * NS,
    max_deliver: 2 });
  for (let i = 1; i <= 3; i++) await js.publish("adv.x", enc.encode(`m${i}`));
  const c = await js.consumers.get("ADV", "audit");
  const got = await drain(await c.fetch({ max_messages: 3, expires: 1000 }));
  assert.deepEqual(got.map((m) => m.seq), [1, 2, 3]);
  got[0].nak();
  got[1].term();
  await got[2].ackAck();
  // seq 1 comes back (nak), is left unacked and expires again: max deliveries reached at the next pull.
  const again = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.deepEqual(again.map((m) => [m.seq, m.info.deliveryCount]), [[1, 2]]);
  assert.equal((await drain(await c.fetch({ max_messages: 1, expires: 1000 }))).length, 0);
  await jsm.consumers.delete("ADV", "audit");
  await nc.flush();
  await sleep(100);
  sub.unsubscribe();
  const by = (suffix) => seen.filter((a) => a.subject === `$JS.EVENT.ADVISORY.CONSUMER.${suffix}.ADV.audit`);
  const pick = (a, keys) => Object.fromEntries(keys.map((k) => [k, a[k]]));
  assert.deepEqual(by("CREATED").map((a) => pick(a, ["type", "stream", "consumer", "action"])),
    [{ type: "io.nats.jetstream.advisory.v1.consumer_action", stream: "ADV", consumer: "audit", action: "create" }]);
  assert.deepEqual(by("MSG_NAKED").map((a) => pick(a, ["type", "consumer_seq", "stream_seq", "deliveries"])),
    [{ type: "io.nats.jetstream.advisory.v1.nak", consumer_seq: 1, stream_seq: 1, deliveries: 1 }]);
  assert.deepEqual(by("MSG_TERMINATED").map((a) => pick(a, ["type", "consumer_seq", "stream_seq", "deliveries"])),
    [{ type: "io.nats.jetstream.advisory.v1.terminated", consumer_seq: 2, stream_seq: 2, deliveries: 1 }]);
  assert.deepEqual(by("MAX_DELIVERIES").map((a) => pick(a, ["type", "stream_seq", "deliveries"])),
    [{ type: "io.nats.jetstream.advisory.v1.max_deliver", stream_seq: 1, deliveries: 2 }]);
  assert.deepEqual(by("DELETED").map((a) => pick(a, ["type", "action"])),
    [{ type: "io.nats.jetstream.advisory.v1.consumer_action", action: "delete" }]);
  for (const a of seen) {
    assert.equal(typeof a.id, "string");
    assert.match(a.timestamp, /^\d{4}-\d\d-\d\dT/);
  }
});
