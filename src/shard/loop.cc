#include "src/shard/loop.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include <immintrin.h>

#include "src/base/assert.h"

namespace shard {
namespace {
// Used when no transport supplies a waiter: block on the doorbell alone.
void poll_doorbell(base::nanos timeout, int fd) {
  pollfd p{fd, POLLIN, 0};
  ::poll(&p, 1, int(timeout / base::kMilli) + 1);
}

// The calling thread's schedstat: "<run ns> <run-queue wait ns> <slices>". Opened by the
// thread itself (thread-self), kept open, read with pread. Empty when the kernel has none.
loop::sched_reader thread_schedstat_reader() {
  const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  };
  auto file = std::make_shared<closer>();
  file->fd = fd;
  return [file](base::nanos& run, base::nanos& wait) {
    char buf[96];
    const ssize_t n = ::pread(file->fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = '\0';
    unsigned long long r = 0, w = 0;
    if (std::sscanf(buf, "%llu %llu", &r, &w) != 2) return false;
    run = base::nanos(r);
    wait = base::nanos(w);
    return true;
  };
}
}  // namespace

loop::loop(loop_config cfg, const base::clock& clk) : _cfg(cfg), _clk(clk) {
  _doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  PG_ASSERT(_doorbell >= 0);
}

loop::~loop() {
  if (_doorbell >= 0) ::close(_doorbell);
}

std::size_t loop::run_once() {
  const base::nanos now = _clk.monotonic_ns();
  std::size_t work = 0;
  for (poller* p : _pollers) work += p->poll(now);
  if (_end_of_turn) work += _end_of_turn(now);
  return work;
}

void loop::run() {
  // Work seen this long after the previous work counts as an arrival for the predictor (a
  // request's own follow-up turns come sooner).
  constexpr base::nanos kQuietNs = 20 * base::kMicro;
  const bool predict = _cfg.mode == poll_mode::adaptive && _cfg.predict_arrivals;
  base::nanos last_work = _clk.monotonic_ns();
  base::nanos woke_early_at = -1;  // the last block ended before its timeout: work from outside
  base::nanos window_end = 0;      // spinning for a predicted arrival until then (0 = not)
  auto found_work = [&](base::nanos t) {
    if (predict) {
      if (woke_early_at >= 0) {
        _predictor.on_arrival(woke_early_at - _predictor.wake_latency());
      } else if (window_end || t - last_work >= kQuietNs) {
        _predictor.on_arrival(t);
        if (window_end) ++_predicted_hits;
      }
    }
    woke_early_at = -1;
    window_end = 0;
    last_work = _clk.monotonic_ns();
  };
  const bool govern = _cfg.mode == poll_mode::adaptive && _cfg.govern_spin;
  if (govern && !_sched_reader) _sched_reader = thread_schedstat_reader();
  bool idle = false;   // an idle episode (turns without work since the last work) is under way
  bool spin_it = true;  // and the governor let it spin
  while (!stopping()) {
    if (const base::nanos t = _clk.monotonic_ns(); run_once() > 0) {
      if (idle && spin_it && govern) _governor.on_spin_end(true);
      idle = false;
      found_work(t);
      continue;
    }
    woke_early_at = -1;
    const base::nanos now = _clk.monotonic_ns();
    if (govern && _sched_reader && _governor.due(now)) {
      base::nanos run = 0, wait = 0;
      if (_sched_reader(run, wait)) _governor.on_sample(now, run, wait);
      else _sched_reader = {};  // no readings here: spin as configured
    }
    if (!idle) {
      idle = true;
      spin_it = !govern || _governor.spin_now();
    }
    if (_cfg.mode == poll_mode::busy || (spin_it && (now - last_work < _cfg.spin_ns || now < window_end))) {
      _mm_pause();
      continue;
    }
    if (spin_it && govern) _governor.on_spin_end(false);
    idle = false;
    const bool may_spin = _governor.spin_allowed();
    if (window_end) {  // the predicted arrival did not come
      _predictor.on_miss();
      window_end = 0;
    }
    // Announce sleep, then look once more so a producer that pushed before seeing the flag
    // is not missed; only then block.
    _sleeping.store(true, std::memory_order_seq_cst);
    if (run_once() > 0 || stopping()) {
      _sleeping.store(false, std::memory_order_relaxed);
      found_work(now);
      continue;
    }
    base::nanos block = _cfg.max_block_ns;
    for (poller* p : _pollers)
      if (const base::nanos l = p->idle_limit(now); l > 0 && l < block) block = l;
    // A predicted arrival: wake up in time to be spinning when it lands.
    const wake_predictor::window w = predict && may_spin ? _predictor.next() : wake_predictor::window{};
    bool planned = false;
    if (w.valid() && w.spin_until > now) {
      if (w.wake_at <= now) {
        _sleeping.store(false, std::memory_order_seq_cst);
        window_end = w.spin_until;
        continue;
      }
      if (w.wake_at - now < block) {
        block = w.wake_at - now;
        planned = true;
      }
    }
    ++_blocks;
    if (_waiter) {
      _waiter->wait(block, _doorbell);
    } else {
      poll_doorbell(block, _doorbell);
    }
    _sleeping.store(false, std::memory_order_seq_cst);
    if (!_waiter || !_waiter->drains_doorbell()) clear_doorbell();
    const base::nanos woke = _clk.monotonic_ns();
    if (woke < now + block) {
      woke_early_at = woke;
    } else if (planned) {
      ++_planned_wakes;
      _predictor.on_timed_wake(now + block, woke);
      window_end = w.spin_until;
    }
    last_work = woke;  // spin again after a wake-up: more work usually follows
  }
}

void loop::stop() {
  _stop.store(true, std::memory_order_release);
  std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(_doorbell, &one, sizeof one);
}

void loop::wake() {
  if (!_sleeping.load(std::memory_order_seq_cst)) return;
  std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(_doorbell, &one, sizeof one);
}

void loop::clear_doorbell() {
  std::uint64_t v;
  [[maybe_unused]] auto r = ::read(_doorbell, &v, sizeof v);
}

}  // namespace shard
