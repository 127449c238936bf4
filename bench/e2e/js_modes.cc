// JetStream publish modes: synchronous publish -> PubAck latency, and async publish
// throughput with a bounded window of in-flight publishes, on a memory or file stream.
#include <nats/nats.h>

#include <chrono>
#include <cstring>
#include <string>

#include "bench/e2e/modes.h"

namespace peregrine::bench {
namespace {

using clock_type = std::chrono::steady_clock;

struct js_session {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  std::string stream;
  ~js_session() {
    if (js && !stream.empty()) {
      jsErrCode jerr = static_cast<jsErrCode>(0);
      js_DeleteStream(js, stream.c_str(), nullptr, &jerr);
    }
    if (js) jsCtx_Destroy(js);
    if (nc) natsConnection_Destroy(nc);
  }
};

// Connects and (re)creates stream PGBENCH_<tag> capturing `<subject>.>`.
std::string open_stream(const config& cfg, bool file, int64_t window, js_session& s,
                        const std::string& subject) {
  if (natsConnection_ConnectTo(&s.nc, cfg.url.c_str()) != NATS_OK) return "cannot connect";
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.PublishAsync.MaxPending = window;
  if (natsConnection_JetStream(&s.js, s.nc, &jo) != NATS_OK) return "no JetStream context";
  s.stream = std::string("PGBENCH_") + (file ? "FILE" : "MEM");
  jsErrCode jerr = static_cast<jsErrCode>(0);
  js_DeleteStream(s.js, s.stream.c_str(), nullptr, &jerr);
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = s.stream.c_str();
  const std::string filter = subject + ".>";
  const char* subjects[] = {filter.c_str()};
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = file ? js_FileStorage : js_MemoryStorage;
  jsStreamInfo* si = nullptr;
  const natsStatus st = js_AddStream(&si, s.js, &sc, nullptr, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (st != NATS_OK) return std::string("stream create failed: ") + natsStatus_GetText(st);
  return {};
}

}  // namespace

result run_js_publish(const config& cfg, progress& prog, bool file) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".js";
  r.error = open_stream(cfg, file, 1, s, subject);
  if (!r.error.empty()) return r;
  const std::string subj = subject + ".x";
  std::string payload(cfg.size, 'p');
  prog.total = cfg.count;
  const auto deadline = clock_type::now() + std::chrono::duration<double>(cfg.duration_s);
  r.samples_ns.reserve(cfg.count);
  const auto start = clock_type::now();
  for (uint64_t i = 0; i < cfg.warmup + cfg.count && clock_type::now() < deadline; ++i) {
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const auto t0 = clock_type::now();
    const natsStatus st = js_Publish(&ack, s.js, subj.c_str(), payload.data(),
                                     static_cast<int>(payload.size()), nullptr, &jerr);
    const auto t1 = clock_type::now();
    if (ack) jsPubAck_Destroy(ack);
    if (st != NATS_OK) {
      r.error = std::string("publish failed: ") + natsStatus_GetText(st);
      break;
    }
    ++r.sent;
    if (i >= cfg.warmup) {
      ++r.received;
      r.samples_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      prog.done = r.received;
    }
  }
  r.elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();
  return r;
}

result run_js_async(const config& cfg, progress& prog, bool file) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".jsa";
  r.error = open_stream(cfg, file, 256, s, subject);
  if (!r.error.empty()) return r;
  const std::string subj = subject + ".x";
  std::string payload(cfg.size, 'a');
  prog.total = cfg.count;
  const auto start = clock_type::now();
  for (uint64_t i = 0; i < cfg.count; ++i) {
    const natsStatus st =
        js_PublishAsync(s.js, subj.c_str(), payload.data(), static_cast<int>(payload.size()), nullptr);
    if (st != NATS_OK) {
      r.error = std::string("async publish failed: ") + natsStatus_GetText(st);
      break;
    }
    ++r.sent;
    if ((i & 1023) == 0) prog.done = i;
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = static_cast<int64_t>(cfg.duration_s * 1000);
  const natsStatus st = js_PublishAsyncComplete(s.js, &po);
  r.elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();
  if (st != NATS_OK && r.error.empty()) r.error = std::string("not all acked: ") + natsStatus_GetText(st);
  natsMsgList pending;
  if (js_PublishAsyncGetPendingList(&pending, s.js) == NATS_OK) {
    if (pending.Count > 0 && r.error.empty()) r.error = "some publishes were not acknowledged";
    natsMsgList_Destroy(&pending);
  }
  r.received = r.error.empty() ? r.sent : 0;
  prog.done = r.received;
  return r;
}

}  // namespace peregrine::bench
