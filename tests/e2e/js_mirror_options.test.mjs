// nats.js (v3, @nats-io/jetstream 3.4) against the server in PEREGRINE_SERVER_BIN: mirror and
// source options set up with JetStreamManager, checked by the exact stored contents (sequence,
// subject, data, timestamp; for sources the Nats-Stream-Source header) — streams.md §10:
//  - a mirror with opt_start_seq, one with opt_start_time: only the origin's messages from there
//    on, under the origin's sequence numbers (and timestamps), then every new one;
//  - a mirror with filter_subject and one with subject_transforms (the transform's src filters,
//    its dest is the stored subject, §10.4): the origin's numbering with gaps where it skipped;
//  - a stream sourcing two origins, one with filter_subject + opt_start_seq and one with
//    subject_transforms: every message once, renumbered, each with its Nats-Stream-Source
//    ("<origin> <origin seq> <filter|>> <dest|>> <origin subject>"); the last field for a
//    transformed message is a test of its own (Peregrine wrote the transformed subject there);
//  - the refusals: filter_subject with subject_transforms on a mirror (10150) and on a source
//    (10144), a mirror with subjects (10034) or sources (10031).
// PEREGRINE_E2E_REF=1 runs the file against nats-server 2.9.10, skipping what it lacks: source and
// mirror subject_transforms (2.10; nats.js refuses them client-side for older servers). There the
// sourcing test takes DEPOT without a transform and expects 2.9's "<origin> <origin seq>" header.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { bin, isReference, sleep, startServer, until } from "./server.mjs";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";

const jsConf = (dir) => `jetstream {\n  store_dir: "${dir}/js"\n}\n`;
const opts = (port) => ({ servers: `127.0.0.1:${port}`, reconnect: false, timeout: 5000 });
const noTransforms = isReference ? "nats-server 2.9.10 lacks source/mirror subject_transforms (2.10)" : false;

let srv;
before(async () => {
  assert.ok(bin, "PEREGRINE_SERVER_BIN must point at the server binary");
  srv = await startServer(jsConf);
});
after(async () => { if (srv) await srv.stop(); });

async function withJs(fn) {
  const nc = await connect(opts(srv.port));
  try {
    await fn(await jetstreamManager(nc), jetstream(nc));
  } finally {
    await nc.close();
  }
}

// Every stored message of a stream from first_seq to last_seq, and the sequences in that range
// that hold none (a mirror's gaps).
async function contents(jsm, name) {
  const state = (await jsm.streams.info(name)).state;
  const msgs = [];
  const missing = [];
  for (let seq = state.first_seq; seq > 0 && seq <= state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(name, { seq });
    if (m === null) {
      missing.push(seq);
      continue;
    }
    msgs.push({ seq: m.seq, subject: m.subject, data: m.string(), time: m.timestamp,
                source: m.header.get("Nats-Stream-Source") });
  }
  return { state, msgs, missing };
}

const strip = (ms) => ms.map(({ seq, subject, data }) => ({ seq, subject, data }));

// Waits until `name` holds `count` messages up to sequence `lastSeq` (any lastSeq when null),
// then a little longer so a late extra copy would show.
async function settled(jsm, name, count, lastSeq = null) {
  await until(`${name} to hold ${count} messages${lastSeq === null ? "" : ` up to ${lastSeq}`}`, async () => {
    const st = (await jsm.streams.info(name)).state;
    return st.messages >= count && (lastSeq === null || st.last_seq >= lastSeq);
  });
  await sleep(300);
}

// Publishes to the origin and records what it stored, as { seq, subject, data }.
async function publishTo(js, log, subject, data) {
  const pa = await js.publish(subject, data);
  log.push({ seq: pa.seq, subject, data });
  return pa.seq;
}

// ---------------------------------------------------------------------------------------------
// 1-2. Where a mirror starts.

test("mirror with opt_start_seq 5 of 10: origin seqs 5..10 under their own numbers, then new ones",
  { timeout: 30000 }, async () => {
    await withJs(async (jsm, js) => {
      await jsm.streams.add({ name: "SEQ_ORIGIN", subjects: ["seq.*"] });
      const origin = [];
      for (let i = 1; i <= 10; i++) await publishTo(js, origin, `seq.${i % 2 ? "odd" : "even"}`, `s${i}`);
      const mi = await jsm.streams.add({ name: "SEQ_MIRROR", mirror: { name: "SEQ_ORIGIN", opt_start_seq: 5 } });
      assert.deepEqual([mi.config.mirror.name, mi.config.mirror.opt_start_seq], ["SEQ_ORIGIN", 5]);
      assert.equal(mi.config.subjects, undefined, "a mirror has no subjects");

      await settled(jsm, "SEQ_MIRROR", 6, 10);
      let got = await contents(jsm, "SEQ_MIRROR");
      assert.deepEqual([got.state.messages, got.state.first_seq, got.state.last_seq], [6, 5, 10]);
      assert.deepEqual(strip(got.msgs), origin.slice(4));
      for (let seq = 1; seq <= 4; seq++)
        assert.equal(await jsm.streams.getMessage("SEQ_MIRROR", { seq }), null, `origin seq ${seq} copied`);
      // Each copy keeps the origin's timestamp and gets no Nats-Stream-Source (§10.4).
      const want = await contents(jsm, "SEQ_ORIGIN");
      assert.deepEqual(got.msgs.map((m) => m.time), want.msgs.slice(4).map((m) => m.time));
      assert.deepEqual(got.msgs.map((m) => m.source), Array(6).fill(""));

      // New origin messages follow, numbered as in the origin.
      await publishTo(js, origin, "seq.odd", "s11");
      await publishTo(js, origin, "seq.even", "s12");
      await settled(jsm, "SEQ_MIRROR", 8, 12);
      got = await contents(jsm, "SEQ_MIRROR");
      assert.deepEqual([got.state.messages, got.state.first_seq, got.state.last_seq], [8, 5, 12]);
      assert.deepEqual(strip(got.msgs), origin.slice(4));
      const mInfo = await jsm.streams.info("SEQ_MIRROR");
      assert.equal(mInfo.mirror.name, "SEQ_ORIGIN");
    });
  });

test("mirror with opt_start_time between two origin messages: only the later ones, then new ones",
  { timeout: 30000 }, async () => {
    await withJs(async (jsm, js) => {
      await jsm.streams.add({ name: "TIME_ORIGIN", subjects: ["time.*"] });
      const origin = [];
      for (let i = 1; i <= 3; i++) await publishTo(js, origin, "time.early", `t${i}`);
      await sleep(750);
      const start = new Date();
      await sleep(750);
      for (let i = 4; i <= 6; i++) await publishTo(js, origin, "time.late", `t${i}`);
      const originMsgs = await contents(jsm, "TIME_ORIGIN");
      assert.ok(Date.parse(originMsgs.msgs[2].time) < start.getTime() && Date.parse(originMsgs.msgs[3].time) > start.getTime(),
                `start ${start.toISOString()} not between ${originMsgs.msgs[2].time} and ${originMsgs.msgs[3].time}`);

      const mi = await jsm.streams.add({ name: "TIME_MIRROR",
                                         mirror: { name: "TIME_ORIGIN", opt_start_time: start.toISOString() } });
      assert.equal(Date.parse(mi.config.mirror.opt_start_time), start.getTime());

      await settled(jsm, "TIME_MIRROR", 3, 6);
      let got = await contents(jsm, "TIME_MIRROR");
      assert.deepEqual([got.state.messages, got.state.first_seq, got.state.last_seq], [3, 4, 6]);
      assert.deepEqual(strip(got.msgs), origin.slice(3));
      assert.deepEqual(got.msgs.map((m) => m.time), originMsgs.msgs.slice(3).map((m) => m.time));
      for (let seq = 1; seq <= 3; seq++)
        assert.equal(await jsm.streams.getMessage("TIME_MIRROR", { seq }), null, `origin seq ${seq} copied`);

      await publishTo(js, origin, "time.later", "t7");
      await settled(jsm, "TIME_MIRROR", 4, 7);
      got = await contents(jsm, "TIME_MIRROR");
      assert.deepEqual([got.state.messages, got.state.first_seq, got.state.last_seq], [4, 4, 7]);
      assert.deepEqual(strip(got.msgs), origin.slice(3));
    });
  });

// ---------------------------------------------------------------------------------------------
// 3. Filtered and transformed mirrors of SHOP (orders.* and returns.*), which test 4 sources too.

const shop = [];  // what SHOP stored: { seq, subject, data }
const shopSubjects = ["orders.created", "orders.shipped", "returns.requested", "orders.created", "orders.cancelled",
                      "returns.approved", "orders.shipped", "returns.requested", "orders.created", "orders.shipped"];
const shopBody = (i, subject) => `{"n":${i},"kind":"${subject}","total_cents":${1000 + i}}`;

async function shopReady(jsm, js) {
  if (shop.length) return;
  await jsm.streams.add({ name: "SHOP", subjects: ["orders.*", "returns.*"] });
  for (const [i, subject] of shopSubjects.entries()) await publishTo(js, shop, subject, shopBody(i + 1, subject));
}
const isOrder = (m) => m.subject.startsWith("orders.");

test("mirror with filter_subject orders.*: only matching origin messages, under the origin's numbers",
  { timeout: 30000 }, async () => {
    await withJs(async (jsm, js) => {
      await shopReady(jsm, js);
      const mi = await jsm.streams.add({ name: "SHOP_ORDERS", mirror: { name: "SHOP", filter_subject: "orders.*" } });
      assert.equal(mi.config.mirror.filter_subject, "orders.*");

      let want = shop.filter(isOrder);  // seqs 1 2 4 5 7 9 10
      await settled(jsm, "SHOP_ORDERS", want.length, 10);
      let got = await contents(jsm, "SHOP_ORDERS");
      assert.deepEqual([got.state.messages, got.state.first_seq, got.state.last_seq], [7, 1, 10]);
      assert.deepEqual(strip(got.msgs), want);
      assert.deepEqual(got.missing, [3, 6, 8], "the filtered-out origin sequences are gaps");
      assert.deepEqual(got.msgs.map((m) => m.source), Array(7).fill(""));

      // New messages: the returns.* one is skipped, the orders.* one lands at its origin sequence.
      const r = await publishTo(js, shop, "returns.requested", shopBody(11, "returns.requested"));
      const o = await publishTo(js, shop, "orders.created", shopBody(12, "orders.created"));
      assert.deepEqual([r, o], [11, 12]);
      want = shop.filter(isOrder);
      await settled(jsm, "SHOP_ORDERS", want.length, 12);
      got = await contents(jsm, "SHOP_ORDERS");
      assert.deepEqual([got.state.messages, got.state.first_seq, got.state.last_seq], [8, 1, 12]);
      assert.deepEqual(strip(got.msgs), want);
      assert.deepEqual(got.missing, [3, 6, 8, 11]);
    });
  });

test("mirror with subject_transforms orders.* -> archive.orders.{{wildcard(1)}}: stored under the new subjects",
  { skip: noTransforms, timeout: 30000 }, async () => {
    await withJs(async (jsm, js) => {
      await shopReady(jsm, js);
      const transforms = [{ src: "orders.*", dest: "archive.orders.{{wildcard(1)}}" }];
      const mi = await jsm.streams.add({ name: "SHOP_ARCHIVE", mirror: { name: "SHOP", subject_transforms: transforms } });
      assert.deepEqual(mi.config.mirror.subject_transforms, transforms);
      assert.equal(mi.config.mirror.filter_subject, undefined);

      // §10.4: the origin's sequence and data, the subject after the mirror's transform; the
      // transform's src filters like filter_subject does.
      const archived = () => shop.filter(isOrder).map((m) => ({ ...m, subject: `archive.${m.subject}` }));
      let want = archived();
      const lastOrder = want.at(-1).seq;
      await settled(jsm, "SHOP_ARCHIVE", want.length, lastOrder);
      let got = await contents(jsm, "SHOP_ARCHIVE");
      assert.deepEqual([got.state.messages, got.state.first_seq, got.state.last_seq], [want.length, 1, lastOrder]);
      assert.deepEqual(strip(got.msgs), want);
      assert.deepEqual(got.missing, shop.filter((m) => !isOrder(m) && m.seq < lastOrder).map((m) => m.seq));
      assert.deepEqual(got.msgs.map((m) => m.source), Array(want.length).fill(""));

      const seq = await publishTo(js, shop, "orders.returned", shopBody(shop.length + 1, "orders.returned"));
      want = archived();
      await settled(jsm, "SHOP_ARCHIVE", want.length, seq);
      got = await contents(jsm, "SHOP_ARCHIVE");
      assert.deepEqual(strip(got.msgs), want);
      assert.equal(got.msgs.at(-1).subject, "archive.orders.returned");
      // The origin keeps its own subjects.
      assert.equal((await jsm.streams.getMessage("SHOP", { seq })).subject, "orders.returned");
    });
  });

// ---------------------------------------------------------------------------------------------
// 4. A stream sourcing SHOP (filter_subject + opt_start_seq) and DEPOT (subject_transforms).

const depot = [];  // what DEPOT stored: { seq, subject, data }
const depotSubjects = ["depot.eu.in", "depot.us.out", "depot.us.in", "depot.eu.out", "depot.ap.in"];
const depotTransforms = [{ src: "depot.*.in", dest: "stock.{{wildcard(1)}}.received" }];
const stocked = (subject) => `stock.${subject.split(".")[1]}.received`;  // what the transform makes of it

async function depotReady(jsm, js) {
  if (depot.length) return;
  await jsm.streams.add({ name: "DEPOT", subjects: ["depot.*.*"] });
  for (const [i, subject] of depotSubjects.entries()) await publishTo(js, depot, subject, `d${i + 1}`);
}

// The first n space-separated fields of a Nats-Stream-Source value (HEAD appends a 6th, the
// origin's identity hash, API level 5; 2.9 writes only two).
const fields = (source, n) => source.split(" ").slice(0, n).join(" ");

test("sources: filter_subject + opt_start_seq on one origin, subject_transforms on the other; each message once",
  { timeout: 30000 }, async () => {
    await withJs(async (jsm, js) => {
      await shopReady(jsm, js);
      await depotReady(jsm, js);

      // 2.9.10 has no source transforms: there DEPOT is sourced whole, under its own subjects.
      const depotSource = isReference ? { name: "DEPOT" } : { name: "DEPOT", subject_transforms: depotTransforms };
      const si = await jsm.streams.add({ name: "ALL",
                                         sources: [{ name: "SHOP", filter_subject: "orders.*", opt_start_seq: 4 },
                                                   depotSource] });
      assert.deepEqual(si.config.sources.map((s) => s.name), ["SHOP", "DEPOT"]);
      assert.deepEqual([si.config.sources[0].filter_subject, si.config.sources[0].opt_start_seq], ["orders.*", 4]);
      if (!isReference) assert.deepEqual(si.config.sources[1].subject_transforms, depotTransforms);

      // What each origin should contribute, in its own order, with its Nats-Stream-Source:
      // "<origin> <origin seq> <filter> <dest> <origin subject>" (§10.5; 2.9: "<origin> <origin seq>").
      // For DEPOT the fifth field is left to the next test.
      const fromShop = () => shop.filter((m) => m.seq >= 4 && isOrder(m)).map((m) => ({
        subject: m.subject, data: m.data, source: isReference ? `SHOP ${m.seq}` : `SHOP ${m.seq} orders.* > ${m.subject}` }));
      const fromDepot = () => (isReference ? depot : depot.filter((m) => m.subject.endsWith(".in"))).map((m) => ({
        subject: isReference ? m.subject : stocked(m.subject), data: m.data,
        source: isReference ? `DEPOT ${m.seq}` : `DEPOT ${m.seq} ${depotTransforms[0].src} ${depotTransforms[0].dest}` }));

      const check = async () => {
        const wantShop = fromShop(), wantDepot = fromDepot();
        const total = wantShop.length + wantDepot.length;
        await settled(jsm, "ALL", total);
        const got = await contents(jsm, "ALL");
        assert.deepEqual([got.state.messages, got.state.first_seq, got.state.last_seq], [total, 1, total]);
        assert.deepEqual(got.missing, []);
        assert.deepEqual(got.msgs.map((m) => m.seq), Array.from({ length: total }, (_, i) => i + 1));
        const picked = (origin, n) => got.msgs.filter((m) => m.source.startsWith(`${origin} `))
          .map((m) => ({ subject: m.subject, data: m.data, source: fields(m.source, n) }));
        assert.deepEqual(picked("SHOP", 5), wantShop);
        assert.deepEqual(picked("DEPOT", 4), wantDepot);
      };
      await check();

      // New messages on both origins: matching ones are brought once, the others not at all.
      await publishTo(js, shop, "returns.approved", shopBody(shop.length + 1, "returns.approved"));
      await publishTo(js, shop, "orders.shipped", shopBody(shop.length + 1, "orders.shipped"));
      await publishTo(js, depot, "depot.eu.out", "d6");
      await publishTo(js, depot, "depot.us.in", "d7");
      await check();

      const info = await jsm.streams.info("ALL");
      assert.deepEqual(info.sources.map((s) => s.name).sort(), ["DEPOT", "SHOP"]);
      if (!isReference) {
        const byName = Object.fromEntries(info.sources.map((s) => [s.name, s]));
        assert.equal(byName.SHOP.filter_subject, "orders.*");
        assert.deepEqual(byName.DEPOT.subject_transforms, depotTransforms);
      }
    });
  });

test("sources: a transformed message's Nats-Stream-Source names its origin subject, not the new one",
  { skip: noTransforms, timeout: 30000 }, async () => {
    await withJs(async (jsm, js) => {
      await depotReady(jsm, js);
      await jsm.streams.add({ name: "STOCK", sources: [{ name: "DEPOT", subject_transforms: depotTransforms }] });
      const want = depot.filter((m) => m.subject.endsWith(".in")).map((m, i) => ({
        seq: i + 1, subject: stocked(m.subject), data: m.data,
        source: `DEPOT ${m.seq} ${depotTransforms[0].src} ${depotTransforms[0].dest} ${m.subject}` }));
      await settled(jsm, "STOCK", want.length);
      const got = await contents(jsm, "STOCK");
      assert.deepEqual(got.msgs.map(({ seq, subject, data, source }) => ({ seq, subject, data, source: fields(source, 5) })),
                       want);
    });
  });

// ---------------------------------------------------------------------------------------------
// 5. Refused configurations: the API error, and no stream made.

async function refused(jsm, cfg, code, status, message) {
  await assert.rejects(jsm.streams.add(cfg), (err) => {
    assert.equal(err.name, "JetStreamApiError", String(err));
    assert.deepEqual([err.code, err.status, err.message], [code, status, message]);
    return true;
  });
  await assert.rejects(jsm.streams.info(cfg.name), (err) => err.code === 10059);
}

test("refused: a mirror with both filter_subject and subject_transforms (10150)",
  { skip: noTransforms, timeout: 15000 }, async () => {
    await withJs(async (jsm, js) => {
      await shopReady(jsm, js);
      await refused(jsm, { name: "BAD_MIRROR",
                           mirror: { name: "SHOP", filter_subject: "orders.*",
                                     subject_transforms: [{ src: "returns.*", dest: "r.{{wildcard(1)}}" }] } },
                    10150, 400, "mirror with multiple subject transforms cannot also have a single subject filter");
    });
  });

test("refused: a source with both filter_subject and subject_transforms (10144)",
  { skip: noTransforms, timeout: 15000 }, async () => {
    await withJs(async (jsm, js) => {
      await shopReady(jsm, js);
      await refused(jsm, { name: "BAD_SOURCE",
                           sources: [{ name: "SHOP", filter_subject: "orders.*",
                                       subject_transforms: [{ src: "returns.*", dest: "r.{{wildcard(1)}}" }] }] },
                    10144, 400, "source with multiple subject transforms cannot also have a single subject filter");
    });
  });

test("refused: a mirror that also has subjects (10034) or sources (10031)", { timeout: 15000 }, async () => {
  await withJs(async (jsm, js) => {
    await shopReady(jsm, js);
    await refused(jsm, { name: "MIRROR_SUBJECTS", subjects: ["mirror.own.>"], mirror: { name: "SHOP" } },
                  10034, 400, "stream mirrors can not contain subjects");
    await refused(jsm, { name: "MIRROR_SOURCES", mirror: { name: "SHOP" }, sources: [{ name: "SHOP" }] },
                  10031, 400, "stream mirrors can not also contain other sources");
  });
});
