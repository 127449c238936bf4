// JetStream async publish throughput with a bounded window of in-flight publishes, on a memory or file stream.
#include <nats/nats.h>

#include <chrono>
#include <cstring>
#include <string>

#include "bench/e2e/client.h"
#include "bench/e2e/modes.h"

namespace peregrine::bench {
namespace {

using clock_type = std::chrono::steady_clock;

}  // namespace

result run_js_async(const config& cfg, progress& prog, bool file) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".jsa";
  r.error = open_stream(cfg, file, 256, s, subject, file ? "FILE" : "MEM");
  if (!r.error.empty()) return r;
  const std::string subj = subject + ".x";
  std::string payload(cfg.size, 'a');
  prog.total = cfg.count;
  const auto start = clock_type::now();
  for (uint64_t i = 0; i < cfg.count; ++i) {
    const natsStatus st =
        js_PublishAsync(s.js.get(), subj.c_str(), payload.data(), static_cast<int>(payload.size()), nullptr);
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
  const natsStatus st = js_PublishAsyncComplete(s.js.get(), &po);
  r.elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();
  if (st != NATS_OK && r.error.empty()) r.error = std::string("not all acked: ") + natsStatus_GetText(st);
  natsMsgList pending;
  if (js_PublishAsyncGetPendingList(&pending, s.js.get()) == NATS_OK) {
    if (pending.Count > 0 && r.error.empty()) r.error = "some publishes were not acknowledged";
    natsMsgList_Destroy(&pending);
  }
  r.received = r.error.empty() ? r.sent : 0;
  prog.done = r.received;
  return r;
}

}  // namespace peregrine::bench
