// nats.js (v3) against the 503 no-responders status a pull gets when its stream or consumer
// does not exist (nats-server 2.10.26+/2.11): fetch and next fail at once instead of waiting
// for missed heartbeats or the expiry. nats-server 2.9.10 stays silent, so Peregrine only.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isReference } from "./server.mjs";
import { AckPolicy } from "@nats-io/jetstream";
import { js, jsm, stream, useServer } from "./consumer_fixture.mjs";

useServer();

const newer = { skip: isReference ? "nats-server 2.9.10 does not send the 503" : false };

// Rejection (or end) of a fetch iterator, and how long it took.
async function fetchOutcome(consumer, opts) {
  const t0 = Date.now();
  try {
    const iter = await consumer.fetch(opts);
    let n = 0;
    for await (const m of iter) { m.ack(); n++; }
    return { error: null, n, ms: Date.now() - t0 };
  } catch (err) {
    return { error: err, n: 0, ms: Date.now() - t0 };
  }
}

test("fetch on a deleted consumer fails at once", newer, async () => {
  await stream("GONE", ["gone.>"]);
  await jsm.consumers.add("GONE", { durable_name: "worker", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("GONE", "worker");
  await jsm.consumers.delete("GONE", "worker");
  const r = await fetchOutcome(c, { max_messages: 5, expires: 10_000 });
  assert.ok(r.error, `fetch ended without an error after ${r.ms} ms`);
  assert.ok(r.ms < 3000, `took ${r.ms} ms`);
});

test("fetch on a deleted stream fails at once", newer, async () => {
  await stream("VANISH", ["vanish.>"]);
  await jsm.consumers.add("VANISH", { durable_name: "worker", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("VANISH", "worker");
  await jsm.streams.delete("VANISH");
  const r = await fetchOutcome(c, { max_messages: 5, expires: 10_000 });
  assert.ok(r.error, `fetch ended without an error after ${r.ms} ms`);
  assert.ok(r.ms < 3000, `took ${r.ms} ms`);
});

test("next on a deleted consumer fails at once", newer, async () => {
  await stream("NEXTGONE", ["nextgone.>"]);
  await jsm.consumers.add("NEXTGONE", { durable_name: "worker", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("NEXTGONE", "worker");
  await jsm.consumers.delete("NEXTGONE", "worker");
  const t0 = Date.now();
  await assert.rejects(c.next({ expires: 10_000 }));
  const ms = Date.now() - t0;
  assert.ok(ms < 3000, `took ${ms} ms`);
});
