// nats.js (v3, @nats-io/jetstream) message schedules against the server in PEREGRINE_SERVER_BIN:
// jsm.streams.add with allow_msg_schedules, js.publish with `schedule` (a past @at fires at
// once, @every repeats) and `cancelSchedule`, the fired message read back with
// jsm.streams.getMessage, and a bad pattern refused with nats-server's error.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, isReference, startServer } from "./server.mjs";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";

let srv;

before(async () => {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  srv = await startServer((dir) => `jetstream {\n  store_dir: "${dir}/js"\n}\n`);
});
after(async () => { if (srv) await srv.stop(); });

const opts = () => ({ servers: `127.0.0.1:${srv.port}`, reconnect: false, timeout: 5000 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function lastOn(jsm, stream, subject, afterSeq = 0, waitMs = 15000) {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const m = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    if (m && m.seq > afterSeq) return m;
    await sleep(25);
  }
  return null;
}

test("schedules: @at fires, @every repeats, cancelSchedule stops it", { skip: isReference }, async () => {
  const nc = await connect(opts());
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const si = await jsm.streams.add({
      name: "SCHED", subjects: ["schedules.>", "orders"], allow_msg_schedules: true, allow_msg_ttl: true,
    });
    assert.equal(si.config.allow_msg_schedules, true);
    assert.equal(si.config.allow_rollup_hdrs, true);

    const pa = await js.publish("schedules.once", "later-body", {
      schedule: { specification: { at: new Date("2009-11-10T23:00:00Z") }, target: "orders", ttl: "5m" },
    });
    assert.equal(pa.stream, "SCHED");
    const fired = await lastOn(jsm, "SCHED", "orders");
    assert.ok(fired, "the past @at schedule never fired");
    assert.equal(fired.string(), "later-body");
    assert.equal(fired.header.get("Nats-Scheduler"), "schedules.once");
    assert.equal(fired.header.get("Nats-Schedule-Next"), "purge");
    assert.equal(fired.header.get("Nats-TTL"), "5m");
    assert.equal(await jsm.streams.getMessage("SCHED", { last_by_subj: "schedules.once" }), null);

    await js.publish("schedules.tick", "tick", { schedule: { specification: { every: "1s" }, target: "orders" } });
    const first = await lastOn(jsm, "SCHED", "orders", fired.seq);
    assert.ok(first, "@every 1s never fired");
    assert.equal(first.header.get("Nats-Scheduler"), "schedules.tick");
    assert.match(first.header.get("Nats-Schedule-Next"), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(await lastOn(jsm, "SCHED", "orders", first.seq), "@every 1s fired only once");

    await js.publish("schedules.cancel", "", { cancelSchedule: { scheduleSubject: "schedules.tick" } });
    assert.equal(await jsm.streams.getMessage("SCHED", { last_by_subj: "schedules.tick" }), null);
    const n = (await jsm.streams.info("SCHED", { subjects_filter: "orders" })).state.subjects.orders;
    await sleep(2500);  // two intervals: a live schedule would have fired
    assert.equal((await jsm.streams.info("SCHED", { subjects_filter: "orders" })).state.subjects.orders, n);

    await assert.rejects(
      js.publish("schedules.bad", "x", { schedule: { specification: "*/5 * * * *", target: "orders" } }),
      (err) => /message schedules pattern is invalid/.test(err.message));
  } finally {
    await nc.close();
  }
});
