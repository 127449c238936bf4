#pragma once
// Whether an idle loop may spin. Spinning after work saves the wake-up of the next arrival
// (tens of µs on a VM) when that arrival comes within the spin window; a spin that ends
// without work only burned the core. On an oversubscribed host (three servers of a cluster
// on two vCPUs, say) that core was one the thread we wait for needed, so every hop of a
// replicated publish got slower. Spinning therefore stops when both hold over a window:
// - the thread waits for a core about as long as it runs (its run-queue wait against its run
//   time, from Linux schedstat): there is no core to spare;
// - most spins end without work: they buy nothing.
// A single server beside its clients keeps spinning (its spins find work, or its wait is
// small); a cluster member whose next event is a network round trip away stops. While
// stopped, one idle episode in kProbeEvery still spins, to see whether spins pay again.
// Pure: readings, times and outcomes come in as arguments.
#include <cstdint>

#include "src/base/clock.h"

namespace shard {

struct spin_governor_config {
  base::nanos window = 100 * base::kMilli;  // readings compared this far apart
  base::nanos min_run = base::kMilli;       // less run time in a window says nothing
  double off_ratio = 0.15;                  // wait/run above this (and spins missing): stop
  double on_ratio = 0.05;                   // below this: spin again
  double min_hit_rate = 0.5;                // spins finding work at least this often pay
  std::uint32_t min_spins = 8;              // fewer spins in a window say nothing of the rate
};

class spin_governor {
 public:
  static constexpr std::uint32_t kProbeEvery = 8;

  explicit spin_governor(spin_governor_config cfg = {}) : _cfg(cfg) {}

  // An idle episode starts: spin it? (Allowed, or a probe while stopped.)
  bool spin_now();
  // A spin ended: with work found inside the window, or not.
  void on_spin_end(bool found_work);
  // A reading of the thread's cumulative run time and run-queue wait at `now`.
  void on_sample(base::nanos now, base::nanos run, base::nanos wait);
  bool due(base::nanos now) const { return now >= _next; }
  bool spin_allowed() const { return _allowed; }
  std::uint64_t turned_off() const { return _turned_off; }

 private:
  spin_governor_config _cfg;
  bool _allowed = true;
  bool _have = false;  // a reading to compare with
  base::nanos _next = 0, _run = 0, _wait = 0;
  std::uint32_t _hits = 0, _spins = 0;  // since the last verdict
  std::uint32_t _episodes = 0;          // idle episodes while stopped (for the probes)
  std::uint64_t _turned_off = 0;
};

}  // namespace shard
