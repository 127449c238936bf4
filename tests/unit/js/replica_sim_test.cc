// The seeded replicated-JetStream simulation (tests/unit/js/replica_sim.h) over many seeds.
// A failure prints the seed and the command that replays it. Environment:
//   PEREGRINE_REPLICA_SIM_SEEDS=n       seeds per cluster size (default 150 for 3 servers and
//                                       75 for 5; 10 and 5 under ASan)
//   PEREGRINE_REPLICA_SIM_FIRST_SEED=s  first seed (default 1)
//   PEREGRINE_REPLICA_SIM_SEED=s        run only this seed (with PEREGRINE_REPLICA_SIM_SERVERS=n)
//   PEREGRINE_REPLICA_SIM_VERBOSE=1     one line per seed
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/unit/js/replica_sim.h"
#include "tests/unit/sim_seeds.h"

namespace {

using js::sim::replica_sim_options;
using js::sim::replica_sim_report;
using js::sim::run_replica_simulation;

using sim_seeds::env_or;
using sim_seeds::kSanitized;

std::string replay_hint(const replica_sim_options& o) {
  return std::string("replay: ") + (o.async_proposals ? "PEREGRINE_REPLICA_SIM_ASYNC=1 " : "") +
         "PEREGRINE_REPLICA_SIM_SEED=" + std::to_string(o.seed) +
         " PEREGRINE_REPLICA_SIM_SERVERS=" + std::to_string(o.servers) +
         " setarch -R tests/unit/js/js_replica_sim --gtest_filter='*single_seed*'";
}

void print(const char* what, const replica_sim_report& r) {
  std::printf("%s: %llu events, %llu publishes, %llu acked, %llu stored, %llu crashes, %llu "
              "stepdowns, %llu leaders, %llu lost proposals, recovery %llu ms, %llu consumer "
              "deliveries, %llu confirmed acks\n",
              what, (unsigned long long)r.events, (unsigned long long)r.published,
              (unsigned long long)r.acked, (unsigned long long)r.stored,
              (unsigned long long)r.crashes, (unsigned long long)r.stepdowns,
              (unsigned long long)r.leaders, (unsigned long long)r.lost,
              (unsigned long long)r.recovery_ms, (unsigned long long)r.deliveries,
              (unsigned long long)r.confirmed_acks);
}

bool g_async = false;  // run_seeds' runs use the asynchronous proposal path

replica_sim_options options(std::uint64_t seed, unsigned servers) {
  replica_sim_options o;
  o.seed = seed;
  o.servers = servers;
  o.async_proposals = g_async || env_or("PEREGRINE_REPLICA_SIM_ASYNC", 0) != 0;
  return o;
}

void run_seeds(unsigned servers, std::uint64_t default_count) {
  const auto range = sim_seeds::seeds_from_env("PEREGRINE_REPLICA_SIM", default_count);
  replica_sim_report total;
  std::uint64_t worst_recovery = 0;
  sim_seeds::run_range(
      range,
      [&](std::uint64_t seed) -> std::string {
        const replica_sim_options o = options(seed, servers);
        const replica_sim_report r = run_replica_simulation(o);
        total.events += r.events;
        total.published += r.published;
        total.acked += r.acked;
        total.stored += r.stored;
        total.crashes += r.crashes;
        total.stepdowns += r.stepdowns;
        total.leaders += r.leaders;
        total.lost += r.lost;
        total.deliveries += r.deliveries;
        total.confirmed_acks += r.confirmed_acks;
        worst_recovery = std::max(worst_recovery, r.recovery_ms);
        if (range.verbose) print(("seed " + std::to_string(seed)).c_str(), r);
        if (r.ok) return {};
        return "(" + std::to_string(servers) + " servers) " + r.failure + "\n" + replay_hint(o);
      },
      [&](std::uint64_t seed) { return replay_hint(options(seed, servers)); });
  total.recovery_ms = worst_recovery;
  print((std::to_string(servers) + " servers, " + std::to_string(range.count) + " seeds from " +
         std::to_string(range.first) + " (slowest recovery)").c_str(),
        total);
}

TEST(replica_sim, three_servers_many_seeds) { run_seeds(3, kSanitized ? 10 : 150); }

TEST(replica_sim, five_servers_many_seeds) { run_seeds(5, kSanitized ? 5 : 75); }

// The server's publish path (no wait per proposal, batches per turn, results before applies,
// refusals after a lost term) under the same faults and checkers.
TEST(replica_sim, async_proposals_many_seeds) {
  g_async = true;
  run_seeds(3, kSanitized ? 5 : 60);
  g_async = false;
}

TEST(replica_sim, single_seed) {
  const std::uint64_t seed = env_or("PEREGRINE_REPLICA_SIM_SEED", 0);
  if (seed == 0) GTEST_SKIP() << "set PEREGRINE_REPLICA_SIM_SEED to replay one seed";
  replica_sim_options o;
  o.seed = seed;
  o.servers = unsigned(env_or("PEREGRINE_REPLICA_SIM_SERVERS", 3));
  o.async_proposals = env_or("PEREGRINE_REPLICA_SIM_ASYNC", 0) != 0;
  sim_seeds::on_abort_say(replay_hint(o));
  const replica_sim_report r = run_replica_simulation(o);
  EXPECT_TRUE(r.ok) << r.failure;
  print(("seed " + std::to_string(seed)).c_str(), r);
}

TEST(replica_sim, a_seed_replays_exactly) {
  replica_sim_options o;
  o.seed = 77;
  o.servers = 5;
  const replica_sim_report a = run_replica_simulation(o);
  const replica_sim_report b = run_replica_simulation(o);
  ASSERT_TRUE(a.ok) << a.failure;
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.acked, b.acked);
  EXPECT_EQ(a.stored, b.stored);
  EXPECT_EQ(a.crashes, b.crashes);
  EXPECT_EQ(a.recovery_ms, b.recovery_ms);
  EXPECT_GT(a.acked, 50u);
}

// The checkers have teeth: PubAcks sent when the leader proposes, before a majority holds
// the entry, lose acknowledged messages under crashes and partitions.
TEST(replica_sim, acking_before_commit_is_caught) {
  unsigned caught = 0;
  for (std::uint64_t seed = 1; seed <= 10 && caught == 0; ++seed) {
    replica_sim_options o;
    o.seed = seed;
    o.ack_before_commit = true;
    sim_seeds::on_abort_say(replay_hint(o));
    const auto r = run_replica_simulation(o);
    if (!r.ok) {
      ++caught;
      std::printf("acking before commit, seed %llu: %s\n", (unsigned long long)seed,
                  r.failure.substr(0, 120).c_str());
    }
  }
  EXPECT_GT(caught, 0u);
}

// Why a new leader waits for its leader_start entry: taking writes at once, it numbers them
// after what it has applied, while entries of the previous leader are still to commit, and
// two messages claim one sequence.
TEST(replica_sim, leader_taking_writes_before_leader_start_is_caught) {
  unsigned caught = 0;
  for (std::uint64_t seed = 1; seed <= 20 && caught == 0; ++seed) {
    replica_sim_options o;
    o.seed = seed;
    o.skip_leader_start = true;
    sim_seeds::on_abort_say(replay_hint(o));
    const auto r = run_replica_simulation(o);
    if (!r.ok) {
      ++caught;
      std::printf("without leader_start, seed %llu: %s\n", (unsigned long long)seed,
                  r.failure.substr(0, 140).c_str());
    }
  }
  EXPECT_GT(caught, 0u);
}

// Without faults every publish is acknowledged once and stored once.
TEST(replica_sim, fault_free_run_acks_everything) {
  replica_sim_options o;
  o.seed = 5;
  o.crashes = o.partitions = o.stepdowns = o.torn_writes = false;
  o.loss = o.duplicate = 0;
  const replica_sim_report r = run_replica_simulation(o);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.crashes, 0u);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_GT(r.acked, 200u);
  EXPECT_EQ(r.acked - r.acked_expiring, r.stored);  // D's messages expire
  EXPECT_GT(r.acked_expiring, 0u);
  EXPECT_LT(r.expiring_stored, r.acked_expiring);
  EXPECT_EQ(r.expiring_checked, 1u);
  EXPECT_GT(r.confirmed_acks, 50u);
  EXPECT_GE(r.deliveries, r.confirmed_acks);
}

// Expiry by each replica's own clock makes replicas at one applied index differ.
TEST(replica_sim, expiry_by_local_clocks_is_caught) {
  unsigned caught = 0;
  for (std::uint64_t seed = 1; seed <= 10 && caught == 0; ++seed) {
    replica_sim_options o;
    o.seed = seed;
    o.local_expiry = true;
    sim_seeds::on_abort_say(replay_hint(o));
    const auto r = run_replica_simulation(o);
    if (!r.ok) {
      ++caught;
      std::printf("expiry by local clocks, seed %llu: %s\n", (unsigned long long)seed,
                  r.failure.substr(0, 140).c_str());
    }
  }
  EXPECT_GT(caught, 0u);
}

// Stepdowns alone: leadership moves, no proposal is acknowledged wrongly, nothing is lost.
TEST(replica_sim, stepdowns_only) {
  // Several seeds, so that the count does not hang on one seed's random path.
  std::uint64_t stepdowns = 0;
  for (std::uint64_t seed = 3; seed <= 6; ++seed) {
    replica_sim_options o;
    o.seed = seed;
    o.crashes = o.partitions = o.torn_writes = false;
    o.loss = o.duplicate = 0;
    const replica_sim_report r = run_replica_simulation(o);
    ASSERT_TRUE(r.ok) << "seed " << seed << ": " << r.failure;
    EXPECT_GT(r.leaders, 4u) << "seed " << seed;  // more than one per group (meta and three streams)
    stepdowns += r.stepdowns;
  }
  EXPECT_GT(stepdowns, 8u);
}

}  // namespace

// An ack confirmed before it commits can be lost with its leader: the message comes again.
TEST(replica_sim, confirming_acks_before_commit_is_caught) {
  unsigned caught = 0;
  for (std::uint64_t seed = 1; seed <= 20 && caught == 0; ++seed) {
    replica_sim_options o;
    o.seed = seed;
    o.confirm_ack_at_proposal = true;
    sim_seeds::on_abort_say(replay_hint(o));
    const auto r = run_replica_simulation(o);
    if (!r.ok) {
      ++caught;
      std::printf("confirming acks at proposal, seed %llu: %s\n", (unsigned long long)seed,
                  r.failure.substr(0, 140).c_str());
    }
  }
  EXPECT_GT(caught, 0u);
}
