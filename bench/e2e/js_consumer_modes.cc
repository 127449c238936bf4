// JetStream consumer modes over libnats, on a memory or file stream (--storage):
//   js-fetch            natsSubscription_Fetch throughput from a prefilled stream through a
//                       durable pull consumer; --batch N per fetch, --ack each|all
//   js-consume-latency  one message in flight: core publish into the stream -> delivery on a
//                       long-lived pull request (like a client's consume()); one-way latency
//   js-ack-rtt          ack sync round trips (+ACK with a reply subject -> the server's empty reply)
#include <nats/nats.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bench/e2e/client.h"
#include "bench/e2e/modes.h"
#include "bench/e2e/paced.h"

namespace peregrine::bench {
namespace {

struct list_guard {
  natsMsgList list{};
  ~list_guard() { natsMsgList_Destroy(&list); }
};

std::string stream_tag(const std::string& what, const config& cfg) {
  return what + (cfg.file ? "_FILE" : "_MEM");
}

// Stores n messages of cfg.size bytes on `subject` with async publishes; error text or empty.
std::string prefill(js_session& s, const std::string& subject, uint64_t n, size_t size) {
  std::string payload(size, 'f');
  for (uint64_t i = 0; i < n; ++i) {
    const natsStatus st = js_PublishAsync(s.js.get(), subject.c_str(), payload.data(),
                                          static_cast<int>(payload.size()), nullptr);
    if (st != NATS_OK) return err_text("prefill publish", st);
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 60000;
  const natsStatus st = js_PublishAsyncComplete(s.js.get(), &po);
  return st == NATS_OK ? std::string() : err_text("prefill acks", st);
}

// Adds durable pull consumer `name` on s.stream; error text or empty.
std::string add_pull_consumer(js_session& s, const std::string& name, jsAckPolicy ack, int64_t max_ack_pending) {
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = name.c_str();
  cc.AckPolicy = ack;
  cc.DeliverPolicy = js_DeliverAll;
  cc.MaxAckPending = max_ack_pending;
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus st = js_AddConsumer(&ci, s.js.get(), s.stream.c_str(), &cc, nullptr, &jerr);
  if (ci) jsConsumerInfo_Destroy(ci);
  if (st != NATS_OK) return err_text("consumer create (err_code " + std::to_string(jerr) + ")", st);
  return {};
}

// A libnats pull subscription bound to an existing durable.
sub_ptr bind_pull(js_session& s, const std::string& name, std::string& err) {
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = s.stream.c_str();
  so.Consumer = name.c_str();
  natsSubscription* sub = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus st = js_PullSubscribe(&sub, s.js.get(), nullptr, name.c_str(), nullptr, &so, &jerr);
  if (st != NATS_OK) err = err_text("pull subscribe", st);
  return sub_ptr(sub);
}

bool is_status(natsMsg* m) {
  const char* v = nullptr;
  return natsMsg_GetDataLength(m) == 0 && natsMsgHeader_Get(m, "Status", &v) == NATS_OK;
}

}  // namespace

result run_js_fetch(const config& cfg, progress& prog) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".fetch";
  r.error = open_stream(cfg, cfg.file, 256, s, subject, stream_tag("FETCH", cfg));
  if (!r.error.empty()) return r;
  r.error = prefill(s, subject + ".x", cfg.warmup + cfg.count, cfg.size);
  if (!r.error.empty()) return r;
  const int batch = std::max(1, cfg.fetch_batch);
  r.error = add_pull_consumer(s, "pgbench-fetch", cfg.ack_all ? js_AckAll : js_AckExplicit, 4LL * batch);
  if (!r.error.empty()) return r;
  sub_ptr sub = bind_pull(s, "pgbench-fetch", r.error);
  if (!sub) return r;

  prog.total = cfg.count;
  // Fetches `n` messages, acking each or the last of every batch; false on error.
  auto drain = [&](uint64_t n, bool measured) {
    uint64_t got = 0;
    const int64_t cap = now_ns() + static_cast<int64_t>(cfg.duration_s * 1e9);
    while (got < n) {
      if (measured && now_ns() > cap) {
        r.error = "duration cap reached";
        return false;
      }
      list_guard g;
      const int want = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(batch), n - got));
      const int64_t t0 = now_ns();
      const natsStatus st = natsSubscription_Fetch(&g.list, sub.get(), want, 5000, nullptr);
      if (st != NATS_OK) {
        r.error = err_text("fetch", st);
        return false;
      }
      if (measured) r.samples_ns.push_back(now_ns() - t0);
      for (int i = 0; i < g.list.Count; ++i)
        if (!cfg.ack_all || i == g.list.Count - 1) natsMsg_Ack(g.list.Msgs[i], nullptr);
      got += static_cast<uint64_t>(g.list.Count);
      if (measured) prog.done = got;
    }
    return true;
  };
  if (cfg.warmup > 0 && !drain(cfg.warmup, false)) return r;
  const int64_t start = now_ns();
  const bool ok = drain(cfg.count, true);
  r.elapsed_s = static_cast<double>(now_ns() - start) / 1e9;
  r.sent = cfg.count;
  r.received = ok ? cfg.count : prog.done.load();
  return r;
}

result run_js_consume_latency(const config& cfg, progress& prog) {
  result r;
  js_session s;  // the publisher's connection owns the stream
  const std::string subject = cfg.subject + ".consume";
  r.error = open_stream(cfg, cfg.file, 1, s, subject, stream_tag("CONSUME", cfg));
  if (!r.error.empty()) return r;
  r.error = add_pull_consumer(s, "pgbench-consume", js_AckExplicit, 1000);
  if (!r.error.empty()) return r;
  // The consumer side: its own connection, one inbox, pull requests covering the whole run.
  nc_ptr cons = open_conn(cfg, true, r.error);
  if (!cons) return r;
  natsInbox* inbox = nullptr;
  natsInbox_Create(&inbox);
  const std::string reply = inbox;
  natsInbox_Destroy(inbox);
  natsSubscription* raw = nullptr;
  natsStatus st = natsConnection_SubscribeSync(&raw, cons.get(), reply.c_str());
  if (st != NATS_OK) return r.error = err_text("subscribe", st), r;
  sub_ptr sub(raw);
  natsSubscription_SetPendingLimits(raw, -1, -1);
  const std::string next = "$JS.API.CONSUMER.MSG.NEXT." + s.stream + ".pgbench-consume";
  const uint64_t total = cfg.warmup + cfg.count;
  const auto expires_ns = static_cast<int64_t>((cfg.duration_s + 30) * 1e9);
  auto pull = [&](uint64_t batch) {
    const std::string body = "{\"batch\":" + std::to_string(batch) + ",\"expires\":" + std::to_string(expires_ns) + "}";
    return natsConnection_PublishRequest(cons.get(), next.c_str(), reply.c_str(), body.data(),
                                         static_cast<int>(body.size()));
  };
  if ((st = pull(total)) != NATS_OK) return r.error = err_text("pull request", st), r;
  natsConnection_Flush(cons.get());

  // Paced like the other latency modes: a sample is core publish -> delivery on the waiting
  // pull request (the ack that follows, a buffered write, is inside it too).
  const std::string subj = subject + ".x";
  const std::string buf(cfg.size, 'c');
  uint64_t delivered = 0;
  return run_paced(cfg, prog, 1, [&](int) -> std::string {
    natsStatus pst = natsConnection_Publish(s.nc.get(), subj.c_str(), buf.data(), static_cast<int>(buf.size()));
    if (pst != NATS_OK) return err_text("publish", pst);
    for (;;) {
      natsMsg* m = nullptr;
      pst = natsSubscription_NextMsg(&m, sub.get(), 5000);
      if (pst != NATS_OK) return err_text("waiting for delivery", pst);
      if (is_status(m)) {  // a heartbeat or an ended request: ask again for the rest
        const char* code = nullptr;
        natsMsgHeader_Get(m, "Status", &code);
        const bool ended = code != nullptr && std::strcmp(code, "100") != 0;
        natsMsg_Destroy(m);
        if (ended && (pst = pull(total > delivered ? total - delivered : 1)) != NATS_OK) return err_text("pull request", pst);
        continue;
      }
      ++delivered;
      if (const char* ack = natsMsg_GetReply(m)) natsConnection_PublishString(cons.get(), ack, "+ACK");
      natsMsg_Destroy(m);
      return {};
    }
  });
}

result run_js_ack_rtt(const config& cfg, progress& prog) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".ackrtt";
  r.error = open_stream(cfg, cfg.file, 256, s, subject, stream_tag("ACKRTT", cfg));
  if (!r.error.empty()) return r;
  r.error = prefill(s, subject + ".x", cfg.warmup + cfg.count, cfg.size);
  if (!r.error.empty()) return r;
  r.error = add_pull_consumer(s, "pgbench-ack", js_AckExplicit, 1000);
  if (!r.error.empty()) return r;
  sub_ptr sub = bind_pull(s, "pgbench-ack", r.error);
  if (!sub) return r;

  const uint64_t total = cfg.warmup + cfg.count;
  r.samples_ns.reserve(cfg.count);
  prog.total = cfg.count;
  uint64_t done = 0;
  int64_t start = now_ns();
  const int64_t cap_ns = static_cast<int64_t>(cfg.duration_s * 1e9);
  while (done < total) {
    if (done >= cfg.warmup && now_ns() - start > cap_ns) break;
    list_guard g;
    const int want = static_cast<int>(std::min<uint64_t>(100, total - done));
    const natsStatus st = natsSubscription_Fetch(&g.list, sub.get(), want, 5000, nullptr);
    if (st != NATS_OK) return r.error = err_text("fetch", st), r;
    for (int i = 0; i < g.list.Count; ++i, ++done) {
      if (done == cfg.warmup) start = now_ns();
      jsErrCode jerr = static_cast<jsErrCode>(0);
      const int64_t t0 = now_ns();
      const natsStatus as = natsMsg_AckSync(g.list.Msgs[i], nullptr, &jerr);
      const int64_t t1 = now_ns();
      if (as != NATS_OK) return r.error = err_text("ack sync", as), r;
      if (done >= cfg.warmup) {
        r.samples_ns.push_back(t1 - t0);
        ++r.sent;
        ++r.received;
        ++prog.done;
      }
    }
  }
  r.elapsed_s = static_cast<double>(now_ns() - start) / 1e9;
  return r;
}

}  // namespace peregrine::bench
