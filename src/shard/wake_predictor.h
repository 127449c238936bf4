#pragma once
// Learns a periodic arrival pattern (a paced publisher, a peer on a timer) from the work an
// idle loop is woken for, so the loop can wake itself shortly before the next expected
// arrival and be spinning when it lands. A wake-up from a blocked wait costs tens of µs on a
// VM whose idle vCPU halts (more than the work of a publish); a timed wake-up pays the same,
// but ahead of the message. Pure: times come in as arguments.
#include <array>
#include <cstddef>

#include "src/base/clock.h"

namespace shard {

struct wake_predictor_config {
  base::nanos min_period = 200 * base::kMicro;  // faster traffic: the after-work spin covers it
  base::nanos max_period = 20 * base::kMilli;   // slower: not worth a wake-up of its own
  base::nanos margin = 40 * base::kMicro;       // spun before the earliest and after the latest
  // The window (margin, spread of the periods, wake-up latency) stays under this share of a
  // period, so a predicted pattern costs at most ~25% of a core while it lasts.
  double max_duty = 0.25;
};

class wake_predictor {
 public:
  static constexpr std::size_t kHistory = 8;  // periods remembered
  static constexpr std::size_t kMinPeriods = 4;  // consecutive periods needed to predict

  explicit wake_predictor(wake_predictor_config cfg = {}) : _cfg(cfg) {}

  // Work from outside arrived at `at` (best estimate) after the loop had been idle.
  void on_arrival(base::nanos at);
  // A timed wake-up planned for `planned` returned at `actual`: learns the wake-up latency.
  void on_timed_wake(base::nanos planned, base::nanos actual);
  // The expected window passed without an arrival: the pattern is forgotten.
  void on_miss();

  // Where the next arrival is expected: block until `wake_at` (the wake-up latency is taken
  // off already), then spin until `spin_until`. Invalid when there is no periodic pattern.
  struct window {
    base::nanos wake_at = 0;
    base::nanos spin_until = 0;
    bool valid() const { return spin_until > 0; }
  };
  window next() const;

  base::nanos wake_latency() const { return _latency; }
  std::size_t periods() const { return _count; }

 private:
  wake_predictor_config _cfg;
  std::array<base::nanos, kHistory> _periods{};
  std::size_t _count = 0;  // valid entries in _periods
  std::size_t _next = 0;   // ring position
  base::nanos _last = -1;  // last arrival; -1 = none
  base::nanos _latency = 30 * base::kMicro;  // moving estimate of a timed wake-up's lateness
};

}  // namespace shard
