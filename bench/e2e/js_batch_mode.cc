// JetStream atomic batch publishing: batches of --batch messages (the first as a request for
// its zero-byte ack, the middle ones fire-and-forget, the commit as a request for the batch
// PubAck), one after another. Samples: one per batch, first send -> commit PubAck.
#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "bench/e2e/client.h"
#include "bench/e2e/js_batch_run.h"
#include "bench/e2e/modes.h"

namespace peregrine::bench {
namespace {

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

// Opens the bench stream and turns on `flag` (allow_atomic / allow_batched) with a raw update:
// nats.c's stream config has neither field. Returns an error text, empty on success.
std::string open_batch_stream(const config& cfg, js_session& s, const std::string& subject, const char* tag,
                              const char* flag) {
  std::string err = open_stream(cfg, cfg.file, 1, s, subject, tag);
  if (!err.empty()) return err;
  const std::string update = R"({"name":")" + s.stream + R"(","subjects":[")" + subject + R"(.>"],"storage":")" +
                             (cfg.file ? "file" : "memory") + R"(",")" + flag + R"(":true})";
  natsMsg* reply = nullptr;
  if (natsConnection_RequestString(&reply, s.nc.get(), ("$JS.API.STREAM.UPDATE." + s.stream).c_str(), update.c_str(),
                                   5000) != NATS_OK)
    return std::string("stream update (") + flag + ") got no reply";
  const std::string upd(natsMsg_GetData(reply), static_cast<size_t>(natsMsg_GetDataLength(reply)));
  natsMsg_Destroy(reply);
  if (upd.find("\"error\"") != std::string::npos) return std::string(flag) + " refused: " + upd;
  return {};
}

// Returns an error text, empty on success.
std::string start_batch_run(const config& cfg, progress& prog, batch_run& run, const char* suffix, const char* tag,
                            const char* flag) {
  const std::string subject = cfg.subject + suffix;
  if (std::string err = open_batch_stream(cfg, run.s, subject, tag, flag); !err.empty()) return err;
  run.n = std::max(2, cfg.fetch_batch);
  run.subj = subject + ".x";
  run.payload.assign(cfg.size, 'b');
  run.warm_batches = (cfg.warmup + run.n - 1) / run.n;
  run.batches = (cfg.count + run.n - 1) / run.n;
  prog.total = run.batches * run.n;
  run.start = clock_type::now();
  run.deadline = run.start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(cfg.duration_s));
  return {};
}

}  // namespace

result run_js_batch(const config& cfg, progress& prog) {
  result r;
  batch_run run;
  r.error = start_batch_run(cfg, prog, run, ".jsb", cfg.file ? "BATCH_FILE" : "BATCH_MEM", "allow_atomic");
  if (!r.error.empty()) return r;
  if (cfg.pipeline > 0) return run_js_batch_pipelined(cfg, prog, run);
  js_session& s = run.s;
  const int n = run.n;
  const std::string& subj = run.subj;
  const std::string& payload = run.payload;
  for (uint64_t b = 0; run.more(b); ++b) {
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
    if (b >= run.warm_batches) {
      r.received += static_cast<uint64_t>(n);
      r.samples_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      prog.done = r.received;
    }
  }
  r.elapsed_s = std::chrono::duration<double>(clock_type::now() - run.start).count();
  return r;
}

}  // namespace peregrine::bench

namespace peregrine::bench {
namespace {

// "...\"<key>\":<n>..." -> n (0 when absent).
uint64_t json_u64(const std::string& body, const std::string& key) {
  const auto p = body.find("\"" + key + "\":");
  return p == std::string::npos ? 0 : std::strtoull(body.c_str() + p + key.size() + 3, nullptr, 10);
}

}  // namespace

// Fast-ingest batches (2.14): batches of cfg.fetch_batch messages, control data in the reply
// subject, flow 100 and at most two ack windows outstanding as Orbit's fast publisher does;
// the last message commits. Samples: one per batch, first send -> final PubAck.
result run_js_fast_batch(const config& cfg, progress& prog) {
  result r;
  batch_run run;
  r.error = start_batch_run(cfg, prog, run, ".jsf", cfg.file ? "FAST_FILE" : "FAST_MEM", "allow_batched");
  if (!r.error.empty()) return r;
  if (cfg.pipeline > 0) return run_js_fast_batch_pipelined(cfg, prog, run);
  js_session& s = run.s;
  const int n = run.n;
  const std::string& subj = run.subj;
  const std::string& payload = run.payload;
  const auto start = run.start;
  char rep[160];
  for (uint64_t b = 0; run.more(b) && r.error.empty(); ++b) {
    const std::string id = "pgf" + std::to_string(b) + "x" + std::to_string(start.time_since_epoch().count() % 100000);
    natsSubscription* raw_sub = nullptr;
    if (natsConnection_SubscribeSync(&raw_sub, s.nc.get(), ("_INBOX." + id + ".>").c_str()) != NATS_OK) {
      r.error = "subscribe failed";
      break;
    }
    std::unique_ptr<natsSubscription, void (*)(natsSubscription*)> sub(raw_sub, natsSubscription_Destroy);
    const auto t0 = clock_type::now();
    uint64_t acked = 0, window = 0;  // window 0 = the initial ack has not come yet
    std::string final_ack;
    // Reads one reply; false (with r.error set) on timeout or a gap/err message.
    auto read_one = [&]() {
      natsMsg* m = nullptr;
      if (natsSubscription_NextMsg(&m, sub.get(), 5000) != NATS_OK) {
        r.error = "fast batch: no ack within 5 s";
        return false;
      }
      std::string body(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)));
      natsMsg_Destroy(m);
      if (body.find("\"type\":\"ack\"") != std::string::npos) {
        acked = std::max(acked, json_u64(body, "seq"));
        window = std::max<uint64_t>(1, json_u64(body, "msgs"));
        return true;
      }
      if (body.find("\"type\":") != std::string::npos || body.find("\"error\"") != std::string::npos) {
        r.error = "fast batch: " + body;
        return false;
      }
      final_ack = std::move(body);
      return true;
    };
    for (int k = 1; k <= n && r.error.empty(); ++k) {
      const int op = k == 1 ? 0 : k == n ? 2 : 1;
      std::snprintf(rep, sizeof rep, "_INBOX.%s.100.fail.%d.%d.$FI", id.c_str(), k, op);
      if (natsConnection_PublishRequest(s.nc.get(), subj.c_str(), rep, payload.data(), static_cast<int>(payload.size())) !=
          NATS_OK) {
        r.error = "fast batch publish failed";
        break;
      }
      if (k == 1) natsConnection_Flush(s.nc.get());
      // The first reply tells the rate; then stall while two windows are unacknowledged.
      while (r.error.empty() && k < n && (window == 0 || static_cast<uint64_t>(k) >= acked + 2 * window))
        read_one();
    }
    while (r.error.empty() && final_ack.empty()) read_one();
    const auto t1 = clock_type::now();
    if (!r.error.empty()) break;
    if (final_ack.find("\"count\":" + std::to_string(n)) == std::string::npos) {
      r.error = "the commit did not answer with the batch PubAck: " + final_ack;
      break;
    }
    r.sent += static_cast<uint64_t>(n);
    if (b >= run.warm_batches) {
      r.received += static_cast<uint64_t>(n);
      r.samples_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      prog.done = r.received;
    }
  }
  r.elapsed_s = std::chrono::duration<double>(clock_type::now() - run.start).count();
  return r;
}

}  // namespace peregrine::bench
