// The latency modes (latency, rr, js-mem, js-file) on one driver. Each publisher has one
// message in flight. Open loop (default): publisher k sends its i-th message at the intended
// time start + (i + k / publishers) / rate, sleeping only when ahead of schedule; when a reply
// is late the next sends are late too, and that lateness is the send delay. Latency is
// recorded from the intended time (corrected for coordinated omission) and from the actual
// send (uncorrected), as wrk2 does. Closed (--closed): intended == actual send.
#include <nats/nats.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "bench/e2e/client.h"
#include "bench/e2e/paced.h"

namespace peregrine::bench {

// Sub-millisecond precision without burning a core for low rates.
void wait_until(int64_t t_ns) {
  for (int64_t left = t_ns - now_ns(); left > 0; left = t_ns - now_ns()) {
    if (left > 200'000)
      std::this_thread::sleep_for(std::chrono::nanoseconds(left - 100'000));
    else
      std::this_thread::yield();
  }
}

result run_paced(const config& cfg, progress& prog, int publishers, const round_trip& one) {
  result r;
  r.paced = true;
  // Warm-up, unmeasured and unpaced, spread over the publishers.
  for (uint64_t i = 0; i < cfg.warmup; ++i)
    if (std::string e = one(static_cast<int>(i % static_cast<uint64_t>(publishers))); !e.empty())
      return r.error = "warm-up: " + e, r;

  interval_series& series = prog.series;
  // Open loop: --duration at --rate bounds the run as much as --count does.
  prog.total = cfg.closed ? cfg.count
                          : std::min<uint64_t>(cfg.count, static_cast<uint64_t>(std::ceil(cfg.rate * cfg.duration_s)) *
                                                              static_cast<uint64_t>(publishers));
  const int64_t period_ns = cfg.closed ? 0 : static_cast<int64_t>(1e9 / cfg.rate);
  const int64_t start = now_ns() + 1'000'000;  // every thread starts on the same schedule
  const int64_t end = start + static_cast<int64_t>(cfg.duration_s * 1e9);
  series.start(start, static_cast<int64_t>(cfg.interval_s * 1e9));
  prog.has_series = true;

  std::vector<latency_set> sets(static_cast<size_t>(publishers));
  std::vector<uint64_t> done(static_cast<size_t>(publishers), 0);
  std::vector<uint64_t> missed(static_cast<size_t>(publishers), 0);
  std::vector<std::string> errs(static_cast<size_t>(publishers));
  std::vector<std::thread> threads;
  for (int k = 0; k < publishers; ++k) {
    const uint64_t share = cfg.count / static_cast<uint64_t>(publishers) +
                           (static_cast<uint64_t>(k) < cfg.count % static_cast<uint64_t>(publishers) ? 1 : 0);
    threads.emplace_back([&, k, share] {
      const auto kk = static_cast<size_t>(k);
      const int64_t offset = period_ns * k / publishers;
      wait_until(start);
      // Open loop: the sends scheduled inside --duration; those still unsent at its end count
      // as missed (reported, never silently dropped).
      const uint64_t scheduled =
          cfg.closed ? share
                     : std::min<uint64_t>(share, static_cast<uint64_t>((end - start - offset + period_ns - 1) / period_ns));
      uint64_t i = 0;
      for (; i < share; ++i) {
        int64_t intended = start + offset + static_cast<int64_t>(i) * period_ns;
        if (cfg.closed) intended = now_ns();
        if (intended >= end || (!cfg.closed && now_ns() >= end)) break;
        wait_until(intended);
        const int64_t sent = now_ns();
        if (sent >= end && cfg.closed) break;
        if (std::string e = one(k); !e.empty()) {
          errs[kk] = std::move(e);
          break;
        }
        const int64_t t = now_ns();
        sets[kk].record(intended, sent, t);
        series.record(t, t - intended);
        ++done[kk];
        ++prog.done;
      }
      missed[kk] = scheduled > i ? scheduled - i : 0;
    });
  }
  for (auto& t : threads) t.join();
  const int64_t finished = now_ns();
  for (int k = 0; k < publishers; ++k) {
    const auto kk = static_cast<size_t>(k);
    r.lat.merge(sets[kk]);
    r.received += done[kk];
    r.missed_sends += missed[kk];
    if (r.error.empty() && !errs[kk].empty()) r.error = errs[kk];
  }
  r.sent = r.received;
  r.elapsed_s = static_cast<double>(finished - start) / 1e9;
  r.series = series.finish(finished);
  return r;
}

result run_latency(const config& cfg, progress& prog) {
  result r;
  const int n = std::max(1, cfg.publishers);
  // Publisher k publishes on <subject>.lat.<k> and waits for it on its own subscriber connection.
  std::vector<nc_ptr> pubs;
  std::vector<sync_sub> subs;
  std::vector<std::string> subjects;
  for (int k = 0; k < n; ++k) {
    subjects.push_back(cfg.subject + ".lat." + std::to_string(k));
    pubs.push_back(open_conn(cfg, true, r.error));
    if (!pubs.back()) return r;
    subs.push_back(open_sync_sub(cfg, subjects.back(), r.error));
    if (!subs.back().sub) return r;
  }
  std::vector<std::vector<char>> bufs(static_cast<size_t>(n), std::vector<char>(cfg.size, 'x'));
  return run_paced(cfg, prog, n, [&](int k) -> std::string {
    const auto kk = static_cast<size_t>(k);
    natsStatus s = natsConnection_Publish(pubs[kk].get(), subjects[kk].c_str(), bufs[kk].data(),
                                          static_cast<int>(bufs[kk].size()));
    if (s != NATS_OK) return err_text("publish", s);
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, subs[kk].sub.get(), 5000);
    if (s != NATS_OK) return err_text("waiting for message", s);
    natsMsg_Destroy(m);
    return {};
  });
}

result run_request_reply(const config& cfg, progress& prog) {
  result r;
  const int n = std::max(1, cfg.publishers);
  const std::string subject = cfg.subject + ".rr";
  sync_sub rx = open_sync_sub(cfg, subject, r.error);
  if (!rx.sub) return r;
  std::vector<nc_ptr> requesters;
  for (int k = 0; k < n; ++k) {
    requesters.push_back(open_conn(cfg, true, r.error));
    if (!requesters.back()) return r;
  }
  // Echo responder on its own thread and connection, polling so it notices the stop flag.
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      natsMsg* m = nullptr;
      if (natsSubscription_NextMsg(&m, rx.sub.get(), 100) != NATS_OK) continue;
      if (const char* reply = natsMsg_GetReply(m); reply != nullptr)
        natsConnection_Publish(rx.nc.get(), reply, natsMsg_GetData(m), natsMsg_GetDataLength(m));
      natsMsg_Destroy(m);
    }
  });
  const std::string payload(cfg.size, 'x');
  r = run_paced(cfg, prog, n, [&](int k) -> std::string {
    natsMsg* reply = nullptr;
    const natsStatus s = natsConnection_Request(&reply, requesters[static_cast<size_t>(k)].get(), subject.c_str(),
                                                payload.data(), static_cast<int>(payload.size()), 5000);
    if (s != NATS_OK) return err_text("request", s);
    natsMsg_Destroy(reply);
    return {};
  });
  stop = true;
  echo.join();
  return r;
}

result run_js_publish(const config& cfg, progress& prog, bool file) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".js";
  r.error = open_stream(cfg, file, 1, s, subject, file ? "FILE" : "MEM");
  if (!r.error.empty()) return r;
  const int n = std::max(1, cfg.publishers);
  // Publisher 0 uses the session's connection; the others get their own.
  std::vector<nc_ptr> extra;
  std::vector<js_ptr> ctxs;
  for (int k = 1; k < n; ++k) {
    extra.push_back(open_conn_to(cfg, s.url, true, r.error));
    if (!extra.back()) return r;
    jsCtx* js = nullptr;
    if (natsConnection_JetStream(&js, extra.back().get(), nullptr) != NATS_OK) return r.error = "no JetStream context", r;
    ctxs.emplace_back(js);
  }
  const std::string subj = subject + ".x";
  const std::string payload(cfg.size, 'p');
  return run_paced(cfg, prog, n, [&](int k) -> std::string {
    jsCtx* js = k == 0 ? s.js.get() : ctxs[static_cast<size_t>(k - 1)].get();
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus st =
        js_Publish(&ack, js, subj.c_str(), payload.data(), static_cast<int>(payload.size()), nullptr, &jerr);
    if (ack) jsPubAck_Destroy(ack);
    if (st != NATS_OK) return err_text("publish", st);
    return {};
  });
}

}  // namespace peregrine::bench
