// More paced latency modes: fan-out (1 -> N subscribers), KV put/get and JetStream direct get.
#include <nats/nats.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/e2e/client.h"
#include "bench/e2e/paced.h"

namespace peregrine::bench {
namespace {

struct kv_deleter {
  void operator()(kvStore* kv) const { kvStore_Destroy(kv); }
};
using kv_ptr = std::unique_ptr<kvStore, kv_deleter>;

std::string key_name(uint64_t i) { return "k" + std::to_string(i); }

}  // namespace

result run_fanout(const config& cfg, progress& prog) {
  result r;
  const std::string subject = cfg.subject + ".fanout";
  auto pub = open_conn(cfg, true, r.error);
  if (!pub) return r;
  std::vector<sync_sub> subs;
  for (int i = 0; i < std::max(1, cfg.subscribers); ++i) {
    subs.push_back(open_sync_sub(cfg, subject, r.error));
    if (!subs.back().sub) return r;
  }
  const std::string payload(cfg.size, 'f');
  config one = cfg;
  one.publishers = 1;  // one publisher; the load is the fan-out
  return run_paced(one, prog, 1, [&](int) -> std::string {
    natsStatus s = natsConnection_Publish(pub.get(), subject.c_str(), payload.data(), static_cast<int>(payload.size()));
    if (s != NATS_OK) return err_text("publish", s);
    for (auto& sub : subs) {
      natsMsg* m = nullptr;
      s = natsSubscription_NextMsg(&m, sub.sub.get(), 5000);
      if (s != NATS_OK) return err_text("waiting for fan-out copy", s);
      natsMsg_Destroy(m);
    }
    return {};
  });
}

result run_kv(const config& cfg, progress& prog, bool get) {
  result r;
  auto nc = open_conn(cfg, true, r.error);
  if (!nc) return r;
  jsCtx* raw_js = nullptr;
  if (natsConnection_JetStream(&raw_js, nc.get(), nullptr) != NATS_OK) return r.error = "no JetStream context", r;
  js_ptr js(raw_js);
  const std::string bucket = "PGBENCH";
  js_DeleteKeyValue(js.get(), bucket.c_str());
  kvConfig kc;
  kvConfig_Init(&kc);
  kc.Bucket = bucket.c_str();
  kc.History = 1;
  kc.StorageType = cfg.file ? js_FileStorage : js_MemoryStorage;
  kvStore* raw_kv = nullptr;
  if (natsStatus s = js_CreateKeyValue(&raw_kv, js.get(), &kc); s != NATS_OK) return r.error = err_text("kv create", s), r;
  kv_ptr kv(raw_kv);
  const std::string payload(cfg.size, 'v');
  const uint64_t keys = static_cast<uint64_t>(std::max(1, cfg.keys));
  if (get)
    for (uint64_t i = 0; i < keys; ++i)
      if (natsStatus s = kvStore_Put(nullptr, kv.get(), key_name(i).c_str(), payload.data(), static_cast<int>(payload.size()));
          s != NATS_OK)
        return r.error = err_text("kv put (prefill)", s), r;
  uint64_t next = 0;  // one publisher: no sharing
  config one = cfg;
  one.publishers = 1;
  r = run_paced(one, prog, 1, [&](int) -> std::string {
    const std::string key = key_name(next++ % keys);
    if (!get) {
      const natsStatus s = kvStore_Put(nullptr, kv.get(), key.c_str(), payload.data(), static_cast<int>(payload.size()));
      return s == NATS_OK ? std::string() : err_text("kv put", s);
    }
    kvEntry* e = nullptr;
    const natsStatus s = kvStore_Get(&e, kv.get(), key.c_str());
    if (e) kvEntry_Destroy(e);
    return s == NATS_OK ? std::string() : err_text("kv get " + key, s);
  });
  kv.reset();
  js_DeleteKeyValue(js.get(), bucket.c_str());
  return r;
}

result run_js_direct_get(const config& cfg, progress& prog) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".dg";
  r.error = open_stream(cfg, cfg.file, 1, s, subject, cfg.file ? "DIRECT_FILE" : "DIRECT_MEM");
  if (!r.error.empty()) return r;
  // Turn on allow_direct (open_stream creates the stream without it).
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = s.stream.c_str();
  const std::string filter = subject + ".>";
  const char* subjects[] = {filter.c_str()};
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = cfg.file ? js_FileStorage : js_MemoryStorage;
  sc.AllowDirect = true;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus st = js_UpdateStream(&si, s.js.get(), &sc, nullptr, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (st != NATS_OK) return r.error = err_text("stream update (allow_direct)", st), r;
  const std::string payload(cfg.size, 'd');
  const uint64_t keys = static_cast<uint64_t>(std::max(1, cfg.keys));
  std::vector<std::string> subs;
  for (uint64_t i = 0; i < keys; ++i) {
    subs.push_back(subject + "." + key_name(i));
    jsPubAck* ack = nullptr;
    const natsStatus ps = js_Publish(&ack, s.js.get(), subs.back().c_str(), payload.data(),
                                     static_cast<int>(payload.size()), nullptr, &jerr);
    if (ack) jsPubAck_Destroy(ack);
    if (ps != NATS_OK) return r.error = err_text("prefill publish", ps), r;
  }
  uint64_t next = 0;
  config one = cfg;
  one.publishers = 1;
  return run_paced(one, prog, 1, [&](int) -> std::string {
    jsDirectGetMsgOptions o;
    jsDirectGetMsgOptions_Init(&o);
    o.LastBySubject = subs[next++ % keys].c_str();
    natsMsg* m = nullptr;
    const natsStatus gs = js_DirectGetMsg(&m, s.js.get(), s.stream.c_str(), nullptr, &o);
    if (m) natsMsg_Destroy(m);
    return gs == NATS_OK ? std::string() : err_text("direct get", gs);
  });
}

}  // namespace peregrine::bench
