// The seeded stream-group simulation (tests/unit/js/group_sim.h) over many seeds. A failure
// prints the seed and the command that replays it. Environment (for longer runs by hand):
//   PEREGRINE_GROUP_SIM_SEEDS=n       seeds (default 200; 40 under ASan)
//   PEREGRINE_GROUP_SIM_FIRST_SEED=s  first seed (default 1)
//   PEREGRINE_GROUP_SIM_STEPS=n       chaos steps per seed (default 300)
//   PEREGRINE_GROUP_SIM_SEED=s        run only this seed (the single_seed test)
//   PEREGRINE_GROUP_SIM_TRACE=1       with SEED: print every step and what the groups sent
//   PEREGRINE_GROUP_SIM_VERBOSE=1     one line per seed
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "src/base/log.h"
#include "src/js/stream.h"
#include "src/js/stream_config.h"
#include "src/js/stream_group.h"
#include "tests/unit/js/group_sim.h"
#include "tests/unit/sim_seeds.h"

namespace {

using js::sim::run_group_simulation;
using js::sim::sim_options;
using js::sim::sim_report;

using sim_seeds::env_or;

std::string replay_hint(const sim_options& o) {
  return "replay: PEREGRINE_GROUP_SIM_SEED=" + std::to_string(o.seed) + " PEREGRINE_GROUP_SIM_STEPS=" +
         std::to_string(o.steps) + " PEREGRINE_GROUP_SIM_TRACE=1 tests/unit/js/js_group_sim_test --gtest_filter='*single_seed*'";
}

constexpr std::uint64_t kDefaultSeeds = sim_seeds::kSanitized ? 20 : 200;

TEST(group_sim, many_seeds) {
  // Crash restarts make the agents warn (state cut back to the stream): expected here.
  if (!env_or("PEREGRINE_GROUP_SIM_VERBOSE", 0)) base::log_set_level(base::log_level::error);
  const auto range = sim_seeds::seeds_from_env("PEREGRINE_GROUP_SIM", kDefaultSeeds);
  const std::uint64_t first = range.first, count = range.count;
  const unsigned steps = unsigned(env_or("PEREGRINE_GROUP_SIM_STEPS", sim_options{}.steps));
  sim_report total;
  auto options = [&](std::uint64_t seed) {
    sim_options o;
    o.seed = seed;
    o.steps = steps;
    return o;
  };
  sim_seeds::run_range(
      range,
      [&](std::uint64_t seed) -> std::string {
        const sim_options o = options(seed);
        const sim_report r = run_group_simulation(o);
        total.published += r.published;
        total.delivered += r.delivered;
        total.redelivered += r.redelivered;
        total.acked += r.acked;
        total.restarts += r.restarts;
        total.crashes += r.crashes;
        total.removed += r.removed;
        if (range.verbose)
          std::printf("seed %llu: %llu published, %llu delivered (%llu redelivered), %llu restarts (%llu crashes)\n",
                      (unsigned long long)seed, (unsigned long long)r.published, (unsigned long long)r.delivered,
                      (unsigned long long)r.redelivered, (unsigned long long)r.restarts, (unsigned long long)r.crashes);
        if (r.ok) return {};
        return r.failure + "\nconfig:\n" + r.config + replay_hint(o);
      },
      [&](std::uint64_t seed) { return replay_hint(options(seed)); });
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
  sim_options o;
  o.seed = seed;
  o.steps = unsigned(env_or("PEREGRINE_GROUP_SIM_STEPS", o.steps));
  o.trace = env_or("PEREGRINE_GROUP_SIM_TRACE", 0) != 0;
  sim_seeds::on_abort_say(replay_hint(o));
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
    sim_seeds::on_abort_say(replay_hint(o));
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

// A PubAck held by a write that does not become durable is noticed as a write stall once it
// has waited kWriteStallNs (counted for /metrics, logged), and the ack still leaves when the
// write completes; a later stall counts again, and is logged only a minute after the last
// warning.
TEST(stream_write_stall, a_held_puback_is_counted_once_per_stall) {
  using namespace js;
  using namespace js::sim;
  constexpr std::int64_t kMs = 1'000'000;
  const std::string log_path = ::testing::TempDir() + "write_stall.log";
  std::filesystem::remove(log_path);
  base::log_set_file(log_path);
  const base::log_level level = base::log_get_level();  // the simulation tests quiet it
  base::log_set_level(base::log_level::info);
  sim_host host;
  sim_disk disk;
  bool commit = false;
  auto store = std::make_unique<sim_store>(disk, [&] { return commit; }, [](std::uint64_t, removal_cause) {});
  stream_config cfg;
  ASSERT_FALSE(parse_stream_config(R"({"name":"S","subjects":["s.>"],"storage":"file"})", cfg));
  ASSERT_FALSE(normalise(cfg));
  stream_group group(host, cfg, host.clock.wall_ns(), ::testing::TempDir() + "write_stall_S", std::move(store));
  group.get_stream().subscribe();
  host.listeners["_INBOX.ack"] = 1;
  auto acks = [&] {
    std::size_t n = 0;
    for (const auto& t : host.trace) n += t.k == trace_entry::publish && t.subject == "_INBOX.ack";
    return n;
  };
  auto poll = [&] { group.poll(host.clock.wall_ns()); };

  ASSERT_EQ(host.inject("s.1", "_INBOX.ack", "one"), 1u);
  poll();
  EXPECT_EQ(acks(), 0u) << "the write is not durable yet";
  host.clock.advance(stream::kWriteStallNs / 2);
  poll();
  EXPECT_EQ(group.get_stream().write_stalls(), 0u) << "not held long enough yet";
  host.clock.advance(stream::kWriteStallNs);
  poll();
  poll();
  EXPECT_EQ(group.get_stream().write_stalls(), 1u);
  EXPECT_EQ(acks(), 0u);
  commit = true;
  poll();
  EXPECT_EQ(acks(), 1u) << "the PubAck leaves once the write is durable";
  EXPECT_EQ(group.get_stream().write_stalls(), 1u);

  commit = false;
  ASSERT_EQ(host.inject("s.2", "_INBOX.ack", "two"), 1u);
  poll();
  host.clock.advance(stream::kWriteStallNs + kMs);
  poll();
  EXPECT_EQ(group.get_stream().write_stalls(), 2u) << "a second stall";
  commit = true;
  poll();
  EXPECT_EQ(acks(), 2u);

  host.clock.advance(stream::kStallLogEveryNs);
  commit = false;
  ASSERT_EQ(host.inject("s.3", "_INBOX.ack", "three"), 1u);
  poll();
  host.clock.advance(stream::kWriteStallNs + kMs);
  poll();
  EXPECT_EQ(group.get_stream().write_stalls(), 3u);
  commit = true;
  poll();
  EXPECT_EQ(acks(), 3u);

  base::log_set_file("");
  base::log_set_level(level);
  std::ifstream in(log_path);
  const std::string logged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (auto at = logged.find(what); at != std::string::npos; at = logged.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("[WRN] JetStream stream 'S': a PubAck has waited"), 2u)
      << "the second stall came within a minute of the first warning:\n" << logged;
  EXPECT_EQ(count("writes durable again"), 2u) << logged;
  std::filesystem::remove(log_path);
}
