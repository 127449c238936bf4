// nats.js (v3, @nats-io/jetstream) consumer acceptance tests, part 1: the consumer API, deliver
// policies, filters, fetch/consume, heartbeats, push. The tests before the "newer features" marker
// were validated against nats-server 2.9.10 (PEREGRINE_E2E_REF=1 tests/e2e/run.sh consumers.test.mjs);
// the newer features (filter_subjects, pause, priority groups, UNPIN) follow the spec and run only
// against Peregrine. Part 2 (acks, redelivery, workers, ordered, statuses, retention) is
// consumer_acks.test.mjs; setup and helpers are in consumer_fixture.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isReference, sleep } from "./server.mjs";
import { createInbox, headers } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import {
  NS, drain, enc, js, jsm, nc, order, publishOrders, rawPull, stream, useServer,
} from "./consumer_fixture.mjs";

useServer();

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

test("advisories: consumer_pause, consumer_group_pinned and consumer_group_unpinned", newer, async () => {
  await stream("ADV2", ["adv2.>"]);
  const seen = [];
  const sub = nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>", {
    callback: (err, m) => { if (!err) seen.push({ subject: m.subject, ...m.json() }); },
  });
  await nc.flush();
  await jsm.consumers.add("ADV2", { durable_name: "shipping", ack_policy: AckPolicy.Explicit });
  await jsm.consumers.pause("ADV2", "shipping", new Date(Date.now() + 3600_000));
  await jsm.consumers.resume("ADV2", "shipping");
  await jsm.consumers.add("ADV2", { durable_name: "sequencer", ack_policy: AckPolicy.Explicit,
    priority_groups: ["ordered"], priority_policy: "pinned_client" });
  await js.publish("adv2.x", enc.encode("m1"));
  const r = await rawPull("$JS.API.CONSUMER.MSG.NEXT.ADV2.sequencer", { batch: 1, expires: 1000 * NS, group: "ordered" });
  const pin = r[0].headers.get("Nats-Pin-Id");
  await jsm.consumers.unpin("ADV2", "sequencer", "ordered");
  await nc.flush();
  await sleep(100);
  sub.unsubscribe();
  const pauses = seen.filter((a) => a.subject === "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.ADV2.shipping");
  assert.deepEqual(pauses.map((a) => [a.type, a.stream, a.consumer, a.paused]), [
    ["io.nats.jetstream.advisory.v1.consumer_pause", "ADV2", "shipping", true],
    ["io.nats.jetstream.advisory.v1.consumer_pause", "ADV2", "shipping", false],
  ]);
  assert.ok(Date.parse(pauses[0].pause_until) > Date.now() + 3500_000);
  const pinned = seen.filter((a) => a.subject === "$JS.EVENT.ADVISORY.CONSUMER.PINNED.ADV2.sequencer");
  assert.deepEqual(pinned.map((a) => [a.type, a.group, a.pinned_id]),
    [["io.nats.jetstream.advisory.v1.consumer_group_pinned", "ordered", pin]]);
  const unpinned = seen.filter((a) => a.subject === "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.ADV2.sequencer");
  assert.deepEqual(unpinned.map((a) => [a.type, a.group, a.reason]),
    [["io.nats.jetstream.advisory.v1.consumer_group_unpinned", "ordered", "admin"]]);
});

// Stream features a consumer must respect; skipped while the stream layer refuses the flag.
async function streamOrSkip(t, name, subjects, extra) {
  try {
    await jsm.streams.add({ name, subjects, ...extra });
    return true;
  } catch (e) {
    if (/is not supported by this server yet/.test(e.message)) {
      t.skip(`stream side: ${e.message}`);
      return false;
    }
    throw e;
  }
}

test("per-message TTL: an expired message is never delivered", newer, async (t) => {
  if (!await streamOrSkip(t, "TTL", ["ttl.>"], { allow_msg_ttl: true })) return;
  const h = headers();
  h.set("Nats-TTL", "1s");
  await js.publish("ttl.x", enc.encode("short-lived"), { headers: h });
  await js.publish("ttl.x", enc.encode("stays"));
  await jsm.consumers.add("TTL", { durable_name: "late", ack_policy: AckPolicy.Explicit });
  await sleep(1800);
  const c = await js.consumers.get("TTL", "late");
  const got = await drain(await c.fetch({ max_messages: 2, expires: 1000 }));
  assert.deepEqual(got.map((m) => m.seq), [2]);
  assert.equal((await jsm.streams.info("TTL")).state.messages, 1);
});

test("atomic batch publish: consumers see the batch only once committed, all of it", newer, async (t) => {
  if (!await streamOrSkip(t, "ATOMIC", ["atomic.>"], { allow_atomic: true })) return;
  await jsm.consumers.add("ATOMIC", { durable_name: "reader", ack_policy: AckPolicy.Explicit });
  const part = (seq, commit) => {
    const h = headers();
    h.set("Nats-Batch-Id", "B1");
    h.set("Nats-Batch-Sequence", String(seq));
    if (commit) h.set("Nats-Batch-Commit", "1");
    return h;
  };
  const first = await nc.request("atomic.x", enc.encode("a1"), { headers: part(1), timeout: 2000 });
  assert.equal(first.data.length, 0, "staged messages are acked with an empty reply");
  nc.publish("atomic.x", enc.encode("a2"), { headers: part(2) });
  const none = await rawPull("$JS.API.CONSUMER.MSG.NEXT.ATOMIC.reader", { batch: 1, no_wait: true });
  assert.deepEqual(none.map((x) => x.code), [404], "nothing visible before the commit");
  const commit = await nc.request("atomic.x", enc.encode("a3"), { headers: part(3, true), timeout: 2000 });
  assert.deepEqual(commit.json(), { stream: "ATOMIC", seq: 3, batch: "B1", count: 3 });
  const c = await js.consumers.get("ATOMIC", "reader");
  const got = await drain(await c.fetch({ max_messages: 3, expires: 1000 }));
  assert.deepEqual(got.map((m) => [m.seq, m.headers?.get("Nats-Batch-Sequence")]), [[1, "1"], [2, "2"], [3, "3"]]);
});

// 2.14 (the level Peregrine claims): nats.js enables consumers.reset() only for servers >= 2.14.0
// ("consumer reset requires server 2.14.0" below it). Delivery restarts after the ack floor, or
// at a requested sequence; the reply is the ConsumerInfo plus reset_seq.
test("consumer reset through nats.js (gated at 2.14.0)", newer, async () => {
  assert.ok(nc.features.get("js_consumer_reset").ok, `server version ${nc.info.version} enables reset`);
  await stream("RESET", ["reset.>"]);
  await publishOrders([["reset.a", "1"], ["reset.a", "2"], ["reset.a", "3"], ["reset.a", "4"]]);
  await jsm.consumers.add("RESET", { durable_name: "r", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("RESET", "r");
  let got = await drain(await c.fetch({ max_messages: 4, expires: 1000 }));
  assert.deepEqual(got.map((m) => m.seq), [1, 2, 3, 4]);
  got[0].ack();
  got[1].ack();
  await nc.flush();
  let r = await jsm.consumers.reset("RESET", "r");
  assert.equal(r.reset_seq, 3, "after the ack floor");
  assert.equal(r.delivered.consumer_seq, 0);
  assert.equal(r.num_ack_pending, 0);
  got = await drain(await c.fetch({ max_messages: 4, expires: 1000 }));
  assert.deepEqual(got.map((m) => [m.seq, m.info.deliverySequence]), [[3, 1], [4, 2]]);
  r = await jsm.consumers.reset("RESET", "r", 2);
  assert.equal(r.reset_seq, 2);
  got = await drain(await c.fetch({ max_messages: 4, expires: 1000 }));
  assert.deepEqual(got.map((m) => m.seq), [2, 3, 4]);
});

// Durable sourcing (2.14, ADR-58) set up from nats.js: a flow_control consumer on a work queue
// and a stream sourcing through it; the queue drains as the copies are stored.
test("durable sourcing of a work queue (ack_policy flow_control)", newer, async () => {
  await stream("JOBS", ["jobs.>"], { retention: "workqueue" });
  const ci = await jsm.consumers.add("JOBS", {
    durable_name: "copier", deliver_subject: "copier.jobs", ack_policy: "flow_control",
  });
  assert.equal(ci.config.ack_policy, "flow_control");
  assert.equal(ci.config.flow_control, true);
  assert.equal(ci.config.idle_heartbeat, 1000 * NS);
  await jsm.streams.add({
    name: "JOBS-COPY", sources: [{ name: "JOBS", consumer: { name: "copier", deliver_subject: "copier.jobs" } }],
  });
  await publishOrders([["jobs.a", "1"], ["jobs.b", "2"], ["jobs.a", "3"]]);
  let copy, jobs;
  for (let i = 0; i < 100; i++) {
    copy = await jsm.streams.info("JOBS-COPY");
    jobs = await jsm.streams.info("JOBS");
    if (copy.state.messages === 3 && jobs.state.messages === 0) break;
    await sleep(100);
  }
  assert.equal(copy.state.messages, 3);
  assert.equal(jobs.state.messages, 0, "acked by the flow-control answers, so removed");
  const m = await jsm.streams.getMessage("JOBS-COPY", { seq: 3 });
  assert.match(m.header.get("Nats-Stream-Source"), /^JOBS 3 /);
});
