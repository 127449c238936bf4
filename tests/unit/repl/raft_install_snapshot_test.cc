// InstallSnapshot larger than one frame, end to end between three raft_groups: the leader
// compacts its log while a follower is cut off, the follower then gets the snapshot as chunk
// frames plus the final InstallSnapshot (raft_codec.h), joins them and applies the state.
// A lost middle chunk makes that install fail; raft sends it again and the second one lands.
// No threads or sleeps: a fake clock, writes durable at once, a frame filter for the faults.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "src/repl/memory_log_store.h"
#include "src/repl/raft_codec.h"
#include "src/repl/raft_group.h"

namespace {

using namespace repl;

constexpr std::size_t kRouteBytes = 1 + 5 * 8;  // version, group, from, to, incarnation, seq

struct three_servers {
  memory_log_store logs[3];
  std::vector<std::unique_ptr<raft_group>> groups;
  actions pending[3];
  std::optional<std::uint64_t> timers[3];
  std::vector<committed_entry> applied[3];
  std::uint64_t now = 1000;
  // True: the frame from server index `from` to index `to` is lost.
  std::function<bool(int from, int to, const std::vector<std::uint8_t>&)> lose = [](int, int, auto&) {
    return false;
  };

  three_servers() {
    for (int i = 0; i < 3; ++i) {
      group_config c;
      c.group_id = 9;
      c.self = std::uint64_t(i + 1);
      c.voters = {1, 2, 3};
      c.election_timeout_ms = 100;
      c.heartbeat_timeout_ms = 20;
      c.snapshot_trailing = 2;
      c.install_snapshot_timeout_ms = 300;
      c.seed = std::uint64_t(17 + i);  // distinct election timeouts: no endless split vote
      groups.push_back(std::make_unique<raft_group>(c, logs[i]));
      EXPECT_TRUE(groups.back()->start(now, pending[i])) << groups.back()->error();
    }
  }

  raft_group& g(int i) { return *groups[std::size_t(i)]; }

  // One step of 5 ms: every write made durable, every frame delivered (unless lost), every
  // due timer fired.
  void step() {
    now += 5;
    actions next[3];
    for (int i = 0; i < 3; ++i) {
      actions& out = pending[i];
      if (out.timer_at) timers[i] = out.timer_at;
      for (auto& e : out.applies) applied[i].push_back(std::move(e));
      for (auto seq : out.writes) {
        logs[i].sync_through(seq);
        g(i).on_persisted(now, seq, next[i]);
      }
      for (auto& f : out.sends) {
        const int to = int(f.to) - 1;
        if (!lose(i, to, f.frame)) g(to).on_frame(now, f.frame, next[to]);
      }
    }
    for (int i = 0; i < 3; ++i) {
      if (timers[i] && *timers[i] <= now) {
        timers[i].reset();
        g(i).on_timeout(now, next[i]);
      }
      pending[i] = std::move(next[i]);
    }
  }

  // Steps until `done`; what was applied meanwhile is in applied[] (also the last step's).
  void run_until(const std::function<bool()>& done, int max_steps) {
    for (int s = 0; s < max_steps && !done(); ++s) step();
    for (int i = 0; i < 3; ++i) {
      for (auto& e : pending[i].applies) applied[i].push_back(std::move(e));
      pending[i].applies.clear();
    }
  }

  int leader() {
    for (int i = 0; i < 3; ++i)
      if (g(i).current_role() == role::leader) return i;
    return -1;
  }
};

bool is_chunk(const std::vector<std::uint8_t>& frame) {
  return frame.size() > kRouteBytes && frame[kRouteBytes] == kSnapshotChunkType;
}

std::uint64_t chunk_offset(const std::vector<std::uint8_t>& frame) {
  std::uint64_t v = 0;
  for (int b = 7; b >= 0; --b) v = (v << 8) | frame[kRouteBytes + 1 + 8 + std::size_t(b)];
  return v;
}

// A state of `size` bytes no two chunks of which are alike.
std::shared_ptr<const std::vector<std::uint8_t>> big_state(std::size_t size) {
  auto v = std::make_shared<std::vector<std::uint8_t>>(size);
  std::uint64_t x = 88172645463325252ull;
  for (auto& b : *v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = std::uint8_t(x);
  }
  return v;
}

// The cluster with a leader, a follower cut off while 40 entries commit, and the leader's
// snapshot of a state over two chunks; returns (leader, lagging follower).
std::pair<int, int> compact_while_one_is_away(three_servers& c,
                                              const std::shared_ptr<const std::vector<std::uint8_t>>& state) {
  c.run_until([&] { return c.leader() >= 0; }, 400);
  const int l = c.leader();
  EXPECT_GE(l, 0);
  if (l < 0) return {-1, -1};
  const int away = (l + 1) % 3;
  c.lose = [away](int from, int to, auto&) { return from == away || to == away; };
  std::uint64_t last = 0;
  for (int k = 0; k < 40; ++k) {
    const std::string s = "entry " + std::to_string(k);
    const std::vector<std::uint8_t> data(s.begin(), s.end());
    const propose_result r = c.g(l).propose(c.now, data, c.pending[l]);
    EXPECT_EQ(r.status, propose_status::ok);
    last = r.index;
    c.step();
  }
  c.run_until([&] { return c.g(l).last_applied() >= last; }, 200);
  EXPECT_GE(c.g(l).last_applied(), last);
  EXPECT_TRUE(c.g(l).take_snapshot(c.now, c.g(l).last_applied(), state, c.pending[l]));
  c.run_until([&] { return c.pending[l].writes.empty(); }, 20);
  EXPECT_EQ(c.g(l).snapshot_index(), last);
  // The follower needs entries the leader no longer has.
  EXPECT_GT(c.logs[l].first_index(), c.g(away).last_index() + 1);
  return {l, away};
}

std::vector<std::uint8_t> installed_state(const std::vector<committed_entry>& applied) {
  for (auto it = applied.rbegin(); it != applied.rend(); ++it)
    if (it->value.type == entry_type::snapshot) return it->value.data;
  return {};
}

TEST(raft_install_snapshot, a_snapshot_over_two_chunks_reaches_a_follower_whole) {
  three_servers c;
  const auto state = big_state(2 * kSnapshotChunk + 12345);
  const auto [l, away] = compact_while_one_is_away(c, state);
  ASSERT_GE(l, 0);
  std::vector<std::uint64_t> offsets;
  c.lose = [&offsets](int, int, const std::vector<std::uint8_t>& f) {
    if (is_chunk(f)) offsets.push_back(chunk_offset(f));
    return false;
  };
  c.run_until([&] { return c.g(away).snapshot_index() == c.g(l).snapshot_index(); }, 400);
  ASSERT_EQ(c.g(away).snapshot_index(), c.g(l).snapshot_index());
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, kSnapshotChunk}));
  EXPECT_TRUE(installed_state(c.applied[away]) == *state);
  ASSERT_NE(c.logs[away].snapshot(), nullptr);
  ASSERT_TRUE(c.logs[away].snapshot()->data);
  EXPECT_TRUE(*c.logs[away].snapshot()->data == *state);

  // The follower is in the log again: the next entry commits and applies there.
  const std::vector<std::uint8_t> after{'n', 'e', 'x', 't'};
  const propose_result r = c.g(l).propose(c.now, after, c.pending[l]);
  ASSERT_EQ(r.status, propose_status::ok);
  c.run_until([&] { return c.g(away).last_applied() >= r.index; }, 400);
  ASSERT_FALSE(c.applied[away].empty());
  EXPECT_EQ(c.applied[away].back().index, r.index);
  EXPECT_EQ(c.applied[away].back().value.data, after);
  EXPECT_FALSE(c.g(0).failed() || c.g(1).failed() || c.g(2).failed());
}

TEST(raft_install_snapshot, a_lost_middle_chunk_fails_that_install_and_the_resend_lands) {
  three_servers c;
  const auto state = big_state(2 * kSnapshotChunk + 99);
  const auto [l, away] = compact_while_one_is_away(c, state);
  ASSERT_GE(l, 0);
  int lost = 0, chunks = 0;
  c.lose = [&](int, int, const std::vector<std::uint8_t>& f) {
    if (!is_chunk(f)) return false;
    ++chunks;
    if (lost == 0 && chunk_offset(f) == kSnapshotChunk) return ++lost, true;
    return false;
  };
  const std::uint64_t dropped_before = c.g(away).dropped_frames();
  c.run_until([&] { return c.g(away).snapshot_index() == c.g(l).snapshot_index(); }, 1000);
  ASSERT_EQ(c.g(away).snapshot_index(), c.g(l).snapshot_index());
  EXPECT_EQ(lost, 1);
  EXPECT_GE(chunks, 4);  // the first install's two chunks and the resend's
  // The final frame of the broken install was dropped, not taken as a short snapshot.
  EXPECT_GT(c.g(away).dropped_frames(), dropped_before);
  std::size_t snapshots = 0;
  for (const auto& e : c.applied[away]) snapshots += e.value.type == entry_type::snapshot;
  EXPECT_EQ(snapshots, 1u);
  EXPECT_TRUE(installed_state(c.applied[away]) == *state);
  EXPECT_FALSE(c.g(0).failed() || c.g(1).failed() || c.g(2).failed());
}

}  // namespace
