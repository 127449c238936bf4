// What a latency mode records: per-thread histograms of corrected latency (from the intended
// send time), uncorrected latency (from the actual send) and send delay (actual - intended),
// merged after the run, plus one shared per-interval time series.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "bench/e2e/histogram.h"

namespace peregrine::bench {

struct latency_set {
  log_histogram corrected;
  log_histogram uncorrected;
  log_histogram send_delay;

  void record(int64_t intended_ns, int64_t sent_ns, int64_t done_ns) {
    corrected.record(done_ns - intended_ns);
    uncorrected.record(done_ns - sent_ns);
    send_delay.record(sent_ns - intended_ns);
  }
  void merge(const latency_set& o) {
    corrected.merge(o.corrected);
    uncorrected.merge(o.uncorrected);
    send_delay.merge(o.send_delay);
  }
};

struct series_point {
  double t_s = 0;  // end of the interval, seconds since the measured phase began
  uint64_t count = 0;
  double rate = 0;  // completions per second in the interval
  int64_t p50_ns = 0;
  int64_t p99_ns = 0;
  int64_t max_ns = 0;
};

// Per-interval time series of (corrected) latency by completion time. Thread-safe; one
// histogram for the current interval, closed into a point when time moves past it.
class interval_series {
 public:
  void start(int64_t start_ns, int64_t interval_ns) {
    std::lock_guard lock(mu_);
    start_ns_ = start_ns;
    interval_ns_ = interval_ns > 0 ? interval_ns : 1'000'000'000;
    current_ = 0;
    points_.clear();
    hist_.reset();
  }
  void record(int64_t done_ns, int64_t latency_ns) {
    std::lock_guard lock(mu_);
    advance(done_ns);
    hist_.record(latency_ns);
  }
  // Closes the interval in progress (partial) and returns every point.
  std::vector<series_point> finish(int64_t end_ns) {
    std::lock_guard lock(mu_);
    advance(end_ns);
    if (hist_.count() > 0) close_point(static_cast<double>(end_ns - start_ns_) / 1e9);
    return points_;
  }
  // The last closed interval (for the progress line); count 0 before the first one.
  series_point last() {
    std::lock_guard lock(mu_);
    return points_.empty() ? series_point{} : points_.back();
  }

 private:
  void advance(int64_t now_ns) {
    const int64_t idx = now_ns > start_ns_ ? (now_ns - start_ns_) / interval_ns_ : 0;
    while (current_ < idx) {
      ++current_;
      close_point(static_cast<double>(current_ * interval_ns_) / 1e9);
    }
  }
  void close_point(double t_s) {
    series_point p;
    const double prev = points_.empty() ? 0 : points_.back().t_s;
    p.t_s = t_s;
    p.count = hist_.count();
    p.rate = t_s > prev ? static_cast<double>(p.count) / (t_s - prev) : 0;
    p.p50_ns = hist_.percentile(0.5);
    p.p99_ns = hist_.percentile(0.99);
    p.max_ns = hist_.max();
    points_.push_back(p);
    hist_.reset();
  }

  std::mutex mu_;
  int64_t start_ns_ = 0;
  int64_t interval_ns_ = 1'000'000'000;
  int64_t current_ = 0;
  log_histogram hist_;
  std::vector<series_point> points_;
};

}  // namespace peregrine::bench
