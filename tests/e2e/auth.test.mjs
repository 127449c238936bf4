// nats.js (v3) against users, permissions and nkeys: an unmodified JavaScript client sees
// nats-server's authorization behaviour (errors, violations that leave the connection open,
// nonce signing). PEREGRINE_E2E_REF=1 runs it against nats-server 2.9.10.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, startServer } from "./server.mjs";
import { connect, nkeys, nkeyAuthenticator, PermissionViolationError } from "@nats-io/transport-node";

const userKey = nkeys.createUser();
let srv;

before(async () => {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  srv = await startServer(() => `
authorization {
  users: [
    { user: alice, password: "s3cret", permissions: {
        publish: { deny: "secret.>" }, subscribe: { allow: ["_INBOX.>", "public.>"] } } }
    { user: svc, password: "svc", permissions: { subscribe: "svc.>", allow_responses: true } }
    { nkey: ${userKey.getPublicKey()} }
  ]
}
`);
});
after(async () => { if (srv) await srv.stop(); });

const opts = (extra) => ({ servers: `127.0.0.1:${srv.port}`, reconnect: false, timeout: 5000, ...extra });
const text = (err) => `${err?.message ?? ""} ${err?.cause?.message ?? ""}`;

test("a wrong password is an authorization violation", async () => {
  await assert.rejects(connect(opts({ user: "alice", pass: "nope" })), (err) => /authorization violation/i.test(text(err)));
  await assert.rejects(connect(opts()), (err) => /authorization violation/i.test(text(err)));
});

test("a refused subscription ends with a PermissionViolationError and the connection stays open", async () => {
  const nc = await connect(opts({ user: "alice", pass: "s3cret" }));
  try {
    const sub = nc.subscribe("private.x");
    await assert.rejects((async () => { for await (const _ of sub) { /* none */ } })(), (err) => {
      assert.ok(err instanceof PermissionViolationError, text(err));
      assert.equal(err.operation, "subscription");
      assert.equal(err.subject, "private.x");
      return true;
    });
    nc.publish("secret.plans", "x");  // refused too; still not fatal
    await nc.flush();
    assert.equal(nc.isClosed(), false);
    const ok = nc.subscribe("public.news", { max: 1 });
    nc.publish("public.news", "hello");
    for await (const m of ok) assert.equal(m.string(), "hello");
  } finally {
    await nc.close();
  }
});

test("a service with only allow_responses answers requests", async () => {
  const svc = await connect(opts({ user: "svc", pass: "svc" }));
  const nc = await connect(opts({ user: "alice", pass: "s3cret" }));
  try {
    const sub = svc.subscribe("svc.time");
    (async () => { for await (const m of sub) m.respond("noon"); })();
    await svc.flush();
    const r = await nc.request("svc.time", "?", { timeout: 5000 });
    assert.equal(r.string(), "noon");
  } finally {
    await nc.close();
    await svc.close();
  }
});

test("an nkey user signs the nonce and connects", async () => {
  const nc = await connect(opts({ authenticator: nkeyAuthenticator(userKey.getSeed()) }));
  try {
    assert.ok(nc.info.nonce, "INFO must carry a nonce");
    const sub = nc.subscribe("nk.x", { max: 1 });
    nc.publish("nk.x", "signed");
    for await (const m of sub) assert.equal(m.string(), "signed");
  } finally {
    await nc.close();
  }
  const stranger = nkeys.createUser();
  await assert.rejects(connect(opts({ authenticator: nkeyAuthenticator(stranger.getSeed()) })),
    (err) => /authorization violation/i.test(text(err)));
});
