// shard::spin_governor: spinning stops when the thread waits for a core about as long as it
// runs, comes back when the wait falls well below that, and judges nothing from too little.
#include <gtest/gtest.h>

#include "src/shard/spin_governor.h"

namespace {

using base::kMicro;
using base::kMilli;
using base::nanos;

// Feeds one window: `run` and `wait` more than the last reading, 100 ms later.
struct feeder {
  shard::spin_governor& g;
  nanos now = 0, run = 0, wait = 0;
  void window(nanos ran, nanos waited) {
    now += 100 * kMilli;
    run += ran;
    wait += waited;
    ASSERT_TRUE(g.due(now));
    g.on_sample(now, run, wait);
  }
};

// `spins` spins of which `hits` found work, then a window's reading.
void spins(shard::spin_governor& g, int n, int hits) {
  for (int i = 0; i < n; ++i) g.on_spin_end(i < hits);
}

TEST(spin_governor, spins_with_a_core_to_spare) {
  shard::spin_governor g;
  feeder f{g};
  f.window(0, 0);  // the baseline
  for (int i = 0; i < 10; ++i) {
    spins(g, 100, 10);                       // spins mostly miss...
    f.window(90 * kMilli, 2 * kMilli);       // ...but a single server waits 2%: a core to spare
  }
  EXPECT_TRUE(g.spin_allowed());
  EXPECT_EQ(g.turned_off(), 0u);
}

TEST(spin_governor, keeps_spinning_while_spins_find_work_even_when_waiting) {
  shard::spin_governor g;
  feeder f{g};
  f.window(0, 0);
  for (int i = 0; i < 10; ++i) {
    spins(g, 100, 80);                     // a latency loop: the next message lands in the spin
    f.window(20 * kMilli, 10 * kMilli);    // though the thread waits half as long as it runs
  }
  EXPECT_TRUE(g.spin_allowed());
}

TEST(spin_governor, stops_spinning_when_waiting_and_missing_and_resumes_when_quiet) {
  shard::spin_governor g;
  feeder f{g};
  f.window(0, 0);
  spins(g, 100, 5);
  f.window(20 * kMilli, 18 * kMilli);  // three servers on two vCPUs: wait ~ run, spins miss
  EXPECT_FALSE(g.spin_allowed());
  EXPECT_EQ(g.turned_off(), 1u);
  f.window(10 * kMilli, kMilli);  // 10%: between the thresholds, no probes: stays off
  EXPECT_FALSE(g.spin_allowed());
  f.window(10 * kMilli, 300 * kMicro);  // 3%: the load is gone
  EXPECT_TRUE(g.spin_allowed());
  spins(g, 100, 5);
  f.window(10 * kMilli, kMilli);  // 10% again: stays on (hysteresis)
  EXPECT_TRUE(g.spin_allowed());
  EXPECT_EQ(g.turned_off(), 1u);
}

TEST(spin_governor, while_stopped_every_eighth_episode_probes_and_paying_probes_resume) {
  shard::spin_governor g;
  feeder f{g};
  f.window(0, 0);
  spins(g, 50, 0);
  f.window(20 * kMilli, 20 * kMilli);
  ASSERT_FALSE(g.spin_allowed());
  int probes = 0;
  for (int i = 0; i < 80; ++i)
    if (g.spin_now()) {
      ++probes;
      g.on_spin_end(true);  // the probes find work now
    }
  EXPECT_EQ(probes, 10);
  f.window(20 * kMilli, 20 * kMilli);  // still waiting, but spins pay again
  EXPECT_TRUE(g.spin_allowed());
  EXPECT_TRUE(g.spin_now());
}

TEST(spin_governor, too_few_spins_or_too_little_run_time_decide_nothing) {
  shard::spin_governor g;
  feeder f{g};
  f.window(0, 0);
  spins(g, 5, 0);
  f.window(20 * kMilli, 20 * kMilli);  // only five spins: their rate is unknown
  EXPECT_TRUE(g.spin_allowed());
  spins(g, 20, 0);
  f.window(200 * kMicro, 400 * kMicro);  // an idle thread's few wake-ups: no verdict
  EXPECT_TRUE(g.spin_allowed());
  f.window(900 * kMicro, 400 * kMicro);  // with the window before: 1.1 ms run, 0.8 ms wait
  EXPECT_FALSE(g.spin_allowed());
}

TEST(spin_governor, samples_once_a_window_and_survives_counters_going_back) {
  shard::spin_governor g;
  EXPECT_TRUE(g.due(0));
  g.on_sample(0, 5 * kMilli, 0);
  EXPECT_FALSE(g.due(50 * kMilli));
  EXPECT_TRUE(g.due(100 * kMilli));
  g.on_sample(100 * kMilli, kMilli, 0);  // smaller than before: a new baseline, no verdict
  EXPECT_TRUE(g.spin_allowed());
  spins(g, 10, 0);
  g.on_sample(200 * kMilli, 11 * kMilli, 9 * kMilli);
  EXPECT_FALSE(g.spin_allowed());
}

}  // namespace
