// JetStream atomic batch publishing: batches of --batch messages (the first as a request for
// its zero-byte ack, the middle ones fire-and-forget, the commit as a request for the batch
// PubAck), one after another. Samples: one per batch, first send -> commit PubAck.
#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "bench/e2e/client.h"
#include "bench/e2e/modes.h"

namespace peregrine::bench {
namespace {

using clock_type = std::chrono::steady_clock;

struct msg_deleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
using msg_ptr = std::unique_ptr<natsMsg, msg_deleter>;

msg_ptr batch_msg(const std::string& subj, const std::string& payload, const std::string& id, int seq, bool commit) {
  natsMsg* m = nullptr;
  if (natsMsg_Create(&m, subj.c_str(), nullptr, payload.data(), static_cast<int>(payload.size())) != NATS_OK)
    return nullptr;
  natsMsgHeader_Set(m, "Nats-Batch-Id", id.c_str());
  natsMsgHeader_Set(m, "Nats-Batch-Sequence", std::to_string(seq).c_str());
  if (commit) natsMsgHeader_Set(m, "Nats-Batch-Commit", "1");
  return msg_ptr(m);
}

// Sends `m` as a request; returns the reply body, or sets err.
std::string request(natsConnection* nc, natsMsg* m, std::string& err) {
  natsMsg* reply = nullptr;
  const natsStatus st = natsConnection_RequestMsg(&reply, nc, m, 5000);
  if (st != NATS_OK) {
    err = err_text("batch request", st);
    return {};
  }
  std::string body(natsMsg_GetData(reply), static_cast<size_t>(natsMsg_GetDataLength(reply)));
  natsMsg_Destroy(reply);
  return body;
}

}  // namespace

result run_js_batch(const config& cfg, progress& prog) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".jsb";
  r.error = open_stream(cfg, cfg.file, 1, s, subject, cfg.file ? "BATCH_FILE" : "BATCH_MEM");
  if (!r.error.empty()) return r;
  // nats.c has no stream config field for allow_atomic: turn it on with a raw update.
  const std::string update = R"({"name":")" + s.stream + R"(","subjects":[")" + subject + R"(.>"],"storage":")" +
                             (cfg.file ? "file" : "memory") + R"(","allow_atomic":true})";
  natsMsg* reply = nullptr;
  if (natsConnection_RequestString(&reply, s.nc.get(), ("$JS.API.STREAM.UPDATE." + s.stream).c_str(), update.c_str(),
                                   5000) != NATS_OK) {
    r.error = "stream update (allow_atomic) got no reply";
    return r;
  }
  const std::string upd(natsMsg_GetData(reply), static_cast<size_t>(natsMsg_GetDataLength(reply)));
  natsMsg_Destroy(reply);
  if (upd.find("\"error\"") != std::string::npos) {
    r.error = "allow_atomic refused: " + upd;
    return r;
  }
  const int n = std::max(2, cfg.fetch_batch);
  const std::string subj = subject + ".x";
  const std::string payload(cfg.size, 'b');
  const uint64_t warm_batches = (cfg.warmup + n - 1) / n;
  const uint64_t batches = (cfg.count + n - 1) / n;
  prog.total = batches * n;
  const auto deadline = clock_type::now() + std::chrono::duration<double>(cfg.duration_s);
  const auto start = clock_type::now();
  for (uint64_t b = 0; b < warm_batches + batches && clock_type::now() < deadline; ++b) {
    const std::string id = "pgb" + std::to_string(b);
    const auto t0 = clock_type::now();
    auto first = batch_msg(subj, payload, id, 1, false);
    if (!first) {
      r.error = "cannot build a message";
      break;
    }
    if (const std::string ack = request(s.nc.get(), first.get(), r.error); !r.error.empty() || !ack.empty()) {
      if (r.error.empty()) r.error = "first message of a batch was not staged: " + ack;
      break;
    }
    for (int k = 2; k < n; ++k) {
      auto m = batch_msg(subj, payload, id, k, false);
      if (!m || natsConnection_PublishMsg(s.nc.get(), m.get()) != NATS_OK) {
        r.error = "batch publish failed";
        break;
      }
    }
    if (!r.error.empty()) break;
    auto commit = batch_msg(subj, payload, id, n, true);
    const std::string ack = request(s.nc.get(), commit.get(), r.error);
    const auto t1 = clock_type::now();
    if (!r.error.empty()) break;
    // A server without atomic batches stores each message and answers with a plain PubAck.
    if (ack.find("\"count\":" + std::to_string(n)) == std::string::npos) {
      r.error = "the commit did not answer with the batch PubAck (no atomic batches?): " + ack;
      break;
    }
    r.sent += static_cast<uint64_t>(n);
    if (b >= warm_batches) {
      r.received += static_cast<uint64_t>(n);
      r.samples_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      prog.done = r.received;
    }
  }
  r.elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();
  return r;
}

}  // namespace peregrine::bench
