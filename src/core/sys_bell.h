#pragma once
// Wakes the system account's worker (system_account.cc) when what it reports on changed, so it
// sleeps while nothing does: shard 0 rings on every change of the system account's
// subscriptions, any shard on a client connecting or leaving while CONNS events are wanted
// (one relaxed load otherwise). The worker reads the generations to learn what changed.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace core {

class sys_bell {
 public:
  void interest_changed() {
    _interest_gen.fetch_add(1, std::memory_order_relaxed);
    ring();
  }
  void connections_changed() {
    if (!_conns_wanted.load(std::memory_order_relaxed)) return;
    _conns_gen.fetch_add(1, std::memory_order_relaxed);
    ring();
  }
  void want_connections(bool on) { _conns_wanted.store(on, std::memory_order_relaxed); }
  std::uint64_t interest_gen() const { return _interest_gen.load(std::memory_order_relaxed); }
  std::uint64_t conns_gen() const { return _conns_gen.load(std::memory_order_relaxed); }

  // Anything for the worker (a queued request, a stop).
  void ring() {
    {
      std::lock_guard lk(_mu);
      ++_rings;
    }
    _cv.notify_all();
  }
  std::uint64_t rings() const {
    std::lock_guard lk(_mu);
    return _rings;
  }
  // Until a ring after `seen` (read before looking at what there is to do).
  void wait(std::uint64_t seen) {
    std::unique_lock lk(_mu);
    _cv.wait(lk, [&] { return _rings != seen; });
  }
  // The same, or until the deadline.
  template <class Clock, class Duration>
  void wait(std::uint64_t seen, std::chrono::time_point<Clock, Duration> deadline) {
    std::unique_lock lk(_mu);
    _cv.wait_until(lk, deadline, [&] { return _rings != seen; });
  }

 private:
  std::atomic<std::uint64_t> _interest_gen{0}, _conns_gen{0};
  std::atomic<bool> _conns_wanted{true};  // until the worker knows who listens
  mutable std::mutex _mu;
  std::condition_variable _cv;
  std::uint64_t _rings = 0;
};

}  // namespace core
