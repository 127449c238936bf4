// nats.js (v3) over TLS: an unmodified client with its `tls` options (caFile, certFile/keyFile,
// handshakeFirst) against the server binary, certificates from tests/data/tls.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bin, isReference, startServer } from "./server.mjs";
import { connect } from "@nats-io/transport-node";

const certs = join(dirname(fileURLToPath(import.meta.url)), "..", "data", "tls");
const cert = (f) => join(certs, f);
const tlsBlock = (extra = "") =>
  `tls {\n  cert_file: "${cert("server.pem")}"\n  key_file: "${cert("server-key.pem")}"\n` +
  `  ca_file: "${cert("ca.pem")}"\n${extra}}\n`;

const servers = [];
async function server(conf) {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  const s = await startServer(() => conf);
  servers.push(s);
  return s;
}
after(async () => { for (const s of servers) await s.stop(); });

const opts = (srv, tls) => ({ servers: `127.0.0.1:${srv.port}`, reconnect: false, timeout: 5000, tls });

test("TLS client: request/reply and a 200 KB message", async () => {
  const srv = await server(tlsBlock());
  const nc = await connect(opts(srv, { caFile: cert("ca.pem") }));
  try {
    assert.equal(nc.info.tls_required, true);
    const sub = nc.subscribe("tls.echo", { callback: (_e, m) => m.respond(m.data) });
    const big = new Uint8Array(200_000).fill(7);
    const r = await nc.request("tls.echo", big, { timeout: 5000 });
    assert.equal(r.data.length, big.length);
    assert.ok(r.data.every((b) => b === 7));
    for (let i = 0; i < 50; i++) {
      const m = await nc.request("tls.echo", `n${i}`, { timeout: 5000 });
      assert.equal(m.string(), `n${i}`);
    }
    sub.unsubscribe();
  } finally {
    await nc.close();
  }
});

test("a client that does not trust the server's CA is refused", async () => {
  const srv = await server(tlsBlock());
  await assert.rejects(connect(opts(srv, { caFile: cert("wrong-ca.pem") })));
  const nc = await connect(opts(srv, { caFile: cert("ca.pem") }));  // the server is fine
  await nc.flush();
  await nc.close();
});

test("verify: a CA-signed client certificate is required", async () => {
  const srv = await server(tlsBlock("  verify: true\n"));
  await assert.rejects(connect(opts(srv, { caFile: cert("ca.pem") })));
  await assert.rejects(connect(opts(srv, { caFile: cert("ca.pem"), certFile: cert("rogue.pem"), keyFile: cert("rogue-key.pem") })));
  const nc = await connect(opts(srv, { caFile: cert("ca.pem"), certFile: cert("client.pem"), keyFile: cert("client-key.pem") }));
  try {
    assert.equal(nc.info.tls_verify, true);
    const sub = nc.subscribe("v.t", { max: 1 });
    nc.publish("v.t", "ok");
    for await (const m of sub) assert.equal(m.string(), "ok");
  } finally {
    await nc.close();
  }
});

test("handshake_first: handshakeFirst clients connect", { skip: isReference && "nats-server 2.9.10 has no handshake_first" }, async () => {
  const srv = await server(tlsBlock("  handshake_first: true\n"));
  const nc = await connect(opts(srv, { caFile: cert("ca.pem"), handshakeFirst: true }));
  try {
    assert.equal(nc.info.tls_required, true);
    const r = await nc.request("$SYS.REQ.NONE", "", { timeout: 2000 }).catch((e) => e);
    assert.ok(r instanceof Error);  // no responders, over the encrypted connection
  } finally {
    await nc.close();
  }
});
