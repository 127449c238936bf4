#pragma once
// One shard's event loop: `poll(now) -> work_done` over registered pollers, with an
// adaptive idle strategy (spin for spin_ns after the last work, then block) or busy mode.
// Other threads wake a blocked loop through its doorbell only when it is asleep.
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "src/base/clock.h"
#include "src/shard/spin_governor.h"
#include "src/shard/wake_predictor.h"

namespace shard {

class poller {
 public:
  virtual ~poller() = default;
  // Does up to a bounded amount of work; returns how much was done (0 = idle).
  virtual std::size_t poll(base::nanos now) = 0;
  // How long the loop may block when idle before this poller has timed work due (ns);
  // 0 = no limit of its own (the loop's max_block applies).
  virtual base::nanos idle_limit(base::nanos now) {
    (void)now;
    return 0;
  }
};

// What a loop blocks on when idle. The transport usually provides it (epoll_wait or an
// io_uring wait) so that network events, the doorbell and timeouts all end the block.
class waiter {
 public:
  virtual ~waiter() = default;
  // Blocks until an event, a doorbell ring (`doorbell_fd` readable) or the timeout.
  virtual void wait(base::nanos timeout, int doorbell_fd) = 0;
  // Also ends a block when `fd` (an eventfd, e.g. a storage ring's completion signal) turns
  // readable; the waiter drains it. False if this waiter cannot watch fds.
  virtual bool watch_fd(int /*fd*/) { return false; }
  // True if the wait consumes the doorbell's count itself (an armed read), so the loop need
  // not drain it after every block.
  virtual bool drains_doorbell() const { return false; }
};

enum class poll_mode { adaptive, busy };

struct loop_config {
  poll_mode mode = poll_mode::adaptive;
  base::nanos spin_ns = 50 * base::kMicro;
  base::nanos max_block_ns = 100 * base::kMilli;  // bounds a block so periodic work runs
  // Adaptive mode: learn periodic arrivals and wake up just before the next one (see
  // wake_predictor.h); no effect on a loop without traffic.
  bool predict_arrivals = true;
  // Adaptive mode: no spinning while this thread waits about as long for a core as it runs
  // (an oversubscribed host, see spin_governor.h). Reads /proc/thread-self/schedstat unless
  // set_sched_reader gave another source.
  bool govern_spin = false;
};

class loop {
 public:
  explicit loop(loop_config cfg, const base::clock& clk = base::system_clock::instance());
  ~loop();
  loop(const loop&) = delete;
  loop& operator=(const loop&) = delete;

  void add_poller(poller* p) { _pollers.push_back(p); }
  void set_waiter(waiter* w) { _waiter = w; }
  // Called once per turn after the pollers (e.g. to flush batched sends).
  void set_end_of_turn(std::function<std::size_t(base::nanos)> fn) { _end_of_turn = std::move(fn); }
  // The thread's cumulative run time and run-queue wait (ns) for govern_spin; false: no reading.
  using sched_reader = std::function<bool(base::nanos& run, base::nanos& wait)>;
  void set_sched_reader(sched_reader r) { _sched_reader = std::move(r); }

  // One turn over every poller; returns the work done.
  std::size_t run_once();
  // Runs until stop(); blocks per the idle strategy.
  void run();
  void stop();
  bool stopping() const { return _stop.load(std::memory_order_acquire); }

  // Thread-safe: wakes the loop if it is blocked (cheap no-op while it is spinning).
  void wake();
  int doorbell_fd() const { return _doorbell; }
  // Drains the doorbell counter (called by waiters after it fired).
  void clear_doorbell();
  // True while the loop is (about to be) blocked; producers check it before ringing.
  bool sleeping() const { return _sleeping.load(std::memory_order_seq_cst); }

  const base::clock& clk() const { return _clk; }
  std::uint64_t blocks() const { return _blocks; }
  // Blocks that ended on a planned wake-up for a predicted arrival, and of those how many
  // saw the arrival inside the spin window.
  std::uint64_t planned_wakes() const { return _planned_wakes; }
  std::uint64_t predicted_hits() const { return _predicted_hits; }
  // Whether the governor lets the loop spin now, and how often it stopped it.
  bool spin_allowed() const { return _governor.spin_allowed(); }
  std::uint64_t spin_stops() const { return _governor.turned_off(); }

 private:
  loop_config _cfg;
  const base::clock& _clk;
  std::vector<poller*> _pollers;
  waiter* _waiter = nullptr;
  std::function<std::size_t(base::nanos)> _end_of_turn;
  int _doorbell = -1;
  std::atomic<bool> _sleeping{false};
  std::atomic<bool> _stop{false};
  std::uint64_t _blocks = 0;
  std::uint64_t _planned_wakes = 0;
  std::uint64_t _predicted_hits = 0;
  wake_predictor _predictor;
  spin_governor _governor;
  sched_reader _sched_reader;
};

}  // namespace shard
