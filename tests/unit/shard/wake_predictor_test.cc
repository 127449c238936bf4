// shard::wake_predictor: learning a periodic arrival pattern, the window it predicts, and
// when it refuses to predict (too few, too fast, too slow, too irregular, after a miss).
#include <gtest/gtest.h>

#include "src/shard/wake_predictor.h"

namespace {

using base::kMicro;
using base::kMilli;
using base::nanos;

// Feeds arrivals every `period` (plus jitter[i % n]) starting at `start`; returns the last.
nanos feed(shard::wake_predictor& p, nanos start, nanos period, int n, std::initializer_list<nanos> jitter = {0}) {
  nanos t = start;
  for (int i = 0; i < n; ++i) {
    t = start + nanos(i) * period + *(jitter.begin() + (i % jitter.size()));
    p.on_arrival(t);
  }
  return t;
}

TEST(wake_predictor, predicts_nothing_without_traffic) {
  shard::wake_predictor p;
  EXPECT_FALSE(p.next().valid());
  p.on_arrival(5 * kMilli);
  EXPECT_FALSE(p.next().valid()) << "one arrival is no pattern";
}

TEST(wake_predictor, needs_four_periods_then_predicts_the_next_arrival) {
  shard::wake_predictor p;
  const nanos last = feed(p, 10 * kMilli, kMilli, 4);  // three periods
  EXPECT_FALSE(p.next().valid());
  p.on_arrival(last + kMilli);  // the fourth
  const auto w = p.next();
  ASSERT_TRUE(w.valid());
  const nanos expected = last + 2 * kMilli;
  const shard::wake_predictor_config cfg;
  // Wake early by the margin and the (default) wake-up latency; spin past it by the margin.
  EXPECT_EQ(w.wake_at, expected - cfg.margin - p.wake_latency());
  EXPECT_EQ(w.spin_until, expected + cfg.margin);
}

TEST(wake_predictor, the_window_covers_the_spread_of_recent_periods) {
  shard::wake_predictor p;
  const nanos last = feed(p, 0, kMilli, 9, {0, 30 * kMicro, -20 * kMicro});
  const auto w = p.next();
  ASSERT_TRUE(w.valid());
  // Periods seen: 1000+30, 1000-50, 1000+20 µs: lo 950, hi 1030.
  const shard::wake_predictor_config cfg;
  EXPECT_EQ(w.wake_at, last + 950 * kMicro - cfg.margin - p.wake_latency());
  EXPECT_EQ(w.spin_until, last + 1030 * kMicro + cfg.margin);
}

TEST(wake_predictor, refuses_irregular_traffic_whose_window_would_cost_too_much) {
  shard::wake_predictor p;
  feed(p, 0, kMilli, 9, {0, 200 * kMicro});  // periods 1.2 and 0.8 ms: window 0.48 ms of 0.8
  EXPECT_FALSE(p.next().valid());
}

TEST(wake_predictor, ignores_traffic_faster_or_slower_than_its_range) {
  shard::wake_predictor fast;
  feed(fast, 0, 100 * kMicro, 20);  // the after-work spin already keeps the loop awake
  EXPECT_FALSE(fast.next().valid());
  shard::wake_predictor slow;
  feed(slow, 0, 50 * kMilli, 20);  // a wake-up of its own every 50 ms is not worth it
  EXPECT_FALSE(slow.next().valid());
}

TEST(wake_predictor, a_burst_or_a_pause_restarts_learning) {
  shard::wake_predictor p;
  nanos last = feed(p, 0, kMilli, 10);
  ASSERT_TRUE(p.next().valid());
  p.on_arrival(last + 50 * kMicro);  // a second message right behind one
  EXPECT_FALSE(p.next().valid());
  last = feed(p, last + kMilli, kMilli, 5);
  EXPECT_TRUE(p.next().valid()) << "four regular periods again";
  p.on_arrival(last + 100 * kMilli);  // traffic paused
  EXPECT_FALSE(p.next().valid());
}

TEST(wake_predictor, a_miss_forgets_the_pattern) {
  shard::wake_predictor p;
  feed(p, 0, 2 * kMilli, 10);
  ASSERT_TRUE(p.next().valid());
  p.on_miss();  // the publisher stopped: the loop must go back to plain blocking
  EXPECT_FALSE(p.next().valid());
  EXPECT_EQ(p.periods(), 0u);
}

TEST(wake_predictor, learns_how_late_timed_wakeups_return) {
  shard::wake_predictor p;
  const nanos before = p.wake_latency();
  for (int i = 0; i < 64; ++i) p.on_timed_wake(nanos(i) * kMilli, nanos(i) * kMilli + 80 * kMicro);
  EXPECT_GT(p.wake_latency(), before);
  EXPECT_NEAR(double(p.wake_latency()), double(80 * kMicro), double(2 * kMicro));
  // A wild outlier (a descheduled thread) moves it, boundedly.
  p.on_timed_wake(0, 50 * kMilli);
  EXPECT_LE(p.wake_latency(), 80 * kMicro + 500 * kMicro / 8 + 1);
  const nanos last = feed(p, 0, kMilli, 6);
  EXPECT_EQ(p.next().wake_at, last + kMilli - shard::wake_predictor_config{}.margin - p.wake_latency());
}

}  // namespace
