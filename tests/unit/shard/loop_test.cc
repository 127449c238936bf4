// shard::loop: turns, stop, the doorbell and the adaptive idle strategy. Time comes from a
// manual clock and blocking goes through a fake waiter, so nothing here depends on how
// fast the machine is; the few cross-thread checks only use generous bounds (5 s).
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "src/base/clock.h"
#include "src/shard/loop.h"

namespace {

using base::nanos;
using namespace std::chrono_literals;

struct fn_poller : shard::poller {
  std::function<std::size_t(nanos)> fn;
  std::size_t calls = 0;
  std::size_t poll(nanos now) override {
    ++calls;
    return fn ? fn(now) : 0;
  }
};

// Records every wait; `on_wait` decides what the wait does (return at once, block, stop).
struct fake_waiter : shard::waiter {
  struct call {
    nanos timeout;
    int fd;
  };
  std::vector<call> calls;
  std::function<void(nanos, int)> on_wait;
  void wait(nanos timeout, int fd) override {
    calls.push_back({timeout, fd});
    if (on_wait) on_wait(timeout, fd);
  }
};

bool readable(int fd, int timeout_ms = 0) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

// Polls a condition (never sleeps for a fixed time) until it holds or the bound passes.
template <typename Pred>
bool eventually(Pred pred, std::chrono::seconds bound = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Runs loop::run() on its own thread; always stops and joins on scope exit.
class loop_thread {
 public:
  explicit loop_thread(shard::loop& l) : _l(l), _t([this] {
    _l.run();
    _done.store(true);
  }) {}
  ~loop_thread() {
    _l.stop();
    _t.join();
  }
  bool done() const { return _done.load(); }

 private:
  shard::loop& _l;
  std::atomic<bool> _done{false};
  std::thread _t;
};

TEST(loop, run_once_calls_pollers_in_order_then_end_of_turn_with_one_now) {
  base::manual_clock clk(5000);
  shard::loop l({}, clk);
  std::vector<std::string> order;
  std::vector<nanos> nows;
  fn_poller a, b;
  a.fn = [&](nanos now) { order.push_back("a"); nows.push_back(now); return std::size_t(2); };
  b.fn = [&](nanos now) { order.push_back("b"); nows.push_back(now); return std::size_t(0); };
  l.add_poller(&a);
  l.add_poller(&b);
  l.set_end_of_turn([&](nanos now) { order.push_back("end"); nows.push_back(now); return std::size_t(5); });
  EXPECT_EQ(l.run_once(), 7u);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "end"}));
  EXPECT_EQ(nows, (std::vector<nanos>{5000, 5000, 5000}));
  clk.advance(10);
  EXPECT_EQ(l.run_once(), 7u);
  EXPECT_EQ(nows.back(), 5010);
  EXPECT_EQ(l.blocks(), 0u);
}

TEST(loop, run_once_without_pollers_is_idle) {
  base::manual_clock clk;
  shard::loop l({}, clk);
  EXPECT_EQ(l.run_once(), 0u);
}

TEST(loop, stop_before_run_returns_without_a_turn) {
  base::manual_clock clk;
  shard::loop l({}, clk);
  fn_poller p;
  l.add_poller(&p);
  l.stop();
  EXPECT_TRUE(l.stopping());
  l.run();
  EXPECT_EQ(p.calls, 0u);
}

TEST(loop, stop_from_a_poller_ends_run_after_that_turn) {
  base::manual_clock clk;
  shard::loop l({.mode = shard::poll_mode::busy}, clk);
  fn_poller p;
  p.fn = [&](nanos) {
    if (p.calls == 3) l.stop();
    return std::size_t(1);
  };
  l.add_poller(&p);
  l.run();
  EXPECT_EQ(p.calls, 3u);
}

TEST(loop, busy_mode_never_blocks) {
  base::manual_clock clk;
  shard::loop l({.mode = shard::poll_mode::busy, .spin_ns = 10}, clk);
  fake_waiter w;
  l.set_waiter(&w);
  fn_poller p;
  p.fn = [&](nanos) {
    clk.advance(base::kMilli);  // time flies, there is no work, and still no block
    if (p.calls == 10000) l.stop();
    return std::size_t(0);
  };
  l.add_poller(&p);
  l.run();
  EXPECT_EQ(l.blocks(), 0u);
  EXPECT_TRUE(w.calls.empty());
}

TEST(loop, adaptive_mode_spins_for_spin_ns_then_blocks) {
  base::manual_clock clk(1'000'000);
  const shard::loop_config cfg{.mode = shard::poll_mode::adaptive, .spin_ns = 1000,
                               .max_block_ns = 7 * base::kMilli};
  shard::loop l(cfg, clk);
  fake_waiter w;
  l.set_waiter(&w);
  fn_poller p;
  p.fn = [&](nanos) {
    clk.advance(100);
    return std::size_t(0);
  };
  l.add_poller(&p);
  std::vector<nanos> wait_at;
  std::vector<std::size_t> polls_at;
  w.on_wait = [&](nanos, int) {
    EXPECT_TRUE(l.sleeping()) << "a loop must announce sleep before it blocks";
    wait_at.push_back(clk.monotonic_ns());
    polls_at.push_back(p.calls);
    if (w.calls.size() == 3) l.stop();
  };
  l.run();
  EXPECT_FALSE(l.sleeping());
  EXPECT_EQ(l.blocks(), 3u);
  ASSERT_EQ(w.calls.size(), 3u);
  for (const auto& c : w.calls) {
    EXPECT_EQ(c.timeout, cfg.max_block_ns);
    EXPECT_EQ(c.fd, l.doorbell_fd());
  }
  // Each block comes only after a full idle spin window (clock advances 100 ns a poll).
  EXPECT_GE(wait_at[0] - 1'000'000, cfg.spin_ns);
  for (std::size_t i = 1; i < wait_at.size(); ++i) {
    EXPECT_GE(wait_at[i] - wait_at[i - 1], cfg.spin_ns) << i;
    EXPECT_GE(polls_at[i] - polls_at[i - 1], 10u) << i;
  }
}

// govern_spin: once the thread's readings say it waits for a core as long as it runs and its
// spins keep ending without work, an idle loop blocks at once (but for a probe spin every
// eighth time); when the readings turn quiet it spins again.
TEST(loop, a_governed_loop_stops_spinning_while_the_host_is_oversubscribed) {
  base::manual_clock clk(1'000'000);
  shard::loop_config cfg{.mode = shard::poll_mode::adaptive, .spin_ns = 10 * base::kMicro,
                         .max_block_ns = 7 * base::kMilli, .predict_arrivals = false};
  cfg.govern_spin = true;
  shard::loop l(cfg, clk);
  bool oversubscribed = true;
  nanos run = 0, wait = 0;
  l.set_sched_reader([&](nanos& r, nanos& w) {
    run += 5 * base::kMilli;
    wait += oversubscribed ? 5 * base::kMilli : 0;
    r = run;
    w = wait;
    return true;
  });
  fake_waiter fw;
  l.set_waiter(&fw);
  fn_poller p;
  p.fn = [&](nanos) {
    clk.advance(100);
    return std::size_t(0);
  };
  l.add_poller(&p);
  std::vector<std::size_t> polls_at;
  fw.on_wait = [&](nanos, int) {
    polls_at.push_back(p.calls);
    clk.advance(10 * base::kMilli);  // ten blocks a governor window
    if (fw.calls.size() == 60) oversubscribed = false;
    if (fw.calls.size() == 100) l.stop();
  };
  l.run();
  ASSERT_EQ(polls_at.size(), 100u);
  auto spun = [&](std::size_t i) { return polls_at[i] - polls_at[i - 1] >= 50; };  // 10 us of 100 ns polls
  EXPECT_TRUE(spun(5)) << "spins until the governor has a verdict";
  int spun_while_stopped = 0;
  for (std::size_t i = 31; i < 60; ++i) spun_while_stopped += spun(i);
  EXPECT_GE(spun_while_stopped, 2) << "probes";
  EXPECT_LE(spun_while_stopped, 6) << "blocked right after an idle turn, but for the probes";
  EXPECT_EQ(l.spin_stops(), 1u);
  EXPECT_TRUE(l.spin_allowed()) << "quiet readings turn spinning back on";
  for (std::size_t i = 90; i < 100; ++i) EXPECT_TRUE(spun(i)) << i;
}

TEST(loop, adaptive_mode_does_not_block_while_there_is_work) {
  base::manual_clock clk;
  shard::loop l({.mode = shard::poll_mode::adaptive, .spin_ns = 1000}, clk);
  fake_waiter w;
  l.set_waiter(&w);
  fn_poller p;
  p.fn = [&](nanos) {
    clk.advance(5000);  // each busy turn is longer than the spin window
    return std::size_t(p.calls <= 50 ? 1 : 0);
  };
  l.add_poller(&p);
  std::size_t polls_at_first_block = 0;
  w.on_wait = [&](nanos, int) {
    polls_at_first_block = p.calls;
    l.stop();
  };
  l.run();
  EXPECT_EQ(l.blocks(), 1u);
  EXPECT_GT(polls_at_first_block, 50u);
}

TEST(loop, work_found_after_announcing_sleep_cancels_the_block) {
  // The loop sets `sleeping` and then polls once more, so a producer that pushed before
  // it saw the flag (and therefore did not ring) is still served without blocking.
  base::manual_clock clk;
  shard::loop l({.mode = shard::poll_mode::adaptive, .spin_ns = 500}, clk);
  fake_waiter w;
  l.set_waiter(&w);
  fn_poller p;
  int rechecks = 0;
  std::vector<int> rechecks_at_wait;
  p.fn = [&](nanos) {
    clk.advance(100);
    if (!l.sleeping()) return std::size_t(0);
    ++rechecks;
    return std::size_t(rechecks == 1 ? 1 : 0);  // work shows up during the first re-check
  };
  l.add_poller(&p);
  w.on_wait = [&](nanos, int) {
    rechecks_at_wait.push_back(rechecks);
    l.stop();
  };
  l.run();
  ASSERT_EQ(rechecks_at_wait.size(), 1u);
  EXPECT_EQ(rechecks_at_wait[0], 2) << "blocked although the re-check found work";
  EXPECT_EQ(l.blocks(), 1u);
}

// A paced publisher: one message every millisecond, no two in flight. Blocks woken by a
// message return 60 µs after it (a halted vCPU's wake-up), timed wake-ups 30 µs late. Once the
// loop has seen the pattern it wakes itself before each message and serves it spinning; when
// the traffic stops it forgets it and blocks for max_block again.
TEST(loop, periodic_arrivals_are_met_spinning_after_a_planned_wakeup) {
  base::manual_clock clk(1'000'000);
  const shard::loop_config cfg{.mode = shard::poll_mode::adaptive, .spin_ns = 50 * base::kMicro,
                               .max_block_ns = 100 * base::kMilli};
  shard::loop l(cfg, clk);
  fake_waiter w;
  l.set_waiter(&w);
  constexpr int kMessages = 40;
  int served = 0;
  nanos next_arrival = 2 * base::kMilli;
  std::vector<nanos> delays;  // arrival -> the poll that served it
  fn_poller p;
  p.fn = [&](nanos) {
    clk.advance(200);
    if (served == kMessages || clk.monotonic_ns() < next_arrival) return std::size_t(0);
    delays.push_back(clk.monotonic_ns() - next_arrival);
    ++served;
    next_arrival += base::kMilli;
    clk.advance(5 * base::kMicro);  // the publish itself
    return std::size_t(1);
  };
  l.add_poller(&p);
  int idle_blocks = 0;
  w.on_wait = [&](nanos timeout, int) {
    const nanos now = clk.monotonic_ns();
    if (served < kMessages && next_arrival + 60 * base::kMicro < now + timeout) {
      clk.advance(next_arrival + 60 * base::kMicro - now);
    } else {
      clk.advance(timeout + 30 * base::kMicro);
    }
    if (served == kMessages && timeout == cfg.max_block_ns && ++idle_blocks == 3) l.stop();
  };
  l.run();
  ASSERT_EQ(served, kMessages);
  EXPECT_GE(delays.front(), 60 * base::kMicro) << "before learning, each message pays the wake-up";
  int met_spinning = 0;
  for (std::size_t i = 10; i < delays.size(); ++i)
    if (delays[i] < 5 * base::kMicro) ++met_spinning;
  EXPECT_GE(met_spinning, 28) << "after learning, messages should find the loop spinning";
  EXPECT_GE(l.planned_wakes(), 28u);
  EXPECT_GE(l.predicted_hits(), 28u);
  EXPECT_EQ(idle_blocks, 3) << "without traffic the loop must block for max_block again";
}

TEST(loop, arrival_prediction_can_be_turned_off) {
  base::manual_clock clk(1'000'000);
  shard::loop l({.mode = shard::poll_mode::adaptive, .spin_ns = 50 * base::kMicro,
                 .max_block_ns = 100 * base::kMilli, .predict_arrivals = false},
                clk);
  fake_waiter w;
  l.set_waiter(&w);
  int served = 0;
  nanos next_arrival = 2 * base::kMilli;
  fn_poller p;
  p.fn = [&](nanos) {
    clk.advance(200);
    if (clk.monotonic_ns() < next_arrival) return std::size_t(0);
    ++served;
    next_arrival += base::kMilli;
    return std::size_t(1);
  };
  l.add_poller(&p);
  w.on_wait = [&](nanos timeout, int) {
    EXPECT_EQ(timeout, 100 * base::kMilli);
    clk.advance(next_arrival + 60 * base::kMicro - clk.monotonic_ns());
    if (served == 30) l.stop();
  };
  l.run();
  EXPECT_EQ(l.planned_wakes(), 0u);
}

TEST(loop, wake_is_a_no_op_while_the_loop_is_awake) {
  shard::loop l({});
  ASSERT_FALSE(l.sleeping());
  l.wake();
  EXPECT_FALSE(readable(l.doorbell_fd()));
}

TEST(loop, stop_rings_the_doorbell_and_clear_drains_it) {
  shard::loop l({});
  EXPECT_FALSE(readable(l.doorbell_fd()));
  l.stop();
  EXPECT_TRUE(readable(l.doorbell_fd()));
  l.clear_doorbell();
  EXPECT_FALSE(readable(l.doorbell_fd()));
  l.clear_doorbell();  // draining an empty doorbell is harmless
  EXPECT_FALSE(readable(l.doorbell_fd()));
}

// A waiter whose wait consumes the doorbell's count itself (the uring transport's armed read)
// is trusted to: the loop leaves the doorbell alone after the block. Any other waiter's
// doorbell is drained by the loop.
TEST(loop, the_doorbell_is_drained_by_the_loop_unless_the_waiter_does) {
  for (const bool drains : {false, true}) {
    base::manual_clock clk(1'000'000);
    shard::loop l({.mode = shard::poll_mode::adaptive, .spin_ns = 0, .max_block_ns = base::kMilli}, clk);
    struct draining_waiter : fake_waiter {
      bool drains = false;
      bool drains_doorbell() const override { return drains; }
    } fw;
    fw.drains = drains;
    l.set_waiter(&fw);
    std::vector<bool> readable_at_wait;
    fw.on_wait = [&](nanos, int fd) {
      readable_at_wait.push_back(readable(fd));
      if (fw.calls.size() == 1) {  // rung during the block; this fake does not consume it
        const std::uint64_t one = 1;
        ASSERT_EQ(::write(fd, &one, sizeof one), ssize_t(sizeof one));
      }
      if (fw.calls.size() == 2) l.stop();
    };
    l.run();
    ASSERT_EQ(readable_at_wait.size(), 2u) << drains;
    EXPECT_FALSE(readable_at_wait[0]) << drains;
    EXPECT_EQ(readable_at_wait[1], drains) << "the count is left only for a waiter that drains it";
  }
}

TEST(loop, wake_ends_a_block_on_the_doorbell) {
  // A waiter that really blocks on the doorbell fd with the loop's (long) timeout.
  const shard::loop_config cfg{.mode = shard::poll_mode::adaptive, .spin_ns = 0,
                               .max_block_ns = 60 * base::kSecond};
  shard::loop l(cfg);
  std::atomic<int> entered{0}, woken_by_doorbell{0}, returned{0};
  struct blocking_waiter : shard::waiter {
    std::atomic<int>*entered, *woken, *returned;
    void wait(nanos timeout, int fd) override {
      entered->fetch_add(1);
      if (readable(fd, int(timeout / base::kMilli))) woken->fetch_add(1);
      returned->fetch_add(1);
    }
  } w;
  w.entered = &entered;
  w.woken = &woken_by_doorbell;
  w.returned = &returned;
  l.set_waiter(&w);
  loop_thread t(l);
  ASSERT_TRUE(eventually([&] { return entered.load() == 1; })) << "loop never went to sleep";
  EXPECT_TRUE(l.sleeping());
  l.wake();
  ASSERT_TRUE(eventually([&] { return returned.load() >= 1; })) << "wake() did not end the block";
  EXPECT_EQ(woken_by_doorbell.load(), 1);
  // The loop clears the doorbell and goes back to sleep; stop() wakes it for good.
  ASSERT_TRUE(eventually([&] { return entered.load() == 2; }));
  l.stop();
  EXPECT_TRUE(eventually([&] { return t.done(); })) << "stop() did not end run()";
  EXPECT_GE(l.blocks(), 2u);
}

TEST(loop, stop_from_another_thread_ends_a_blocked_run) {
  // No waiter: the loop blocks on its doorbell alone, with a timeout far beyond the bound.
  shard::loop l({.mode = shard::poll_mode::adaptive, .spin_ns = 0, .max_block_ns = 60 * base::kSecond});
  loop_thread t(l);
  ASSERT_TRUE(eventually([&] { return l.sleeping(); }));
  l.stop();
  EXPECT_TRUE(eventually([&] { return t.done(); })) << "stop() did not end run() within 5 s";
}

TEST(loop, stop_from_another_thread_ends_a_busy_run) {
  shard::loop l({.mode = shard::poll_mode::busy});
  fn_poller p;
  std::atomic<std::size_t> turns{0};
  p.fn = [&](nanos) {
    turns.fetch_add(1);
    return std::size_t(0);
  };
  l.add_poller(&p);
  loop_thread t(l);
  ASSERT_TRUE(eventually([&] { return turns.load() > 100; }));
  l.stop();
  EXPECT_TRUE(eventually([&] { return t.done(); }));
  EXPECT_EQ(l.blocks(), 0u);
}

}  // namespace
