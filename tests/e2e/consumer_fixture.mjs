// Shared setup for the nats.js consumer test files: one server (PEREGRINE_SERVER_BIN, or
// nats-server with PEREGRINE_E2E_REF=1) with JetStream per file, one connection, and helpers.
// The exported connection objects are live bindings, assigned in before().
import { before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, startServer } from "./server.mjs";
import { connect, createInbox } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";

export let srv;
export let nc;
export let jsm;
export let js;

// Registers the file's before/after hooks.
export function useServer() {
  before(async () => {
    assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
    // PEREGRINE_EXTRA_CONF: more config lines (a placement, as the integration variants).
    const extra = process.env.PEREGRINE_E2E_REF === "1" ? "" : process.env.PEREGRINE_EXTRA_CONF ?? "";
    srv = await startServer((dir) => `jetstream {\n  store_dir: "${dir}/js"\n}\n${extra}\n`);
    nc = await connect({ servers: `127.0.0.1:${srv.port}`, reconnect: false, timeout: 5000 });
    jsm = await jetstreamManager(nc);
    js = jetstream(nc);
  });
  after(async () => {
    if (nc) await nc.close();
    if (srv) await srv.stop();
  });
}

export const enc = new TextEncoder();
export const order = (id, customer = "acme-co", cents = 4200) =>
  `{"order_id":"${id}","customer":"${customer}","total_cents":${cents},"ts":"2026-05-22T10:14:22Z"}`;
export const NS = 1_000_000;  // ns per ms

// A fresh stream per test so tests don't see each other's consumers or messages.
export async function stream(name, subjects, extra = {}) {
  await jsm.streams.add({ name, subjects, ...extra });
}
export async function publishOrders(subjectsAndIds) {
  for (const [subject, id] of subjectsAndIds) await js.publish(subject, enc.encode(order(id)));
}
// Drains a fetch iterator into an array.
export async function drain(iter) {
  const out = [];
  for await (const m of iter) out.push(m);
  return out;
}
// Raw pull request: collects every reply (messages and statuses) until a terminal status or timeout.
export async function rawPull(subject, body, waitMs = 1500) {
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
