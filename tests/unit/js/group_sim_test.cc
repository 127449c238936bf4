// The seeded stream-group simulation (tests/unit/js/group_sim.h) over many seeds. A failure
// prints the seed and the command that replays it. Environment (for longer runs by hand):
//   PEREGRINE_GROUP_SIM_SEEDS=n       seeds (default 200; 40 under ASan)
//   PEREGRINE_GROUP_SIM_FIRST_SEED=s  first seed (default 1)
//   PEREGRINE_GROUP_SIM_STEPS=n       chaos steps per seed (default 300)
//   PEREGRINE_GROUP_SIM_SEED=s        run only this seed (the single_seed test)
//   PEREGRINE_GROUP_SIM_TRACE=1       with SEED: print every step and what the groups sent
//   PEREGRINE_GROUP_SIM_VERBOSE=1     one line per seed
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "src/base/log.h"
#include "tests/unit/js/group_sim.h"

namespace {

using js::sim::run_group_simulation;
using js::sim::sim_options;
using js::sim::sim_report;

// An assertion inside the server code aborts the process: say which seed did it first.
volatile std::uint64_t g_seed = 0;

void on_abort(int) {
  char buf[128];
  const int n = std::snprintf(buf, sizeof buf, "\ngroup simulation aborted: replay with PEREGRINE_GROUP_SIM_SEED=%llu\n",
                              (unsigned long long)g_seed);
  if (n > 0) (void)!write(2, buf, std::size_t(n));
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string replay_hint(const sim_options& o) {
  return "replay: PEREGRINE_GROUP_SIM_SEED=" + std::to_string(o.seed) + " PEREGRINE_GROUP_SIM_STEPS=" +
         std::to_string(o.steps) + " PEREGRINE_GROUP_SIM_TRACE=1 tests/unit/js/js_group_sim_test --gtest_filter='*single_seed*'";
}

#if defined(__SANITIZE_ADDRESS__)
constexpr std::uint64_t kDefaultSeeds = 40;  // the ASan pass is a debug build, many times slower
#else
constexpr std::uint64_t kDefaultSeeds = 200;
#endif

TEST(group_sim, many_seeds) {
  std::signal(SIGABRT, on_abort);
  // Crash restarts make the agents warn (state cut back to the stream): expected here.
  if (!env_or("PEREGRINE_GROUP_SIM_VERBOSE", 0)) base::log_set_level(base::log_level::error);
  const std::uint64_t first = env_or("PEREGRINE_GROUP_SIM_FIRST_SEED", 1);
  const std::uint64_t count = env_or("PEREGRINE_GROUP_SIM_SEEDS", kDefaultSeeds);
  const bool verbose = env_or("PEREGRINE_GROUP_SIM_VERBOSE", 0) != 0;
  sim_report total;
  std::uint64_t failures = 0;
  for (std::uint64_t seed = first; seed < first + count && failures < 3; ++seed) {
    sim_options o;
    o.seed = seed;
    g_seed = seed;
    o.steps = unsigned(env_or("PEREGRINE_GROUP_SIM_STEPS", o.steps));
    const sim_report r = run_group_simulation(o);
    total.published += r.published;
    total.delivered += r.delivered;
    total.redelivered += r.redelivered;
    total.acked += r.acked;
    total.restarts += r.restarts;
    total.crashes += r.crashes;
    total.removed += r.removed;
    if (verbose)
      std::printf("seed %llu: %llu published, %llu delivered (%llu redelivered), %llu restarts (%llu crashes)\n",
                  (unsigned long long)seed, (unsigned long long)r.published, (unsigned long long)r.delivered,
                  (unsigned long long)r.redelivered, (unsigned long long)r.restarts, (unsigned long long)r.crashes);
    if (!r.ok) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ": " << r.failure << "\nconfig:\n" << r.config << replay_hint(o);
    }
  }
  std::printf("%llu seeds from %llu: %llu PubAcks, %llu deliveries (%llu redeliveries), %llu acks, %llu removals, "
              "%llu restarts (%llu crashes)\n",
              (unsigned long long)count, (unsigned long long)first, (unsigned long long)total.published,
              (unsigned long long)total.delivered, (unsigned long long)total.redelivered,
              (unsigned long long)total.acked, (unsigned long long)total.removed,
              (unsigned long long)total.restarts, (unsigned long long)total.crashes);
  // The runs exercise what they claim to.
  EXPECT_GT(total.published, count * 20);
  EXPECT_GT(total.redelivered, 0u);
  EXPECT_GT(total.crashes, 0u);
}

TEST(group_sim, single_seed) {
  const std::uint64_t seed = env_or("PEREGRINE_GROUP_SIM_SEED", 0);
  if (seed == 0) GTEST_SKIP() << "set PEREGRINE_GROUP_SIM_SEED to replay one seed";
  std::signal(SIGABRT, on_abort);
  sim_options o;
  o.seed = seed;
  g_seed = seed;
  o.steps = unsigned(env_or("PEREGRINE_GROUP_SIM_STEPS", o.steps));
  o.trace = env_or("PEREGRINE_GROUP_SIM_TRACE", 0) != 0;
  const sim_report r = run_group_simulation(o);
  EXPECT_TRUE(r.ok) << r.failure << "\nconfig:\n" << r.config;
  std::printf("seed %llu: %llu steps, %llu published, %llu delivered (%llu redelivered), %llu acks, %llu restarts "
              "(%llu crashes)\n%s",
              (unsigned long long)seed, (unsigned long long)r.steps, (unsigned long long)r.published,
              (unsigned long long)r.delivered, (unsigned long long)r.redelivered, (unsigned long long)r.acked,
              (unsigned long long)r.restarts, (unsigned long long)r.crashes, r.config.c_str());
}

// The same seed gives the same run.
TEST(group_sim, a_seed_replays_exactly) {
  sim_options o;
  o.seed = 4242;
  const sim_report a = run_group_simulation(o);
  const sim_report b = run_group_simulation(o);
  EXPECT_TRUE(a.ok) << a.failure;
  EXPECT_EQ(a.published, b.published);
  EXPECT_EQ(a.delivered, b.delivered);
  EXPECT_EQ(a.redelivered, b.redelivered);
  EXPECT_EQ(a.acked, b.acked);
  EXPECT_EQ(a.removed, b.removed);
  EXPECT_EQ(a.restarts, b.restarts);
  EXPECT_EQ(a.config, b.config);
  EXPECT_GT(a.published, 20u);
}

// The checkers have teeth: a disk that reports writes durable without keeping them loses
// PubAck'd messages in crashes, and some seed must say so.
TEST(group_sim, lying_disk_is_caught) {
  unsigned caught = 0;
  for (std::uint64_t seed = 1; seed <= 30 && caught == 0; ++seed) {
    sim_options o;
    o.seed = seed;
    g_seed = seed;
    o.disk_lies = true;
    const sim_report r = run_group_simulation(o);
    if (!r.ok) {
      ++caught;
      EXPECT_NE(r.failure.find("PubAck'd"), std::string::npos) << r.failure;  // lost, or last_seq below it
    }
  }
  EXPECT_GT(caught, 0u);
}

}  // namespace
