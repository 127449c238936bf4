// The seeded Raft simulation over many seeds. A failure prints the seed and the command that
// replays it. Environment (for longer runs by hand):
//   PEREGRINE_RAFT_SIM_SEEDS=n       seeds per cluster size (default 300 for 3, 200 for 5;
//                                    100 and 60 under ASan)
//   PEREGRINE_RAFT_SIM_FIRST_SEED=s  first seed (default 1)
//   PEREGRINE_RAFT_SIM_SEED=s        run only this seed (with PEREGRINE_RAFT_SIM_SERVERS=n)
//   PEREGRINE_RAFT_SIM_VERBOSE=1     one line per seed
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include "tests/unit/repl/raft_sim.h"

namespace {

using repl::sim::run_simulation;
using repl::sim::sim_options;
using repl::sim::sim_report;

// An assertion inside raft aborts the process: say which seed did it before dying.
volatile std::uint64_t g_seed = 0;
volatile unsigned g_servers = 0;

void on_abort(int) {
  char buf[160];
  const int n = std::snprintf(buf, sizeof buf,
                              "\nraft simulation aborted: replay with PEREGRINE_RAFT_SIM_SEED=%llu "
                              "PEREGRINE_RAFT_SIM_SERVERS=%u\n",
                              (unsigned long long)g_seed, g_servers);
  if (n > 0) (void)!write(2, buf, std::size_t(n));
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string replay_hint(const sim_options& o) {
  // setarch -R pins the address layout: with ASLR, about one batch run in eight plays one
  // seed of 180 differently (cause not found yet; valgrind is clean), never within a layout.
  return "replay: PEREGRINE_RAFT_SIM_SEED=" + std::to_string(o.seed) +
         " PEREGRINE_RAFT_SIM_SERVERS=" + std::to_string(o.servers) +
         " setarch -R tests/unit/repl/test_repl_raft_sim --gtest_filter='*single_seed*'";
}

void run_seeds(unsigned servers, std::uint64_t default_count) {
  std::signal(SIGABRT, on_abort);
  const std::uint64_t first = env_or("PEREGRINE_RAFT_SIM_FIRST_SEED", 1);
  const std::uint64_t count = env_or("PEREGRINE_RAFT_SIM_SEEDS", default_count);
  const bool verbose = env_or("PEREGRINE_RAFT_SIM_VERBOSE", 0) != 0;
  std::uint64_t failures = 0, events = 0, acked = 0, crashes = 0, worst_recovery = 0;
  for (std::uint64_t seed = first; seed < first + count && failures < 3; ++seed) {
    sim_options o;
    o.seed = seed;
    o.servers = servers;
    g_seed = seed;
    g_servers = servers;
    const sim_report r = run_simulation(o);
    events += r.events;
    acked += r.proposals_acked;
    crashes += r.crashes;
    worst_recovery = std::max(worst_recovery, r.recovery_ms);
    if (verbose)
      std::printf("seed %llu: %llu events, %llu committed, %llu crashes, recovery %llu ms\n",
                  (unsigned long long)seed, (unsigned long long)r.events,
                  (unsigned long long)r.proposals_acked, (unsigned long long)r.crashes,
                  (unsigned long long)r.recovery_ms);
    if (!r.ok) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << " (" << servers << " servers): " << r.failure << "\n"
                    << replay_hint(o);
    }
  }
  std::printf("%u servers: %llu seeds from %llu, %llu events, %llu entries committed, %llu "
              "crashes, slowest recovery %llu ms simulated\n",
              servers, (unsigned long long)count, (unsigned long long)first,
              (unsigned long long)events, (unsigned long long)acked,
              (unsigned long long)crashes, (unsigned long long)worst_recovery);
}

// The CI's ASan pass is a debug build, ~25x slower: there, fewer seeds (memory errors show
// on any seed; the plain pass covers the count).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(raft_sim, three_servers_many_seeds) { run_seeds(3, kSanitized ? 100 : 300); }

TEST(raft_sim, five_servers_many_seeds) { run_seeds(5, kSanitized ? 60 : 200); }

TEST(raft_sim, single_seed) {
  const std::uint64_t seed = env_or("PEREGRINE_RAFT_SIM_SEED", 0);
  if (seed == 0) GTEST_SKIP() << "set PEREGRINE_RAFT_SIM_SEED to replay one seed";
  std::signal(SIGABRT, on_abort);
  sim_options o;
  o.seed = seed;
  o.servers = unsigned(env_or("PEREGRINE_RAFT_SIM_SERVERS", 3));
  o.trace_from_ms = env_or("PEREGRINE_RAFT_SIM_TRACE_FROM_MS", ~0ull);
  g_seed = seed;
  g_servers = o.servers;
  const sim_report r = run_simulation(o);
  EXPECT_TRUE(r.ok) << r.failure;
  std::printf("seed %llu: %llu events, %llu committed, %llu crashes, %llu leaders, recovery "
              "%llu ms, final index %llu\n",
              (unsigned long long)seed, (unsigned long long)r.events,
              (unsigned long long)r.proposals_acked, (unsigned long long)r.crashes,
              (unsigned long long)r.leaders, (unsigned long long)r.recovery_ms,
              (unsigned long long)r.final_index);
}

// The same seed gives the same run, event for event.
TEST(raft_sim, a_seed_replays_exactly) {
  sim_options o;
  o.seed = 4242;
  o.servers = 5;
  const sim_report a = run_simulation(o);
  const sim_report b = run_simulation(o);
  EXPECT_TRUE(a.ok) << a.failure;
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.proposals_acked, b.proposals_acked);
  EXPECT_EQ(a.crashes, b.crashes);
  EXPECT_EQ(a.recovery_ms, b.recovery_ms);
  EXPECT_EQ(a.final_index, b.final_index);
  EXPECT_GT(a.proposals_acked, 10u);
  EXPECT_GT(a.crashes, 0u);
}

// The checkers have teeth: a disk that acknowledges writes it never makes durable loses
// committed entries on crashes, and some seed must be reported.
TEST(raft_sim, lying_disk_is_caught) {
  std::signal(SIGABRT, on_abort);
  unsigned caught = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    sim_options o;
    o.seed = seed;
    o.disk_lies = true;
    o.chaos_ms = 4'000;
    g_seed = seed;
    g_servers = o.servers;
    if (!run_simulation(o).ok) ++caught;
  }
  EXPECT_GT(caught, 0u);
}

// Why raft_group drops late frames: cowsql raft expects each peer's messages in order.
// Without the filter, reordering leaves some seeds' leaders stuck sending heartbeats to a
// follower that never catches up (or trips an assertion); with it the same seeds pass.
TEST(raft_sim, reordered_frames_stall_raft_without_the_order_filter) {
  std::signal(SIGABRT, on_abort);
  unsigned stalled = 0;
  // Seeds 24 (3 servers), 3 and 15 (5 servers) stalled when this was found.
  for (auto [servers, last_seed] : {std::pair{3u, 40u}, std::pair{5u, 20u}}) {
    for (std::uint64_t seed = 1; seed <= last_seed && stalled == 0; ++seed) {
      sim_options o;
      o.seed = seed;
      o.servers = servers;
      o.drop_stale_frames = false;
      g_seed = seed;
      g_servers = servers;
      const sim_report r = run_simulation(o);
      if (!r.ok) {
        ++stalled;
        std::printf("without the filter, seed %llu on %u servers: %s\n",
                    (unsigned long long)seed, servers, r.failure.substr(0, 90).c_str());
      }
    }
  }
  EXPECT_GT(stalled, 0u);
}

// Without faults the cluster elects once and commits everything proposed.
TEST(raft_sim, fault_free_run_commits_steadily) {
  sim_options o;
  o.seed = 9;
  o.crashes = o.partitions = o.torn_writes = false;
  o.loss = o.duplicate = o.long_delay = 0;
  const sim_report r = run_simulation(o);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.crashes, 0u);
  EXPECT_EQ(r.leaders, 1u);
  EXPECT_GT(r.proposals_acked, 100u);
}

}  // namespace
