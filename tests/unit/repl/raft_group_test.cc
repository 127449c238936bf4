#include "src/repl/raft_group.h"

#include <gtest/gtest.h>

#include <string>

#include "src/repl/memory_log_store.h"
#include "src/repl/raft_codec.h"

namespace {

using namespace repl;

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

group_config config(std::uint64_t self, std::vector<std::uint64_t> voters) {
  group_config c;
  c.group_id = 3;
  c.self = self;
  c.voters = std::move(voters);
  c.election_timeout_ms = 100;
  c.heartbeat_timeout_ms = 20;
  return c;
}

TEST(raft_group, a_single_voter_leads_at_once_and_applies_after_the_write_is_durable) {
  memory_log_store log;
  raft_group g(config(1, {1}), log);
  actions out;
  ASSERT_TRUE(g.start(1000, out)) << g.error();
  EXPECT_EQ(g.current_role(), role::leader);
  EXPECT_GE(g.term(), 1u);  // bootstrap term 1 (a sole voter elects itself at once)
  // The bootstrap configuration entry (index 1) is committed from the start.
  ASSERT_FALSE(out.applies.empty());
  EXPECT_EQ(out.applies[0].index, 1u);
  EXPECT_EQ(out.applies[0].value.type, entry_type::change);
  memory_log_store disk = log;  // what a crash right now would leave
  disk.crash(0);
  EXPECT_EQ(disk.load().hard.term, g.term());  // the term was durable before anything else
  // The new leader's barrier entry is written; once durable it commits.
  for (auto seq : out.writes) {
    log.sync_through(seq);
    actions done;
    g.on_persisted(1001, seq, done);
  }
  out.clear();
  const propose_result r = g.propose(1002, bytes_of("hello"), out);
  ASSERT_EQ(r.status, propose_status::ok);
  ASSERT_EQ(out.writes.size(), 1u);
  EXPECT_TRUE(out.applies.empty());  // not durable yet, so not committed
  EXPECT_EQ(log.entry_at(r.index)->data, bytes_of("hello"));
  log.sync_through(out.writes[0]);
  actions done;
  g.on_persisted(1003, out.writes[0], done);
  ASSERT_EQ(done.applies.size(), 1u);
  EXPECT_EQ(done.applies[0].index, r.index);
  EXPECT_EQ(done.applies[0].value.data, bytes_of("hello"));
  EXPECT_EQ(g.commit_index(), r.index);
  EXPECT_EQ(g.last_applied(), r.index);
}

// The publish path proposes everything that arrived in one turn together: one log append
// (one write to make durable) for the whole batch, consecutive indexes, applied in order.
TEST(raft_group, a_batch_of_proposals_is_one_write_with_consecutive_indexes) {
  memory_log_store log;
  raft_group g(config(1, {1}), log);
  actions out;
  ASSERT_TRUE(g.start(1000, out)) << g.error();
  for (auto seq : out.writes) {
    log.sync_through(seq);
    actions done;
    g.on_persisted(1001, seq, done);
  }
  out.clear();
  const auto a = bytes_of("first"), b = bytes_of(""), c = bytes_of("third entry");
  const std::span<const std::uint8_t> items[] = {a, b, c};
  const propose_result r = g.propose_batch(1002, items, out);
  ASSERT_EQ(r.status, propose_status::ok);
  ASSERT_EQ(out.writes.size(), 1u);
  EXPECT_EQ(g.last_index(), r.index + 2);
  EXPECT_EQ(log.entry_at(r.index)->data, a);
  EXPECT_EQ(log.entry_at(r.index + 1)->data, b);
  EXPECT_EQ(log.entry_at(r.index + 2)->data, c);
  EXPECT_EQ(log.entry_at(r.index + 2)->type, entry_type::command);
  log.sync_through(out.writes[0]);
  actions done;
  g.on_persisted(1003, out.writes[0], done);
  ASSERT_EQ(done.applies.size(), 3u);
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_EQ(done.applies[i].index, r.index + i);
  EXPECT_EQ(done.applies[2].value.data, c);
}

TEST(raft_group, a_follower_refuses_a_batch) {
  memory_log_store log;
  raft_group g(config(1, {1, 2, 3}), log);
  actions out;
  ASSERT_TRUE(g.start(0, out));
  const auto a = bytes_of("x");
  const std::span<const std::uint8_t> items[] = {a};
  EXPECT_EQ(g.propose_batch(1, items, out).status, propose_status::not_leader);
  EXPECT_TRUE(out.writes.empty());
}

// A batch travels to a follower as entries it stores and commits in order, like single
// proposals (two voters; every write made durable at once, every frame delivered).
TEST(raft_group, a_batch_reaches_the_follower_and_commits_there) {
  memory_log_store a_log, b_log;
  raft_group a(config(1, {1, 2}), a_log), b(config(2, {1, 2}), b_log);
  actions a_out, b_out;
  ASSERT_TRUE(a.start(0, a_out) && b.start(0, b_out));
  std::vector<committed_entry> b_applied;
  std::uint64_t now = 1000;
  // Writes durable at once, frames delivered both ways, until nothing is left to do.
  auto settle = [&] {
    for (int round = 0; round < 50 && (!a_out.sends.empty() || !b_out.sends.empty() || !a_out.writes.empty() ||
                                       !b_out.writes.empty());
         ++round) {
      ++now;
      actions a_next, b_next;
      for (auto seq : a_out.writes) {
        a_log.sync_through(seq);
        a.on_persisted(now, seq, a_next);
      }
      for (auto seq : b_out.writes) {
        b_log.sync_through(seq);
        b.on_persisted(now, seq, b_next);
      }
      for (auto& f : a_out.sends) b.on_frame(now, f.frame, b_next);
      for (auto& f : b_out.sends) a.on_frame(now, f.frame, a_next);
      for (auto& e : b_out.applies) b_applied.push_back(e);
      a_out = std::move(a_next);
      b_out = std::move(b_next);
    }
    for (auto& e : b_out.applies) b_applied.push_back(e);
    b_out.applies.clear();
  };
  a_out.clear();
  a.on_timeout(now, a_out);
  settle();
  ASSERT_EQ(a.current_role(), role::leader);
  const auto x = bytes_of("one"), y = bytes_of("two"), z = bytes_of(std::string(300, 'z'));
  const std::span<const std::uint8_t> items[] = {x, y, z};
  const propose_result r = a.propose_batch(now, items, a_out);
  ASSERT_EQ(r.status, propose_status::ok);
  settle();
  ++now;
  a.on_timeout(now + 1000, a_out);  // a heartbeat carries the new commit index
  settle();
  EXPECT_GE(a.commit_index(), r.index + 2);
  EXPECT_GE(b.commit_index(), r.index + 2);
  ASSERT_NE(b_log.entry_at(r.index + 2), nullptr);
  EXPECT_EQ(b_log.entry_at(r.index)->data, x);
  EXPECT_EQ(b_log.entry_at(r.index + 1)->data, y);
  EXPECT_EQ(b_log.entry_at(r.index + 2)->data, z);
  std::vector<std::vector<std::uint8_t>> commands;
  for (const auto& e : b_applied)
    if (e.value.type == entry_type::command) commands.push_back(e.value.data);
  ASSERT_EQ(commands.size(), 3u);
  EXPECT_EQ(commands[2], z);
  EXPECT_FALSE(a.failed() || b.failed());
}

TEST(raft_group, a_follower_refuses_proposals_and_asks_for_votes_after_its_timeout) {
  memory_log_store log;
  raft_group g(config(1, {1, 2, 3}), log);
  actions out;
  ASSERT_TRUE(g.start(0, out));
  EXPECT_EQ(g.current_role(), role::follower);
  EXPECT_EQ(g.propose(1, bytes_of("x"), out).status, propose_status::not_leader);
  ASSERT_TRUE(out.timer_at);
  EXPECT_GE(*out.timer_at, 100u);
  EXPECT_LT(*out.timer_at, 200u);  // randomized in [t, 2t)
  actions vote;
  g.on_timeout(*out.timer_at, vote);
  ASSERT_EQ(vote.sends.size(), 2u);  // a pre-vote to each peer
  for (const auto& f : vote.sends) {
    auto d = decode_frame(f.frame);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->route.group, 3u);
    EXPECT_EQ(d->route.to, f.to);
    EXPECT_EQ(d->msg.type, RAFT_REQUEST_VOTE);
    EXPECT_TRUE(d->msg.request_vote.pre_vote);
  }
}

TEST(raft_group, frames_for_another_group_or_server_or_garbage_are_dropped) {
  memory_log_store a_log, b_log;
  raft_group a(config(1, {1, 2}), a_log);
  raft_group b(config(2, {1, 2}), b_log);
  actions out;
  ASSERT_TRUE(a.start(0, out) && b.start(0, out));
  actions vote;
  a.on_timeout(1000, vote);
  ASSERT_EQ(vote.sends.size(), 1u);
  auto frame = vote.sends[0].frame;
  actions ignored;
  a.on_frame(1001, frame, ignored);  // addressed to server 2
  EXPECT_EQ(a.dropped_frames(), 1u);
  auto other_group = frame;
  other_group[1] ^= 1;
  b.on_frame(1001, other_group, ignored);
  const std::vector<std::uint8_t> garbage{1, 2, 3};
  b.on_frame(1001, garbage, ignored);
  EXPECT_EQ(b.dropped_frames(), 2u);
  EXPECT_TRUE(ignored.sends.empty());
  actions reply;
  b.on_frame(1001, frame, reply);  // the real one is answered
  EXPECT_EQ(b.dropped_frames(), 2u);
  EXPECT_EQ(reply.sends.size(), 1u);
  actions again;
  b.on_frame(1002, frame, again);  // a duplicate is not
  EXPECT_EQ(b.stale_frames(), 1u);
  EXPECT_TRUE(again.sends.empty());
}

TEST(raft_group, random_bytes_and_a_second_leader_of_the_same_term_are_dropped) {
  memory_log_store log;
  raft_group leader(config(1, {1}), log);  // a sole voter: leader at once
  actions out;
  ASSERT_TRUE(leader.start(0, out));
  ASSERT_EQ(leader.current_role(), role::leader);
  std::uint64_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::uint8_t> junk(std::size_t(i % 97));
    for (auto& b : junk) b = std::uint8_t((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 56);
    actions ignored;
    leader.on_frame(1, junk, ignored);
  }
  EXPECT_EQ(leader.dropped_frames(), 2000u);
  EXPECT_EQ(leader.current_role(), role::leader);

  // Two voters: server 1 wins an election, then a frame "from 2" claims to lead its term.
  memory_log_store a_log, b_log;
  raft_group a(config(1, {1, 2}), a_log), b(config(2, {1, 2}), b_log);
  actions a_out, b_out;
  ASSERT_TRUE(a.start(0, a_out) && b.start(0, b_out));
  a_out.clear();
  a.on_timeout(1000, a_out);
  for (int round = 0; round < 10 && a.current_role() != role::leader; ++round) {
    b_out.clear();
    for (auto& f : a_out.sends) b.on_frame(1001 + round, f.frame, b_out);
    a_out.clear();
    for (auto& f : b_out.sends) a.on_frame(1001 + round, f.frame, a_out);
  }
  ASSERT_EQ(a.current_role(), role::leader);
  raft_message lie{};
  lie.type = RAFT_APPEND_ENTRIES;
  lie.server_id = 1;
  lie.append_entries = {1, a.term(), 0, 0, 0, nullptr, 0};
  std::vector<std::uint8_t> frame;
  ASSERT_TRUE(encode_frame(frame, {3, 2, 0, 99, 1}, lie, b_log));
  const auto before = a.dropped_frames();
  actions ignored;
  a.on_frame(2000, frame, ignored);
  EXPECT_EQ(a.dropped_frames(), before + 1);
  EXPECT_EQ(a.current_role(), role::leader);
  EXPECT_FALSE(a.failed());
}

TEST(raft_group, a_restart_recovers_term_vote_and_entries_from_the_store) {
  memory_log_store log;
  std::uint64_t index = 0, term = 0;
  {
    raft_group g(config(1, {1}), log);
    actions out;
    ASSERT_TRUE(g.start(0, out));
    for (auto seq : out.writes) log.sync_through(seq);
    const propose_result r = g.propose(1, bytes_of("kept"), out);
    ASSERT_EQ(r.status, propose_status::ok);
    index = r.index;
    term = g.term();
    log.sync_through(log.last_seq());
  }
  log.crash(0);
  raft_group g(config(1, {1}), log);
  actions out;
  ASSERT_TRUE(g.start(10, out)) << g.error();
  EXPECT_GE(g.term(), term);
  EXPECT_EQ(g.current_role(), role::leader);
  ASSERT_NE(log.entry_at(index), nullptr);
  EXPECT_EQ(log.entry_at(index)->data, bytes_of("kept"));
}

TEST(raft_group, a_server_outside_the_voters_cannot_start) {
  memory_log_store log;
  raft_group g(config(4, {1, 2, 3}), log);
  actions out;
  EXPECT_FALSE(g.start(0, out));
  EXPECT_NE(g.error().find("not one of the group's voters"), std::string::npos);
}

}  // namespace

namespace {

TEST(raft_group, leadership_transfer_needs_a_leader_and_another_voter) {
  memory_log_store solo_log;
  raft_group solo(config(1, {1}), solo_log);
  actions out;
  ASSERT_TRUE(solo.start(0, out));
  ASSERT_EQ(solo.current_role(), role::leader);
  EXPECT_FALSE(solo.transfer_leadership(1, 1, out));  // to itself
  EXPECT_FALSE(solo.transfer_leadership(1, 7, out));  // not a voter
  memory_log_store log;
  raft_group follower(config(1, {1, 2, 3}), log);
  ASSERT_TRUE(follower.start(0, out));
  EXPECT_FALSE(follower.transfer_leadership(1, 2, out));
  EXPECT_FALSE(follower.failed());
}

}  // namespace
