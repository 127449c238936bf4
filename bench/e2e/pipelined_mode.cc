// pubsub-pipelined: the open loop of messaging benchmarks (OpenMessaging style). The publisher
// sends on its schedule and never waits for the subscriber; each message carries its intended
// and actual send times, and the subscriber records corrected (receive - intended),
// uncorrected (receive - actual) latency and the send delay. A stalled server therefore shows
// in both corrected and uncorrected figures here (nothing waits on it); the send delay shows
// when the publisher itself was held up (a full socket buffer, a starved client).
#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/e2e/client.h"
#include "bench/e2e/modes.h"
#include "bench/e2e/paced.h"

namespace peregrine::bench {
namespace {

// Payload: [0..8) intended send time, [8..16) actual send time (steady clock ns, host order:
// the same process reads them); 0 intended = warm-up.
void put(std::vector<char>& b, size_t at, int64_t v) { std::memcpy(b.data() + at, &v, sizeof v); }
int64_t get(const char* d, size_t at) {
  int64_t v = 0;
  std::memcpy(&v, d + at, sizeof v);
  return v;
}

}  // namespace

result run_pubsub_pipelined(const config& cfg, progress& prog) {
  result r;
  r.paced = true;
  if (cfg.closed) return r.error = "pubsub-pipelined is open loop only (use --mode latency --closed)", r;
  const std::string subject = cfg.subject + ".pipe";
  auto pub = open_conn(cfg, true, r.error);
  if (!pub) return r;
  sync_sub rx = open_sync_sub(cfg, subject, r.error);
  if (!rx.sub) return r;
  natsSubscription_SetPendingLimits(rx.sub.get(), -1, -1);
  std::vector<char> buf(std::max<size_t>(cfg.size, 16), 'x');

  // Warm-up: unmeasured, each waited for.
  for (uint64_t i = 0; i < cfg.warmup; ++i) {
    put(buf, 0, 0);
    natsStatus s = natsConnection_Publish(pub.get(), subject.c_str(), buf.data(), static_cast<int>(buf.size()));
    natsMsg* m = nullptr;
    if (s == NATS_OK) s = natsSubscription_NextMsg(&m, rx.sub.get(), 5000);
    if (s != NATS_OK) return r.error = err_text("warm-up", s), r;
    natsMsg_Destroy(m);
  }

  interval_series& series = prog.series;
  const int64_t period = static_cast<int64_t>(1e9 / cfg.rate);
  const int64_t start = now_ns() + 1'000'000;
  const int64_t end = start + static_cast<int64_t>(cfg.duration_s * 1e9);
  const uint64_t scheduled =
      std::min<uint64_t>(cfg.count, static_cast<uint64_t>((end - start + period - 1) / period));
  prog.total = scheduled;
  series.start(start, static_cast<int64_t>(cfg.interval_s * 1e9));
  prog.has_series = true;

  std::atomic<uint64_t> sent{0};
  std::atomic<bool> publishing{true};
  std::string pub_err;
  std::thread publisher([&] {
    uint64_t i = 0;
    for (; i < scheduled; ++i) {
      const int64_t intended = start + static_cast<int64_t>(i) * period;
      if (now_ns() >= end) break;
      wait_until(intended);
      put(buf, 0, intended);
      put(buf, 8, now_ns());
      const natsStatus s = natsConnection_Publish(pub.get(), subject.c_str(), buf.data(), static_cast<int>(buf.size()));
      if (s != NATS_OK) {
        pub_err = err_text("publish", s);
        break;
      }
      sent.store(i + 1, std::memory_order_release);
    }
    natsConnection_FlushTimeout(pub.get(), 5000);
    r.missed_sends = scheduled - i;
    publishing = false;
  });

  // Subscriber on this thread: until every sent message arrived (5 s grace after the last).
  uint64_t received = 0;
  int64_t last_progress = now_ns();
  while (publishing || received < sent.load(std::memory_order_acquire)) {
    natsMsg* m = nullptr;
    const natsStatus s = natsSubscription_NextMsg(&m, rx.sub.get(), 100);
    const int64_t t = now_ns();
    if (s == NATS_TIMEOUT) {
      if (!publishing && t - last_progress > 5'000'000'000) break;
      continue;
    }
    if (s != NATS_OK) {
      r.error = err_text("receive", s);
      break;
    }
    last_progress = t;
    const char* d = natsMsg_GetData(m);
    const int64_t intended = natsMsg_GetDataLength(m) >= 16 ? get(d, 0) : 0;
    if (intended != 0) {
      r.lat.record(intended, get(d, 8), t);
      series.record(t, t - intended);
      ++received;
      ++prog.done;
    }
    natsMsg_Destroy(m);
  }
  publisher.join();
  const int64_t finished = now_ns();
  r.sent = sent.load();
  r.received = received;
  if (r.error.empty()) r.error = pub_err;
  if (r.error.empty() && received < r.sent)
    r.error = "only " + std::to_string(received) + " of " + std::to_string(r.sent) + " messages arrived";
  r.elapsed_s = static_cast<double>(finished - start) / 1e9;
  r.series = series.finish(finished);
  return r;
}

}  // namespace peregrine::bench
