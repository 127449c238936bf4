// nats.js (v3, @nats-io/jetstream) consumer acceptance tests: what a user of an unmodified
// JavaScript client sees. Every test in the first part was validated against nats-server 2.9.10
// (PEREGRINE_E2E_REF=1 node --test consumers.test.mjs); the "newer features" part (priority
// groups, pause, filter_subjects, UNPIN) follows the spec and runs only against Peregrine.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, isReference, sleep, startServer } from "./server.mjs";
import { connect, createInbox } from "@nats-io/transport-node";
import {
  AckPolicy, DeliverPolicy, RetentionPolicy, jetstream, jetstreamManager,
} from "@nats-io/jetstream";

let srv;
let nc;
let jsm;
let js;

before(async () => {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  srv = await startServer((dir) => `jetstream {\n  store_dir: "${dir}/js"\n}\n`);
  nc = await connect({ servers: `127.0.0.1:${srv.port}`, reconnect: false, timeout: 5000 });
  jsm = await jetstreamManager(nc);
  js = jetstream(nc);
});
after(async () => {
  if (nc) await nc.close();
  if (srv) await srv.stop();
});

const enc = new TextEncoder();
const order = (id, customer = "acme-co", cents = 4200) =>
  `{"order_id":"${id}","customer":"${customer}","total_cents":${cents},"ts":"2026-05-22T10:14:22Z"}`;
const NS = 1_000_000;  // ns per ms

// A fresh stream per test so tests don't see each other's consumers or messages.
async function stream(name, subjects, extra = {}) {
  await jsm.streams.add({ name, subjects, ...extra });
}
async function publishOrders(subjectsAndIds) {
  for (const [subject, id] of subjectsAndIds) await js.publish(subject, enc.encode(order(id)));
}
// Drains a fetch iterator into an array.
async function drain(iter) {
  const out = [];
  for await (const m of iter) out.push(m);
  return out;
}
// Raw pull request: collects every reply (messages and statuses) until a terminal status or timeout.
async function rawPull(subject, body, waitMs = 1500) {
  const inbox = createInbox();
  const sub = nc.subscribe(inbox);
  const out = [];
  const timer = setTimeout(() => sub.unsubscribe(), waitMs);
  nc.publish(subject, enc.encode(typeof body === "string" ? body : JSON.stringify(body)), { reply: inbox });
  for await (const m of sub) {
    const code = m.headers?.code ?? 0;
    out.push({ code, description: m.headers?.description ?? "", headers: m.headers, subject: m.subject,
      data: m.data, reply: m.reply });
    if (code >= 400 || (code === 0 && out.filter((x) => x.code === 0).length >= (body.batch ?? 1))) break;
  }
  clearTimeout(timer);
  sub.unsubscribe();
  return out;
}

test("consumers add/info/list/update/delete (durable billing)", async () => {
  await stream("ORDERS", ["orders.>"]);
  await publishOrders([["orders.created", "ord_8w2k"], ["orders.created", "ord_2zr9"], ["orders.shipped", "ord_8w2k"]]);

  const ci = await jsm.consumers.add("ORDERS", {
    durable_name: "billing", deliver_policy: DeliverPolicy.All, ack_policy: AckPolicy.Explicit,
  });
  assert.equal(ci.name, "billing");
  assert.equal(ci.stream_name, "ORDERS");
  assert.equal(ci.config.durable_name, "billing");
  assert.equal(ci.config.ack_policy, "explicit");
  assert.equal(ci.config.deliver_policy, "all");
  assert.equal(ci.config.replay_policy, "instant");
  assert.equal(ci.config.ack_wait, 30_000 * NS);
  assert.equal(ci.config.max_deliver, -1);
  assert.equal(ci.config.max_waiting, 512);
  assert.equal(ci.config.max_ack_pending, 1000);
  assert.equal(ci.num_pending, 3);
  assert.equal(ci.num_ack_pending, 0);
  assert.equal(ci.num_redelivered, 0);
  assert.equal(ci.num_waiting, 0);
  assert.deepEqual(ci.delivered, { consumer_seq: 0, stream_seq: 0 });
  assert.deepEqual(ci.ack_floor, { consumer_seq: 0, stream_seq: 0 });

  // Same config again is idempotent; a different one under the same name is refused.
  const again = await jsm.consumers.add("ORDERS", {
    durable_name: "billing", deliver_policy: DeliverPolicy.All, ack_policy: AckPolicy.Explicit,
  });
  assert.equal(again.name, "billing");
  await assert.rejects(jsm.consumers.add("ORDERS", {
    durable_name: "billing", deliver_policy: DeliverPolicy.New, ack_policy: AckPolicy.Explicit,
  }), (e) => /consumer already exists|deliver policy can not be updated/.test(e.message));

  // Read all three, acking each; pending counts down 2, 1, 0 as the chapter shows.
  const c = await js.consumers.get("ORDERS", "billing");
  const msgs = await drain(await c.fetch({ max_messages: 3, expires: 2000 }));
  assert.deepEqual(msgs.map((m) => m.seq), [1, 2, 3]);
  assert.deepEqual(msgs.map((m) => m.info.pending), [2, 1, 0]);
  assert.deepEqual(msgs.map((m) => m.subject), ["orders.created", "orders.created", "orders.shipped"]);
  for (const m of msgs) assert.equal(await m.ackAck(), true);
  let info = await jsm.consumers.info("ORDERS", "billing");
  assert.deepEqual(info.delivered, { consumer_seq: 3, stream_seq: 3, last_active: info.delivered.last_active });
  assert.equal(info.ack_floor.consumer_seq, 3);
  assert.equal(info.ack_floor.stream_seq, 3);
  assert.equal(info.num_pending, 0);
  assert.equal(info.num_ack_pending, 0);

  // A later publish shows up with pending 0.
  await publishOrders([["orders.created", "ord_5xk1"]]);
  const [m4] = await drain(await c.fetch({ max_messages: 1, expires: 2000 }));
  assert.equal(m4.seq, 4);
  assert.equal(m4.info.pending, 0);
  assert.equal(m4.info.deliverySequence, 4);
  assert.equal(m4.info.stream, "ORDERS");
  assert.equal(m4.info.consumer, "billing");
  m4.ack();

  // list and update.
  await jsm.consumers.add("ORDERS", { durable_name: "audit", ack_policy: AckPolicy.Explicit });
  const names = [];
  for await (const ci2 of jsm.consumers.list("ORDERS")) names.push(ci2.name);
  assert.deepEqual(names.sort(), ["audit", "billing"]);
  const up = await jsm.consumers.update("ORDERS", "billing", { ack_wait: 10_000 * NS, max_deliver: 5 });
  assert.equal(up.config.ack_wait, 10_000 * NS);
  assert.equal(up.config.max_deliver, 5);
  await assert.rejects(jsm.consumers.update("ORDERS", "billing", { deliver_policy: DeliverPolicy.New }),
    (e) => /deliver policy can not be updated/.test(e.message));
  info = await jsm.consumers.info("ORDERS", "billing");
  assert.equal(info.config.ack_wait, 10_000 * NS);
  assert.equal(info.delivered.stream_seq, 4, "update keeps the cursor");

  // delete.
  assert.equal(await jsm.consumers.delete("ORDERS", "audit"), true);
  await assert.rejects(jsm.consumers.info("ORDERS", "audit"), (e) => /consumer not found/.test(e.message));
  await assert.rejects(jsm.consumers.delete("ORDERS", "audit"), (e) => /consumer not found/.test(e.message));
  const si = await jsm.streams.info("ORDERS");
  assert.equal(si.state.consumer_count, 1);
});

test("ephemeral consumer gets a server-chosen name and reads from the start", async () => {
  await stream("EPH", ["eph.>"]);
  await publishOrders([["eph.a", "e1"], ["eph.b", "e2"]]);
  const ci = await jsm.consumers.add("EPH", { ack_policy: AckPolicy.Explicit, inactive_threshold: 5000 * NS });
  assert.ok(ci.name.length > 0);
  assert.equal(ci.config.durable_name, undefined);
  assert.equal(ci.config.inactive_threshold, 5000 * NS);
  assert.equal(ci.num_pending, 2);
  const c = await js.consumers.get("EPH", ci.name);
  const msgs = await drain(await c.fetch({ max_messages: 2, expires: 2000 }));
  assert.deepEqual(msgs.map((m) => m.seq), [1, 2]);
  msgs.forEach((m) => m.ack());
  await jsm.consumers.delete("EPH", ci.name);

  // An idle ephemeral goes away after inactive_threshold (plus the server's jitter).
  const idle = await jsm.consumers.add("EPH", { ack_policy: AckPolicy.Explicit, inactive_threshold: 500 * NS });
  const t0 = Date.now();
  let gone = false;
  while (!gone && Date.now() - t0 < 4000) {
    await sleep(250);
    gone = await jsm.consumers.info("EPH", idle.name).then(() => false, (e) => /consumer not found/.test(e.message));
  }
  assert.ok(gone, "idle ephemeral removed within 4 s");
  assert.ok(Date.now() - t0 >= 400, "not before its threshold");
});

test("filter_subject: analytics reads only orders.shipped; a typo filter times out empty", async () => {
  await stream("FILT", ["filt.>"]);
  await publishOrders([["filt.created", "a"], ["filt.shipped", "a"], ["filt.created", "b"], ["filt.shipped", "b"]]);
  const ci = await jsm.consumers.add("FILT", {
    durable_name: "analytics", filter_subject: "filt.shipped", ack_policy: AckPolicy.Explicit,
  });
  assert.equal(ci.config.filter_subject, "filt.shipped");
  assert.equal(ci.num_pending, 2);
  const c = await js.consumers.get("FILT", "analytics");
  const msgs = await drain(await c.fetch({ max_messages: 5, expires: 1000 }));
  assert.deepEqual(msgs.map((m) => [m.subject, m.seq]), [["filt.shipped", 2], ["filt.shipped", 4]]);
  assert.deepEqual(msgs.map((m) => m.info.deliverySequence), [1, 2]);
  msgs.forEach((m) => m.ack());

  const typo = await jsm.consumers.add("FILT", {
    durable_name: "typo", filter_subject: "filt.shiped", ack_policy: AckPolicy.Explicit,
  });
  assert.equal(typo.num_pending, 0);
  const none = await drain(await (await js.consumers.get("FILT", "typo")).fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(none.length, 0);
});

test("deliver policies: all, last, new, by_start_sequence, by_start_time, last_per_subject", async () => {
  await stream("DP", ["dp.>"]);
  await publishOrders([["dp.a", "1"], ["dp.b", "2"], ["dp.a", "3"]]);
  // ISO strings carry milliseconds only: keep a margin on both sides of the cut.
  await sleep(20);
  const mid = new Date();
  await sleep(20);
  await publishOrders([["dp.b", "4"]]);
  // Fetches exactly what num_pending promises, then checks nothing is left to deliver.
  const first = async (cfg) => {
    const ci = await jsm.consumers.add("DP", { ack_policy: AckPolicy.None, ...cfg });
    const c = await js.consumers.get("DP", ci.name);
    const msgs = await drain(await c.fetch({ max_messages: ci.num_pending, expires: 2000 }));
    const after = await c.info();
    assert.equal(after.num_pending, 0);
    assert.equal(after.delivered.stream_seq, msgs.at(-1).seq);
    await jsm.consumers.delete("DP", ci.name);
    return { pending: ci.num_pending, seqs: msgs.map((m) => m.seq) };
  };
  assert.deepEqual(await first({ deliver_policy: DeliverPolicy.All }), { pending: 4, seqs: [1, 2, 3, 4] });
  assert.deepEqual(await first({ deliver_policy: DeliverPolicy.Last }), { pending: 1, seqs: [4] });
  assert.deepEqual(await first({ deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 3 }),
    { pending: 2, seqs: [3, 4] });
  assert.deepEqual(await first({ deliver_policy: DeliverPolicy.StartTime, opt_start_time: mid.toISOString() }),
    { pending: 1, seqs: [4] });
  // (2.9.10 requires a filter for last_per_subject: 10094 without one.)
  assert.deepEqual(await first({ deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "dp.>" }),
    { pending: 2, seqs: [3, 4] });
  assert.deepEqual(await first({ deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: "dp.a" }),
    { pending: 1, seqs: [3] });

  const ci = await jsm.consumers.add("DP", { durable_name: "fresh", deliver_policy: DeliverPolicy.New,
    ack_policy: AckPolicy.Explicit });
  assert.equal(ci.num_pending, 0);
  assert.equal(ci.delivered.stream_seq, 4);
  await publishOrders([["dp.c", "5"]]);
  const msgs = await drain(await (await js.consumers.get("DP", "fresh")).fetch({ max_messages: 1, expires: 2000 }));
  assert.deepEqual(msgs.map((m) => m.seq), [5]);
  msgs[0].ack();

  await assert.rejects(jsm.consumers.add("DP", { durable_name: "bad", deliver_policy: DeliverPolicy.StartSequence,
    ack_policy: AckPolicy.Explicit }), (e) => /opt_start_seq|start sequence/i.test(e.message));
});

test("fetch honours batch, expires and max_bytes", async () => {
  await stream("FETCH", ["fetch.>"]);
  for (let i = 1; i <= 10; i++) await js.publish("fetch.x", enc.encode(order(`f${i}`)));
  await jsm.consumers.add("FETCH", { durable_name: "f", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("FETCH", "f");

  let msgs = await drain(await c.fetch({ max_messages: 4, expires: 2000 }));
  assert.deepEqual(msgs.map((m) => m.seq), [1, 2, 3, 4]);
  msgs.forEach((m) => m.ack());

  // max_bytes: a message's size is subject + ack reply subject + headers + payload. A budget of
  // 2.5 messages yields two, then 409 Message Size Exceeds MaxBytes with what the request had left.
  const one = msgs[0];
  const size = one.subject.length + one.reply.length + one.data.length;
  const budget = Math.floor(size * 2.5);
  const r = await rawPull("$JS.API.CONSUMER.MSG.NEXT.FETCH.f", { batch: 10, max_bytes: budget, expires: 1000 * NS });
  assert.deepEqual(r.map((x) => x.code), [0, 0, 409]);
  assert.equal(r[2].description, "Message Size Exceeds MaxBytes");
  assert.equal(r[2].headers.get("Nats-Pending-Messages"), "8");
  assert.equal(r[2].headers.get("Nats-Pending-Bytes"), String(budget - 2 * size));
  for (const x of r.slice(0, 2)) nc.publish(x.reply, enc.encode("+ACK"));
  await sleep(50);

  // Asking for more than is left ends at expiry with what there is.
  const t0 = Date.now();
  msgs = await drain(await c.fetch({ max_messages: 10, expires: 1000 }));  // 4 left
  assert.deepEqual(msgs.map((m) => m.seq), [7, 8, 9, 10]);
  assert.ok(Date.now() - t0 >= 600, "a short fetch waits for its expiry");
  msgs.forEach((m) => m.ack());

  // consume() with a byte budget keeps pulling across the 409s.
  for (let i = 11; i <= 16; i++) await js.publish("fetch.x", enc.encode(order(`f${i}`)));
  const iter = await c.consume({ max_bytes: size * 3, expires: 1000 });
  const seqs = [];
  const guard = setTimeout(() => iter.stop(), 5000);
  for await (const m of iter) {
    seqs.push(m.seq);
    m.ack();
    if (seqs.length === 6) break;
  }
  clearTimeout(guard);
  assert.deepEqual(seqs, [11, 12, 13, 14, 15, 16]);
  await sleep(50);
  const info = await c.info();
  assert.equal(info.num_pending, 0);
  assert.equal(info.num_waiting, 0);
});

test("consume() delivers stored and new messages continuously", async () => {
  await stream("CONS", ["cons.>"]);
  for (let i = 1; i <= 5; i++) await js.publish("cons.x", enc.encode(`m${i}`));
  await jsm.consumers.add("CONS", { durable_name: "svc", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("CONS", "svc");
  const iter = await c.consume({ max_messages: 3, expires: 1000 });
  const seen = [];
  const done = (async () => {
    for await (const m of iter) {
      seen.push(m.seq);
      m.ack();
      if (seen.length === 5) {
        for (let i = 6; i <= 8; i++) await js.publish("cons.x", enc.encode(`m${i}`));
      }
      if (seen.length === 8) break;
    }
  })();
  const guard = setTimeout(() => iter.stop(), 8000);
  await done;
  clearTimeout(guard);
  assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7, 8]);
  await sleep(100);
  const info = await c.info();
  assert.equal(info.ack_floor.stream_seq, 8);
  assert.equal(info.num_ack_pending, 0);
});

test("consume() on a quiet consumer sees idle heartbeats with the last sequences", async () => {
  await stream("HB", ["hb.>"]);
  await js.publish("hb.x", enc.encode("one"));
  await jsm.consumers.add("HB", { durable_name: "quiet", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("HB", "quiet");
  const iter = await c.consume({ max_messages: 10, expires: 2000, idle_heartbeat: 500 });
  const beats = [];
  const watch = (async () => {
    for await (const s of iter.status()) {
      if (s.type === "heartbeat") beats.push([s.lastConsumerSequence, s.lastStreamSequence]);
      if (beats.length >= 2) break;
    }
  })();
  const seen = [];
  const reader = (async () => {
    for await (const m of iter) {  // the one message, then nothing: the requests stay idle
      seen.push(m.seq);
      m.ack();
    }
  })();
  const guard = setTimeout(() => iter.stop(), 4000);
  await watch;
  clearTimeout(guard);
  iter.stop();
  await reader;
  assert.deepEqual(seen, [1]);
  assert.ok(beats.length >= 2, "two idle heartbeats within 4 s");
  assert.deepEqual(beats[beats.length - 1], [1, 1]);
});

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

test("push consumer delivers to its deliver_subject", async () => {
  await stream("PUSH", ["push.>"]);
  for (let i = 1; i <= 4; i++) await js.publish("push.x", enc.encode(`p${i}`));
  const ci = await jsm.consumers.add("PUSH", {
    durable_name: "monitor", deliver_subject: createInbox(), ack_policy: AckPolicy.Explicit,
    idle_heartbeat: 1000 * NS, flow_control: true,
  });
  assert.equal(ci.config.flow_control, true);
  assert.equal(ci.push_bound, undefined);
  const pc = await js.consumers.getPushConsumer("PUSH", "monitor");
  const iter = await pc.consume();
  const seqs = [];
  const guard = setTimeout(() => iter.stop(), 5000);
  for await (const m of iter) {
    seqs.push(m.seq);
    m.ack();
    if (seqs.length === 4) break;
  }
  clearTimeout(guard);
  assert.deepEqual(seqs, [1, 2, 3, 4]);
  const r = await rawPull("$JS.API.CONSUMER.MSG.NEXT.PUSH.monitor", { batch: 1, expires: 200 * NS });
  assert.deepEqual(r.map((x) => [x.code, x.description]), [[409, "Consumer is push based"]]);
});

// ---- Newer features (2.11+): spec-derived, Peregrine only. ----
const newer = { skip: isReference ? "nats-server 2.9.10 lacks this feature" : false };

test("filter_subjects: several filters on one consumer", newer, async () => {
  await stream("MULTI", ["multi.>"]);
  await publishOrders([["multi.created", "1"], ["multi.shipped", "2"], ["multi.canceled", "3"], ["multi.shipped", "4"]]);
  const ci = await jsm.consumers.add("MULTI", {
    durable_name: "ops", filter_subjects: ["multi.shipped", "multi.canceled"], ack_policy: AckPolicy.Explicit,
  });
  assert.deepEqual(ci.config.filter_subjects, ["multi.shipped", "multi.canceled"]);
  assert.equal(ci.num_pending, 3);
  const got = await drain(await (await js.consumers.get("MULTI", "ops")).fetch({ max_messages: 5, expires: 1000 }));
  assert.deepEqual(got.map((m) => m.seq), [2, 3, 4]);
  await assert.rejects(jsm.consumers.add("MULTI", { durable_name: "both", filter_subject: "multi.a",
    filter_subjects: ["multi.b"], ack_policy: AckPolicy.Explicit }));
});

test("pause and resume a consumer", newer, async () => {
  await stream("PAUSE", ["pause.>"]);
  await jsm.consumers.add("PAUSE", { durable_name: "shipping", ack_policy: AckPolicy.Explicit });
  const until = new Date(Date.now() + 3600_000);
  const pr = await jsm.consumers.pause("PAUSE", "shipping", until);
  assert.equal(pr.paused, true);
  let info = await jsm.consumers.info("PAUSE", "shipping");
  assert.equal(info.paused, true);
  assert.ok(info.pause_remaining > 3500_000 * NS);
  await publishOrders([["pause.x", "1"]]);
  const c = await js.consumers.get("PAUSE", "shipping");
  let got = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.equal(got.length, 0, "paused: nothing delivered");
  const rr = await jsm.consumers.resume("PAUSE", "shipping");
  assert.equal(rr.paused, false);
  info = await jsm.consumers.info("PAUSE", "shipping");
  assert.ok(!info.paused);
  got = await drain(await c.fetch({ max_messages: 1, expires: 1000 }));
  assert.deepEqual(got.map((m) => m.seq), [1]);
  // A deadline in the past does not pause (the CLI then prints "consumer failed to pause").
  const past = await jsm.consumers.pause("PAUSE", "shipping", new Date(Date.now() - 60_000));
  assert.equal(past.paused, false);
});

test("priority groups: overflow serves min_pending pulls only past the threshold", newer, async () => {
  await stream("PRIO", ["prio.>"]);
  await jsm.consumers.add("PRIO", {
    durable_name: "dispatch", ack_policy: AckPolicy.Explicit, priority_groups: ["regions"], priority_policy: "overflow",
  });
  let info = await jsm.consumers.info("PRIO", "dispatch");
  assert.deepEqual(info.config.priority_groups, ["regions"]);
  assert.equal(info.config.priority_policy, "overflow");
  for (let i = 1; i <= 3; i++) await js.publish("prio.x", enc.encode(`m${i}`));
  const c = await js.consumers.get("PRIO", "dispatch");
  let got = await drain(await c.fetch({ max_messages: 1, expires: 1000, group: "regions", min_pending: 10 }));
  assert.equal(got.length, 0, "3 pending < min_pending 10");
  got = await drain(await c.fetch({ max_messages: 1, expires: 1000, group: "regions", min_pending: 2 }));
  assert.deepEqual(got.map((m) => m.seq), [1]);
  const r = await rawPull("$JS.API.CONSUMER.MSG.NEXT.PRIO.dispatch", { batch: 1, expires: 200 * NS });
  assert.deepEqual(r.map((x) => [x.code, x.description]), [[400, "Bad Request - Priority Group missing"]]);
});

test("priority groups: pinned_client pins one client, UNPIN releases it", newer, async () => {
  await stream("PIN", ["pin.>"]);
  await jsm.consumers.add("PIN", {
    durable_name: "sequencer", ack_policy: AckPolicy.Explicit, priority_groups: ["ordered"],
    priority_policy: "pinned_client", priority_timeout: 90_000 * NS,
  });
  for (let i = 1; i <= 2; i++) await js.publish("pin.x", enc.encode(`m${i}`));
  const next = "$JS.API.CONSUMER.MSG.NEXT.PIN.sequencer";
  const r1 = await rawPull(next, { batch: 1, expires: 1000 * NS, group: "ordered" });
  assert.equal(r1[0].code, 0);
  const pin = r1[0].headers.get("Nats-Pin-Id");
  assert.ok(pin.length > 0, "delivery carries Nats-Pin-Id");
  const wrong = await rawPull(next, { batch: 1, expires: 500 * NS, group: "ordered", id: "not-the-pin" });
  assert.equal(wrong[0].code, 423);
  let info = await jsm.consumers.info("PIN", "sequencer");
  assert.equal(info.priority_groups?.[0]?.pinned_client_id, pin);
  await jsm.consumers.unpin("PIN", "sequencer", "ordered");
  info = await jsm.consumers.info("PIN", "sequencer");
  assert.ok(!info.priority_groups?.[0]?.pinned_client_id);
  await assert.rejects(jsm.consumers.unpin("PIN", "sequencer", "nope"));
});
