// The seeded Raft simulation over many seeds. A failure prints the seed and the command that
// replays it. Environment (for longer runs by hand):
//   PEREGRINE_RAFT_SIM_SEEDS=n       seeds per cluster size (default 300 for 3, 200 for 5;
//                                    100 and 60 under ASan)
//   PEREGRINE_RAFT_SIM_FIRST_SEED=s  first seed (default 1)
//   PEREGRINE_RAFT_SIM_SEED=s        run only this seed (with PEREGRINE_RAFT_SIM_SERVERS=n)
//   PEREGRINE_RAFT_SIM_VERBOSE=1     one line per seed
//   PEREGRINE_RAFT_SIM_MEMBERSHIP=1  single_seed with the joining and removed server
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/unit/repl/raft_sim.h"
#include "tests/unit/sim_seeds.h"

namespace {

using repl::sim::run_simulation;
using repl::sim::sim_options;
using repl::sim::sim_report;

using sim_seeds::env_or;
using sim_seeds::kSanitized;

std::string replay_hint(const sim_options& o) {
  // setarch -R pins the address layout: with ASLR, about one batch run in eight plays one
  // seed of 180 differently (cause not found yet; valgrind is clean), never within a layout.
  return "replay: PEREGRINE_RAFT_SIM_SEED=" + std::to_string(o.seed) +
         " PEREGRINE_RAFT_SIM_SERVERS=" + std::to_string(o.servers) +
         (o.membership ? " PEREGRINE_RAFT_SIM_MEMBERSHIP=1" : "") +
         (o.snapshot_every ? " PEREGRINE_RAFT_SIM_SNAPSHOT=" + std::to_string(o.snapshot_every) : "") +
         " setarch -R tests/unit/repl/test_repl_raft_sim --gtest_filter='*single_seed*'";
}

std::string replay_cmd(std::uint64_t seed, unsigned servers, bool membership = false,
                       unsigned snapshot_every = 0) {
  sim_options o;
  o.seed = seed;
  o.servers = servers;
  o.membership = membership;
  o.snapshot_every = snapshot_every;
  return replay_hint(o);
}

void run_seeds(unsigned servers, std::uint64_t default_count, bool membership = false,
               unsigned snapshot_every = 0) {
  const auto range = sim_seeds::seeds_from_env("PEREGRINE_RAFT_SIM", default_count);
  std::uint64_t events = 0, acked = 0, crashes = 0, worst_recovery = 0, snapshots = 0, installs = 0;
  sim_seeds::run_range(
      range,
      [&](std::uint64_t seed) -> std::string {
        sim_options o;
        o.seed = seed;
        o.servers = servers;
        o.membership = membership;
        o.snapshot_every = snapshot_every;
        const sim_report r = run_simulation(o);
        events += r.events;
        snapshots += r.snapshots;
        installs += r.installs;
        acked += r.proposals_acked;
        crashes += r.crashes;
        worst_recovery = std::max(worst_recovery, r.recovery_ms);
        if (range.verbose)
          std::printf("seed %llu: %llu events, %llu committed, %llu crashes, recovery %llu ms\n",
                      (unsigned long long)seed, (unsigned long long)r.events,
                      (unsigned long long)r.proposals_acked, (unsigned long long)r.crashes,
                      (unsigned long long)r.recovery_ms);
        if (r.ok) return {};
        return "(" + std::to_string(servers) + " servers) " + r.failure + "\n" + replay_hint(o);
      },
      [&](std::uint64_t seed) { return replay_cmd(seed, servers, membership, snapshot_every); });
  std::printf("%u servers: %llu seeds from %llu, %llu events, %llu entries committed, %llu "
              "crashes, slowest recovery %llu ms simulated\n",
              servers, (unsigned long long)range.count, (unsigned long long)range.first,
              (unsigned long long)events, (unsigned long long)acked,
              (unsigned long long)crashes, (unsigned long long)worst_recovery);
  if (snapshot_every > 0) {
    std::printf("  %llu snapshots taken, %llu restored\n", (unsigned long long)snapshots,
                (unsigned long long)installs);
    EXPECT_GT(snapshots, 0u);
    EXPECT_GT(installs, 0u);
  }
}

TEST(raft_sim, three_servers_many_seeds) { run_seeds(3, kSanitized ? 50 : 300); }

TEST(raft_sim, five_servers_many_seeds) { run_seeds(5, kSanitized ? 30 : 200); }

// Snapshots every few entries with a short trailing log: restarted and partitioned servers
// come back through InstallSnapshot or their own snapshot, and the checkers see the same.
TEST(raft_sim, snapshots_many_seeds) { run_seeds(3, kSanitized ? 40 : 200, false, 7); }
TEST(raft_sim, snapshots_with_membership_many_seeds) { run_seeds(3, kSanitized ? 10 : 60, true, 5); }

// A server joins the formed group (standby, then voter once caught up) and server 1 is
// removed, under the same faults; the joiner must end a voter applying new entries.
TEST(raft_sim, membership_join_and_remove_many_seeds) { run_seeds(3, kSanitized ? 10 : 80, true); }

TEST(raft_sim, single_seed) {
  const std::uint64_t seed = env_or("PEREGRINE_RAFT_SIM_SEED", 0);
  if (seed == 0) GTEST_SKIP() << "set PEREGRINE_RAFT_SIM_SEED to replay one seed";
  sim_options o;
  o.seed = seed;
  o.servers = unsigned(env_or("PEREGRINE_RAFT_SIM_SERVERS", 3));
  o.trace_from_ms = env_or("PEREGRINE_RAFT_SIM_TRACE_FROM_MS", ~0ull);
  o.membership = env_or("PEREGRINE_RAFT_SIM_MEMBERSHIP", 0) != 0;
  o.snapshot_every = unsigned(env_or("PEREGRINE_RAFT_SIM_SNAPSHOT", 0));
  sim_seeds::on_abort_say(replay_cmd(seed, o.servers, o.membership, o.snapshot_every));
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
  unsigned caught = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    sim_options o;
    o.seed = seed;
    o.disk_lies = true;
    o.chaos_ms = 4'000;
    sim_seeds::on_abort_say(replay_cmd(seed, o.servers));
    if (!run_simulation(o).ok) ++caught;
  }
  EXPECT_GT(caught, 0u);
}

// Why raft_group drops late frames: cowsql raft expects each peer's messages in order.
// Without the filter, reordering leaves some seeds' leaders stuck sending heartbeats to a
// follower that never catches up (or trips an assertion); with it the same seeds pass.
TEST(raft_sim, reordered_frames_stall_raft_without_the_order_filter) {
  unsigned stalled = 0;
  // Seeds 24 (3 servers), 3 and 15 (5 servers) stalled when this was found.
  for (auto [servers, last_seed] : {std::pair{3u, 40u}, std::pair{5u, 20u}}) {
    for (std::uint64_t seed = 1; seed <= last_seed && stalled == 0; ++seed) {
      sim_options o;
      o.seed = seed;
      o.servers = servers;
      o.drop_stale_frames = false;
      sim_seeds::on_abort_say(replay_cmd(seed, servers));
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
