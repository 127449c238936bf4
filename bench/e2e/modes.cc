#include "bench/e2e/modes.h"

#include <nats/nats.h>

#include "bench/e2e/client.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace peregrine::bench {
namespace {

using clock_type = std::chrono::steady_clock;

// Payload layout: [0..8) send timestamp (steady clock ns, host order: same process reads it),
// [8] phase marker ('W' warmup, 'M' measured), rest filler.
constexpr size_t ts_bytes = 8;
constexpr size_t marker_at = 8;

void stamp(std::vector<char>& buf, char marker) {
  const int64_t t = now_ns();
  std::memcpy(buf.data(), &t, ts_bytes);
  buf[marker_at] = marker;
}

int64_t stamp_of(const char* data) {
  int64_t t = 0;
  std::memcpy(&t, data, ts_bytes);
  return t;
}

double seconds_between(int64_t a_ns, int64_t b_ns) { return static_cast<double>(b_ns - a_ns) / 1e9; }

}  // namespace

namespace {

// Subscriber side of the throughput mode: counts warmup and measured messages separately and
// records one-way latency (under load, so it includes queueing) for measured ones.
struct tp_sink {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t warm = 0;
  uint64_t measured = 0;
  int64_t last_ns = 0;
  std::vector<int64_t> samples;
  progress* prog = nullptr;

  static void on_msg(natsConnection*, natsSubscription*, natsMsg* m, void* closure) {
    auto* self = static_cast<tp_sink*>(closure);
    const int64_t t = now_ns();
    const char* d = natsMsg_GetData(m);
    const bool is_measured = natsMsg_GetDataLength(m) > static_cast<int>(marker_at) && d[marker_at] == 'M';
    {
      std::lock_guard lock(self->mu);
      if (is_measured) {
        self->samples.push_back(t - stamp_of(d));
        ++self->measured;
        self->last_ns = t;
      } else {
        ++self->warm;
      }
    }
    if (is_measured) ++self->prog->done;
    self->cv.notify_all();
    natsMsg_Destroy(m);
  }

  // Waits until pred() holds or the deadline passes.
  template <class Pred>
  bool wait_until(int64_t deadline_ns, Pred pred) {
    std::unique_lock lock(mu);
    while (!pred()) {
      const int64_t left = deadline_ns - now_ns();
      if (left <= 0) return false;
      cv.wait_for(lock, std::chrono::nanoseconds(std::min<int64_t>(left, 100'000'000)));
    }
    return true;
  }
};

// Publishes n stamped messages; returns how many were sent before the deadline.
uint64_t publish_burst(natsConnection* nc, const std::string& subject, size_t size, uint64_t n,
                       char marker, int64_t deadline_ns, std::string& err) {
  std::vector<char> buf(size, 'x');
  uint64_t sent = 0;
  for (; sent < n; ++sent) {
    if ((sent & 1023) == 0 && now_ns() > deadline_ns) break;
    stamp(buf, marker);
    natsStatus s = natsConnection_Publish(nc, subject.c_str(), buf.data(), static_cast<int>(buf.size()));
    if (s != NATS_OK) {
      err = err_text("publish", s);
      break;
    }
  }
  natsStatus s = natsConnection_FlushTimeout(nc, 10000);
  if (s != NATS_OK && err.empty()) err = err_text("flush", s);
  return sent;
}

}  // namespace

result run_throughput(const config& cfg, progress& prog) {
  result r;
  const std::string subject = cfg.subject + ".tp";
  // Declared before the connection so it outlives it: callbacks may run until the close.
  tp_sink sink;
  sink.prog = &prog;
  // N x M: --subscribers connections each get every message (throughput mode only; 1 default).
  const auto nsub = static_cast<uint64_t>(std::max(1, cfg.mode == "throughput" ? cfg.tp_subscribers : 1));
  std::vector<nc_ptr> subcs;
  std::vector<sub_ptr> subs;
  sink.samples.reserve(cfg.count * nsub);
  for (uint64_t k = 0; k < nsub; ++k) {
    subcs.push_back(open_conn(cfg, false, r.error));
    if (!subcs.back()) return r;
    natsSubscription* raw = nullptr;
    natsStatus s = natsConnection_Subscribe(&raw, subcs.back().get(), subject.c_str(), tp_sink::on_msg, &sink);
    if (s != NATS_OK) return r.error = err_text("subscribe", s), r;
    subs.emplace_back(raw);
    // Count what the server delivers, never drop client side.
    natsSubscription_SetPendingLimits(raw, -1, -1);
    natsConnection_Flush(subcs.back().get());
  }

  const int npub = std::max(1, cfg.publishers);
  std::vector<nc_ptr> pubs;
  for (int i = 0; i < npub; ++i) {
    pubs.push_back(open_conn(cfg, false, r.error));
    if (!pubs.back()) return r;
  }
  const int64_t cap_ns = static_cast<int64_t>(cfg.duration_s * 1e9);

  // Warmup through the full path, then wait (bounded) until it has all arrived.
  if (cfg.warmup > 0) {
    std::string err;
    const uint64_t w = publish_burst(pubs[0].get(), subject, cfg.size, cfg.warmup, 'W', now_ns() + cap_ns, err);
    if (!err.empty()) return r.error = err, r;
    if (!sink.wait_until(now_ns() + 10'000'000'000, [&] { return sink.warm >= w * nsub; }))
      return r.error = "warmup messages did not all arrive", r;
  }

  prog.total = cfg.count;
  std::vector<uint64_t> sent(static_cast<size_t>(npub), 0);
  std::vector<std::string> errs(static_cast<size_t>(npub));
  const int64_t start = now_ns();
  const int64_t deadline = start + cap_ns;
  std::vector<std::thread> threads;
  for (int i = 0; i < npub; ++i) {
    const uint64_t share = cfg.count / static_cast<uint64_t>(npub) +
                           (static_cast<uint64_t>(i) < cfg.count % static_cast<uint64_t>(npub) ? 1 : 0);
    threads.emplace_back([&, i, share] {
      const auto k = static_cast<size_t>(i);
      sent[k] = publish_burst(pubs[k].get(), subject, cfg.size, share, 'M', deadline, errs[k]);
    });
  }
  for (auto& t : threads) t.join();
  for (uint64_t v : sent) r.sent += v;
  for (const auto& e : errs)
    if (!e.empty() && r.error.empty()) r.error = e;

  // Everything published must arrive; allow a short grace after the cap for in-flight data.
  const bool all = sink.wait_until(std::max(deadline, now_ns()) + 5'000'000'000,
                                   [&] { return sink.measured >= r.sent * nsub; });
  std::lock_guard lock(sink.mu);
  r.received = sink.measured;
  if (!all && r.error.empty())
    r.error = "only " + std::to_string(r.received) + " of " + std::to_string(r.sent * nsub) + " messages arrived";
  r.elapsed_s = seconds_between(start, sink.last_ns > start ? sink.last_ns : now_ns());
  r.samples_ns = std::move(sink.samples);
  sink.samples.clear();
  return r;
}

}  // namespace peregrine::bench
