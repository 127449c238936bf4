#include "src/shard/loop.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <immintrin.h>

#include "src/base/assert.h"

namespace shard {
namespace {
// Used when no transport supplies a waiter: block on the doorbell alone.
void poll_doorbell(base::nanos timeout, int fd) {
  pollfd p{fd, POLLIN, 0};
  ::poll(&p, 1, int(timeout / base::kMilli) + 1);
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
  base::nanos last_work = _clk.monotonic_ns();
  while (!stopping()) {
    if (run_once() > 0) {
      last_work = _clk.monotonic_ns();
      continue;
    }
    const base::nanos now = _clk.monotonic_ns();
    if (_cfg.mode == poll_mode::busy || now - last_work < _cfg.spin_ns) {
      _mm_pause();
      continue;
    }
    // Announce sleep, then look once more so a producer that pushed before seeing the flag
    // is not missed; only then block.
    _sleeping.store(true, std::memory_order_seq_cst);
    if (run_once() > 0 || stopping()) {
      _sleeping.store(false, std::memory_order_relaxed);
      last_work = _clk.monotonic_ns();
      continue;
    }
    ++_blocks;
    base::nanos block = _cfg.max_block_ns;
    for (poller* p : _pollers)
      if (const base::nanos l = p->idle_limit(now); l > 0 && l < block) block = l;
    if (_waiter) {
      _waiter->wait(block, _doorbell);
    } else {
      poll_doorbell(block, _doorbell);
    }
    _sleeping.store(false, std::memory_order_seq_cst);
    clear_doorbell();
    last_work = _clk.monotonic_ns();  // spin again after a wake-up: more work usually follows
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
