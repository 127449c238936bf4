// stream_replica over a fake replicated log: what the leader checks against proposed state,
// when PubAcks leave, what followers and deposed leaders do.
#include "src/js/delete_markers.h"
#include "tests/unit/js/stream_replica_rig.h"

namespace {

using namespace stream_replica_rig;
using js::api_error;

TEST(StreamReplica, FollowerRefusesWithoutAnswer) {
  rig r;
  r.log.leader = false;
  r.replica.on_role(kNow);
  EXPECT_EQ(r.pub("orders.1"), submit_status::not_leader);
  EXPECT_TRUE(r.replies.empty());
  EXPECT_TRUE(r.log.proposed.empty());
}

TEST(StreamReplica, LeaderTakesWritesOnlyOnceItsLeaderStartIsApplied) {
  rig r;
  r.replica.on_role(kNow);
  ASSERT_EQ(r.log.proposed.size(), 1u);  // leader_start
  EXPECT_EQ(r.pub("orders.1"), submit_status::not_ready);
  r.commit_all();
  EXPECT_TRUE(r.replica.ready());
  EXPECT_EQ(r.pub("orders.1"), submit_status::proposed);
}

TEST(StreamReplica, PubAckOnlyAfterCommitAndApply) {
  rig r;
  r.become_ready();
  EXPECT_EQ(r.pub("orders.1", "", 11), submit_status::proposed);
  EXPECT_EQ(r.pub("orders.2", "", 12), submit_status::proposed);
  EXPECT_TRUE(r.replies.empty());
  EXPECT_EQ(r.store.last_seq(), 0u);
  auto acks = r.commit_all();
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0].token, 11u);
  EXPECT_EQ(acks[0].seq, 1u);
  EXPECT_EQ(acks[1].token, 12u);
  EXPECT_EQ(acks[1].seq, 2u);
  EXPECT_FALSE(acks[1].duplicate);
  EXPECT_EQ(r.store.last_seq(), 2u);
  EXPECT_EQ(r.replica.pending(), 0u);
}

TEST(StreamReplica, ExpectedLastSequenceSeesProposedMessages) {
  rig r;
  r.become_ready();
  ASSERT_EQ(r.pub("orders.1"), submit_status::proposed);
  EXPECT_EQ(r.pub("orders.2", "NATS/1.0\r\nNats-Expected-Last-Sequence: 1\r\n\r\n"),
            submit_status::proposed);
  EXPECT_EQ(r.pub("orders.3", "NATS/1.0\r\nNats-Expected-Last-Sequence: 1\r\n\r\n"),
            submit_status::answered);
  ASSERT_EQ(r.replies.size(), 1u);
  ASSERT_TRUE(r.replies[0].error);
  EXPECT_EQ(r.replies[0].error->err_code, 10071);
  EXPECT_EQ(r.replies[0].error->description, "wrong last sequence: 2");
}

TEST(StreamReplica, ExpectedLastSubjectSequenceSeesProposedMessages) {
  rig r;
  r.become_ready();
  ASSERT_EQ(r.pub("orders.a"), submit_status::proposed);
  ASSERT_EQ(r.pub("orders.b"), submit_status::proposed);
  EXPECT_EQ(r.pub("orders.a", "NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 1\r\n\r\n"),
            submit_status::proposed);
  EXPECT_EQ(r.pub("orders.a", "NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 1\r\n\r\n"),
            submit_status::answered);
  ASSERT_EQ(r.replies.size(), 1u);
  EXPECT_EQ(r.replies[0].error->description, "wrong last sequence: 3");
}

TEST(StreamReplica, MsgIdRetryWhileInFlightGetsTheOriginalSequence) {
  rig r;
  r.become_ready();
  const std::string id = "NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n";
  ASSERT_EQ(r.pub("orders.1", id, 1), submit_status::proposed);
  ASSERT_EQ(r.pub("orders.1", id, 2), submit_status::proposed);  // retried before the ack
  EXPECT_EQ(r.log.proposed.size(), 1u);  // not proposed twice
  auto acks = r.commit_all();
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0].seq, 1u);
  EXPECT_FALSE(acks[0].duplicate);
  EXPECT_EQ(acks[1].token, 2u);
  EXPECT_EQ(acks[1].seq, 1u);
  EXPECT_TRUE(acks[1].duplicate);
  // After the commit a retry is answered at once.
  EXPECT_EQ(r.pub("orders.1", id, 3), submit_status::answered);
  ASSERT_EQ(r.replies.size(), 1u);
  EXPECT_TRUE(r.replies[0].duplicate);
  EXPECT_EQ(r.replies[0].seq, 1u);
}

TEST(StreamReplica, DiscardNewCountsProposedMessages) {
  auto c = config();
  c.max_msgs = 2;
  c.discard = js::discard_policy::new_msgs;
  rig r(c);
  r.become_ready();
  ASSERT_EQ(r.pub("orders.1"), submit_status::proposed);
  ASSERT_EQ(r.pub("orders.2"), submit_status::proposed);
  EXPECT_EQ(r.pub("orders.3"), submit_status::answered);
  ASSERT_EQ(r.replies.size(), 1u);
  EXPECT_EQ(r.replies[0].error->err_code, 10077);
  EXPECT_EQ(r.replies[0].error->description, "maximum messages exceeded");
}

TEST(StreamReplica, DiscardOldLimitsApplyTheSameEverywhere) {
  auto c = config();
  c.max_msgs = 2;
  rig leader(c), follower(c);
  follower.log.leader = false;
  leader.become_ready();
  for (int i = 0; i < 4; ++i) leader.pub("orders." + std::to_string(i));
  std::vector<replica_reply> ignored;
  for (auto& e : leader.log.history) follower.replica.apply(e, ignored);
  leader.commit_all();
  EXPECT_EQ(leader.store.state(), follower.store.state());
  EXPECT_EQ(follower.store.state().msgs, 2u);
  EXPECT_EQ(follower.store.first_seq(), 3u);
}

TEST(StreamReplica, ProposalOverwrittenByAnotherTermIsNeverAcked) {
  rig r;
  r.become_ready();  // leader_start at index 1
  ASSERT_EQ(r.pub("orders.1", "", 7), submit_status::proposed);  // index 2, term 1
  r.log.proposed.clear();  // lost with the partition
  // The new leader's (term 2) leader_start took index 2.
  fake_log other;
  other.current_term = 2;
  other.next_index = 2;
  storage::memory_store other_store;
  js::stream_replica other_replica(config(), other_store, other, "s2");
  other_replica.on_role(kNow);
  r.log.leader = false;
  r.replica.on_role(kNow);
  std::vector<replica_reply> out;
  r.replica.apply(other.proposed.at(0), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.replica.pending(), 0u);
  EXPECT_EQ(r.replica.lost_proposals(), 1u);
  EXPECT_EQ(r.store.last_seq(), 0u);
}

TEST(StreamReplica, NewLeaderResumesAfterTheAppliedSequence) {
  rig a, b;
  b.log.leader = false;
  a.become_ready();
  a.pub("orders.1");
  a.pub("orders.2");
  std::vector<replica_reply> ignored;
  for (auto& e : a.log.history) b.replica.apply(e, ignored);
  // b wins term 2; its log continues after a's entries.
  b.log.leader = true;
  b.log.current_term = 2;
  b.log.next_index = a.log.next_index;
  b.become_ready();
  ASSERT_TRUE(b.replica.ready());
  ASSERT_EQ(b.pub("orders.3", "", 9), submit_status::proposed);
  auto acks = b.commit_all();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 3u);
  EXPECT_EQ(b.store.last_seq(), 3u);
}

TEST(StreamReplica, SequenceGapStopsTheReplica) {
  rig r;
  r.log.leader = false;
  std::vector<replica_reply> out;
  repl::committed_entry e;
  e.index = 1;
  e.value.term = 1;
  e.value.data = js::repl_entries::encode(js::repl_entries::stream_op{
      js::repl_entries::msg{5, kNow, 0, "orders.1", "", "x"}});
  r.replica.apply(e, out);
  EXPECT_TRUE(r.replica.failed());
  EXPECT_NE(r.replica.error().find("sequence 5"), std::string::npos);
}

TEST(StreamReplica, BatchIsOneEntryAndOneAck) {
  rig r;
  r.become_ready();
  std::vector<js::replica_batch_msg> msgs{{"orders.1", "", "a"}, {"orders.2", "", "b"}, {"orders.3", "", "c"}};
  ASSERT_EQ(r.replica.publish_batch(kNow, msgs, 4, r.replies), submit_status::proposed);
  EXPECT_EQ(r.log.proposed.size(), 1u);
  auto acks = r.commit_all();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 3u);
  EXPECT_EQ(r.store.state().msgs, 3u);
}

TEST(StreamReplica, PurgeAndDeleteGoThroughTheLog) {
  rig r;
  r.become_ready();
  for (int i = 0; i < 3; ++i) r.pub("orders." + std::to_string(i));
  r.commit_all();
  ASSERT_EQ(r.replica.remove(2, false, 5, r.replies), submit_status::proposed);
  EXPECT_TRUE(r.store.load(2).ok());  // not before the commit
  auto out = r.commit_all();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].what, replica_reply::kind::deleted);
  EXPECT_FALSE(r.store.load(2).ok());
  EXPECT_EQ(r.replica.remove(2, false, 6, r.replies), submit_status::answered);
  EXPECT_EQ(r.replies.back().error->err_code, 10043);  // "sequence 2 not found", as R1
  ASSERT_EQ(r.replica.purge({"", 0, 0}, 7, r.replies), submit_status::proposed);
  out = r.commit_all();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].what, replica_reply::kind::purged);
  EXPECT_EQ(out[0].seq, 2u);
  EXPECT_EQ(r.store.state().msgs, 0u);
}

// STREAM.MSG.DELETE's errors are the standalone stream's: a sequence not stored is 10043
// "sequence N not found", at once or when a second delete of it in flight applies; sealed
// 10109; deny_delete 10057.
TEST(StreamReplica, DeleteErrorsAreTheStandaloneOnes) {
  rig r;
  r.become_ready();
  for (int i = 0; i < 3; ++i) r.pub("orders." + std::to_string(i));
  r.commit_all();
  ASSERT_EQ(r.replica.remove(9, true, 5, r.replies), submit_status::answered);
  ASSERT_TRUE(r.replies.back().error);
  EXPECT_EQ(*r.replies.back().error, (api_error{400, 10043, "sequence 9 not found"}));
  ASSERT_EQ(r.replica.remove(2, true, 6, r.replies), submit_status::proposed);
  ASSERT_EQ(r.replica.remove(2, false, 7, r.replies), submit_status::proposed);  // still stored
  auto out = r.commit_all();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].token, 6u);
  EXPECT_EQ(out[0].what, replica_reply::kind::deleted);
  EXPECT_FALSE(out[0].error);
  EXPECT_EQ(out[1].token, 7u);
  ASSERT_TRUE(out[1].error);
  EXPECT_EQ(*out[1].error, (api_error{400, 10043, "sequence 2 not found"}));

  auto c = config();
  c.deny_delete = true;
  rig d(c);
  d.become_ready();
  d.pub("orders.x");
  d.commit_all();
  ASSERT_EQ(d.replica.remove(1, true, 5, d.replies), submit_status::answered);
  EXPECT_EQ(*d.replies.back().error, (api_error{500, 10057, "message delete not permitted"}));
  c.deny_delete = false;
  c.sealed = true;
  rig s(c);
  s.become_ready();
  ASSERT_EQ(s.replica.remove(1, true, 5, s.replies), submit_status::answered);
  EXPECT_EQ(s.replies.back().error->err_code, 10109);
}

TEST(StreamReplica, RollupAppliesOnEveryReplica) {
  auto c = config();
  c.allow_rollup_hdrs = true;
  rig r(c);
  r.become_ready();
  r.pub("orders.a");
  r.pub("orders.a");
  r.pub("orders.a", "NATS/1.0\r\nNats-Rollup: sub\r\n\r\n");
  r.commit_all();
  EXPECT_EQ(r.store.state().msgs, 1u);
  EXPECT_EQ(r.store.first_seq(), 3u);
}

}  // namespace

// Expiry is proposed by the leader with its time and applied the same everywhere: a
// follower's clock never removes anything.
TEST(StreamReplica, MaxAgeExpiryIsALeaderProposalAppliedEverywhere) {
  auto c = config();
  c.max_age = 2'000'000'000;
  rig leader(c), follower(c);
  follower.log.leader = false;
  leader.become_ready();
  leader.pub("orders.1");
  leader.replica.publish(kNow + 1'000'000'000, "orders.2", "", "data", 2, leader.replies);
  leader.commit_all();
  EXPECT_EQ(leader.replica.next_expiry(), kNow + 2'000'000'000);
  EXPECT_FALSE(leader.replica.tick(kNow + 1'999'999'999));  // nothing due yet
  EXPECT_FALSE(follower.replica.tick(kNow + 10'000'000'000));  // followers never propose
  EXPECT_TRUE(leader.replica.tick(kNow + 2'500'000'000));
  EXPECT_FALSE(leader.replica.tick(kNow + 9'000'000'000));  // one expiry in flight at a time
  EXPECT_EQ(leader.store.state().msgs, 2u);                 // nothing removed before commit
  leader.commit_all();
  EXPECT_EQ(leader.store.state().msgs, 1u);
  EXPECT_EQ(leader.store.first_seq(), 2u);
  // The follower applies the same entries much later: the entry's time decides, not its
  // own, so it removes exactly what the leader removed.
  std::vector<replica_reply> ignored;
  for (auto& e : leader.log.history) follower.replica.apply(e, ignored);
  EXPECT_EQ(leader.store.state(), follower.store.state());
  EXPECT_EQ(follower.store.first_seq(), 2u);
  EXPECT_TRUE(leader.replica.tick(kNow + 3'000'000'000));  // the next one once applied
  leader.commit_all();
  EXPECT_EQ(leader.store.state().msgs, 0u);
  EXPECT_EQ(leader.replica.next_expiry(), 0);
}

// Subject delete markers: the expire entry replaces a subject's last message with a marker at
// the next sequence, stamped with the entry's time, on every replica alike; the leader takes
// no publish while its expiry is in flight, then goes on after the markers.
TEST(StreamReplica, DeleteMarkersTakeTheNextSequencesOnEveryReplica) {
  auto c = config();
  c.max_age = 2'000'000'000;
  c.subject_delete_marker_ttl = 5'000'000'000;
  c.allow_rollup_hdrs = true;
  rig leader(c), follower(c);
  follower.log.leader = false;
  leader.become_ready();
  leader.pub("orders.1");
  leader.pub("orders.2", "", 2);
  leader.pub("orders.2", "", 3);
  leader.commit_all();
  const std::int64_t at = kNow + 2'500'000'000;
  ASSERT_TRUE(leader.replica.tick(at));
  EXPECT_EQ(leader.pub("orders.3", "", 4), submit_status::busy);  // the markers' sequences are not known yet
  leader.commit_all();
  EXPECT_EQ(leader.store.state().msgs, 2u);  // a marker for each subject
  EXPECT_EQ(leader.store.first_seq(), 4u);
  EXPECT_EQ(leader.store.last_seq(), 5u);
  for (std::uint64_t seq : {4u, 5u}) {
    auto m = leader.store.load(seq);
    ASSERT_TRUE(m.ok());
    EXPECT_TRUE(js::is_delete_marker(m->headers));
    EXPECT_NE(m->headers.find("Nats-Marker-Reason: MaxAge"), std::string::npos);
    EXPECT_NE(m->headers.find("Nats-TTL: 5s"), std::string::npos);
    EXPECT_EQ(m->ts, at);
    EXPECT_TRUE(m->payload.empty());
  }
  EXPECT_EQ(leader.store.load(4)->subject, "orders.1");
  EXPECT_EQ(leader.store.load(5)->subject, "orders.2");
  // Publishing goes on after them.
  EXPECT_EQ(leader.pub("orders.3", "", 5), submit_status::proposed);
  leader.commit_all();
  EXPECT_EQ(leader.store.last_seq(), 6u);
  // A follower applying the same entries holds the same bytes.
  std::vector<replica_reply> ignored;
  for (auto& e : leader.log.history) follower.replica.apply(e, ignored);
  EXPECT_FALSE(follower.replica.failed()) << follower.replica.error();
  EXPECT_EQ(leader.store.state(), follower.store.state());
  for (std::uint64_t seq = 4; seq <= 6; ++seq) {
    auto a = leader.store.load(seq), b = follower.store.load(seq);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->headers, b->headers);
    EXPECT_EQ(a->ts, b->ts);
  }
  // The markers expire by their own TTL with no marker of their own; orders.3's message
  // (stamped `at`, past max_age too) becomes the one marker left.
  ASSERT_TRUE(leader.replica.tick(at + 5'000'000'000));
  leader.commit_all();
  EXPECT_EQ(leader.store.state().msgs, 1u);
  EXPECT_EQ(leader.store.first_seq(), 7u);
  EXPECT_EQ(leader.store.load(7)->subject, "orders.3");
  EXPECT_TRUE(js::is_delete_marker(leader.store.load(7)->headers));
}

// An update turning markers on, proposed but not applied when an expiry is proposed: the
// markers take the next sequences once both apply, so the leader holds publishes meanwhile
// (else a message proposed behind them would meet its sequence taken and stop every replica).
TEST(StreamReplica, MarkersTurnedOnByAnUpdateInFlightHoldPublishesToo) {
  auto c = config();
  c.max_age = 2'000'000'000;
  rig leader(c);
  leader.become_ready();
  leader.pub("orders.1");
  leader.commit_all();
  auto on = c;
  on.subject_delete_marker_ttl = 5'000'000'000;
  on.allow_msg_ttl = on.allow_rollup_hdrs = true;
  leader.replica.want_config(js::to_json(on, false).dump(), 7);
  ASSERT_TRUE(leader.replica.tick(kNow + 2'500'000'000));
  EXPECT_EQ(leader.pub("orders.2", "", 2), submit_status::busy);
  leader.commit_all();
  EXPECT_FALSE(leader.replica.failed()) << leader.replica.error();
  EXPECT_EQ(leader.store.state().msgs, 1u);  // the marker
  EXPECT_TRUE(js::is_delete_marker(leader.store.load(2)->headers));
  EXPECT_EQ(leader.pub("orders.2", "", 2), submit_status::proposed);
  leader.commit_all();
  EXPECT_FALSE(leader.replica.failed()) << leader.replica.error();
  EXPECT_EQ(leader.store.last_seq(), 3u);
}

TEST(StreamReplica, LostExpiryProposalIsProposedAgain) {
  auto c = config();
  c.max_age = 1'000'000'000;
  rig r(c);
  r.become_ready();
  r.pub("orders.1");
  r.commit_all();
  ASSERT_TRUE(r.replica.tick(kNow + 2'000'000'000));
  // Another leader's entry takes the expiry's index: it is lost, the next tick retries.
  fake_log other;
  other.current_term = 2;
  other.next_index = r.log.next_index - 1;
  other.propose(js::repl_entries::encode(js::repl_entries::stream_op{
      js::repl_entries::leader_start{2, "s2"}}));
  r.log.proposed.clear();
  std::vector<replica_reply> out;
  r.replica.apply(other.proposed.at(0), out);
  EXPECT_EQ(r.store.state().msgs, 1u);
  // Leading again in a later term: once its leader_start is applied it proposes anew.
  r.log.current_term = 3;
  r.log.next_index = other.next_index;
  r.replica.on_role(kNow);
  r.commit_all();
  ASSERT_TRUE(r.replica.ready());
  EXPECT_TRUE(r.replica.tick(kNow + 2'000'000'000));
  r.commit_all();
  EXPECT_EQ(r.store.state().msgs, 0u);
}

TEST(StreamReplica, MsgTtlIsCarriedInTheEntryAndExpiresByTheLeadersTime) {
  auto c = config();
  c.allow_msg_ttl = true;
  rig leader(c), follower(c);
  follower.log.leader = false;
  leader.become_ready();
  leader.pub("orders.1", "NATS/1.0\r\nNats-TTL: 1s\r\n\r\n", 1);
  leader.pub("orders.2", "NATS/1.0\r\nNats-TTL: never\r\n\r\n", 2);
  leader.pub("orders.3", "", 3);
  leader.commit_all();
  EXPECT_EQ(leader.store.load(1)->ttl, 1'000'000'000);
  EXPECT_EQ(leader.replica.next_expiry(), kNow + 1'000'000'000);
  ASSERT_TRUE(leader.replica.tick(kNow + 1'000'000'000));
  leader.commit_all();
  std::vector<replica_reply> ignored;
  for (auto& e : leader.log.history) follower.replica.apply(e, ignored);
  for (auto* st : {&leader.store, &follower.store}) {
    EXPECT_FALSE(st->load(1).ok());
    EXPECT_TRUE(st->load(2).ok());
    EXPECT_TRUE(st->load(3).ok());
  }
  EXPECT_EQ(leader.store.state(), follower.store.state());
}

TEST(StreamReplica, MsgTtlHeaderErrors) {
  rig r;  // TTLs off
  r.become_ready();
  EXPECT_EQ(r.pub("orders.1", "NATS/1.0\r\nNats-TTL: 1s\r\n\r\n"), submit_status::answered);
  ASSERT_TRUE(r.replies.back().error);
  EXPECT_EQ(r.replies.back().error->err_code, 10166);
  EXPECT_EQ(r.pub("orders.1", "NATS/1.0\r\nNats-TTL: soon\r\n\r\n"), submit_status::answered);
  ASSERT_TRUE(r.replies.back().error);
  EXPECT_EQ(r.replies.back().error->err_code, 10165);
  EXPECT_TRUE(r.log.proposed.empty());
}

// A change of num_replicas: the group starts empty and its origin seeds it.
std::vector<js::repl_entries::msg> seed_msgs() {
  // Sequences 1-2, 5-6 and 8-9 were deleted at the origin.
  return {{3, kNow, storage::ttl_none, "orders.a", "", "three"},
          {4, kNow + 1, storage::ttl_none, "orders.b", "", "four"},
          {7, kNow + 2, storage::ttl_none, "orders.a", "", "seven"}};
}

TEST(StreamReplica, SeededGroupTakesWritesOnlyAfterTheOriginsSeed) {
  rig r;
  r.replica.await_seed("s1", seed_msgs(), 9);
  r.replica.on_role(kNow);
  r.commit_all();  // its leader_start: the origin proposes the seed now
  EXPECT_FALSE(r.replica.ready());
  EXPECT_EQ(r.pub("orders.c"), submit_status::not_ready);
  ASSERT_EQ(r.log.proposed.size(), 2u);  // one batch, then seed_done
  r.commit_all();
  ASSERT_TRUE(r.replica.seeded());
  ASSERT_TRUE(r.replica.ready());
  auto st = r.store.state(false);
  EXPECT_EQ(st.msgs, 3u);
  EXPECT_EQ(st.first_seq, 3u);
  EXPECT_EQ(st.last_seq, 9u);
  EXPECT_EQ(r.store.load(7)->payload, "seven");
  EXPECT_EQ(r.pub("orders.c"), submit_status::proposed);
  auto acks = r.commit_all();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 10u);

  // A follower that applies the same log holds the same stream.
  storage::memory_store store;
  fake_log flog;
  flog.leader = false;
  js::stream_replica follower(config(), store, flog, "s2");
  follower.await_seed("s1", {}, 0);
  std::vector<replica_reply> out;
  for (const auto& e : r.log.history) follower.apply(e, out);
  EXPECT_TRUE(follower.seeded());
  EXPECT_FALSE(follower.failed()) << follower.error();
  EXPECT_EQ(store.state(false).msgs, 4u);
  EXPECT_EQ(store.state(false).first_seq, 3u);
  EXPECT_EQ(store.last_seq(), 10u);
  EXPECT_EQ(store.load(4)->payload, "four");
  EXPECT_FALSE(follower.take_stepdown_wish());
}

TEST(StreamReplica, LeaderOfAnUnseededGroupThatIsNotTheOriginStepsDown) {
  rig r;
  r.replica.await_seed("s2", {}, 0);  // s2 holds the messages, this is s1
  r.replica.on_role(kNow);
  r.commit_all();
  EXPECT_FALSE(r.replica.ready());
  EXPECT_TRUE(r.log.proposed.empty()) << "it proposes no seed of its own";
  EXPECT_TRUE(r.replica.take_stepdown_wish());
  EXPECT_FALSE(r.replica.take_stepdown_wish()) << "asked once";
  EXPECT_EQ(r.pub("orders.c"), submit_status::not_ready);
}

TEST(StreamReplica, OriginLeadingAgainSeedsOnlyWhatIsNotApplied) {
  rig r;
  r.replica.await_seed("s1", seed_msgs(), 7);
  r.replica.on_role(kNow);
  r.commit_all();
  // Its batch is lost with its term: a new term, a new leader_start, the whole seed again.
  r.log.proposed.clear();
  r.log.next_index = 2;  // the next term's entries take the lost ones' indexes
  r.log.current_term = 2;
  r.replica.on_role(kNow);
  r.commit_all();
  r.commit_all();
  EXPECT_TRUE(r.replica.ready());
  EXPECT_EQ(r.store.state(false).msgs, 3u);
  EXPECT_EQ(r.store.last_seq(), 7u);
}

namespace {

// ---- Asynchronous proposals (the server's path: the group runs on pg-repl) ----

// A log on "another thread": proposals queue with tickets; the test plays pg-repl's turn,
// which takes everything queued as one batch and answers with the indexes (or refuses).
class async_log final : public repl::replicated_log {
 public:
  bool leader = true;
  bool busy = false;
  std::uint64_t current_term = 1;
  std::uint64_t next_ticket = 1;
  std::uint64_t next_index = 1;
  struct queued {
    std::uint64_t ticket;
    std::vector<std::uint8_t> data;
  };
  std::vector<queued> queue;

  repl::propose_result propose(std::span<const std::uint8_t>) override {
    return {repl::propose_status::failed, 0};  // the replica must not wait on this log
  }
  repl::propose_result propose_async(std::span<const std::uint8_t> d) override {
    if (!leader) return {repl::propose_status::not_leader, 0};
    if (busy) return {repl::propose_status::busy, 0};
    queue.push_back({next_ticket, {d.begin(), d.end()}});
    return {repl::propose_status::queued, next_ticket++};
  }
  bool is_leader() const override { return leader; }
  std::uint64_t term() const override { return current_term; }

  // pg-repl's turn: the queued proposals get consecutive indexes (the `proposed` event) and
  // become entries the test commits later.
  std::vector<repl::committed_entry> take(js::stream_replica& r) {
    std::vector<repl::committed_entry> out;
    if (queue.empty()) return out;
    r.on_proposed(queue.front().ticket, queue.size(), next_index, current_term);
    for (auto& q : queue) {
      repl::committed_entry e;
      e.index = next_index++;
      e.value.term = current_term;
      e.value.data = std::move(q.data);
      out.push_back(std::move(e));
    }
    queue.clear();
    return out;
  }
  void refuse(js::stream_replica& r) {
    if (queue.empty()) return;
    r.on_proposed(queue.front().ticket, queue.size(), 0, current_term);
    queue.clear();
  }
};

struct async_rig {
  async_rig() : replica(config(), store, log, "s1") {}
  std::vector<replica_reply> apply(std::vector<repl::committed_entry>& es) {
    std::vector<replica_reply> out;
    for (auto& e : es) replica.apply(e, out);
    return out;
  }
  void become_ready() {
    replica.on_role(kNow);
    auto es = log.take(replica);
    apply(es);
    ASSERT_TRUE(replica.ready());
  }
  submit_status pub(std::string subject, std::string hdr = "", std::uint64_t token = 1) {
    return replica.publish(kNow, subject, hdr, "data", token, replies);
  }
  storage::memory_store store;
  async_log log;
  js::stream_replica replica;
  std::vector<replica_reply> replies;
};

TEST(StreamReplicaAsync, ManyPublishesInFlightAckedInOrderOnceApplied) {
  async_rig r;
  r.become_ready();
  // No wait per publish: each is proposed from the shadow state while earlier ones fly.
  for (std::uint64_t t = 1; t <= 5; ++t) ASSERT_EQ(r.pub("orders." + std::to_string(t), "", t), submit_status::proposed);
  EXPECT_EQ(r.replica.pending(), 5u);
  EXPECT_EQ(r.log.queue.size(), 5u);
  auto es = r.log.take(r.replica);  // one batch
  ASSERT_EQ(es.size(), 5u);
  EXPECT_TRUE(r.replies.empty());
  auto acks = r.apply(es);
  ASSERT_EQ(acks.size(), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(acks[i].token, i + 1);
    EXPECT_EQ(acks[i].seq, i + 1);
    EXPECT_FALSE(acks[i].error);
  }
  EXPECT_EQ(r.store.last_seq(), 5u);
  EXPECT_EQ(r.replica.pending(), 0u);
}

TEST(StreamReplicaAsync, EntriesAppliedBeforeLaterProposalsAreAnsweredStillMatch) {
  async_rig r;
  r.become_ready();
  ASSERT_EQ(r.pub("orders.1", "", 1), submit_status::proposed);
  auto first = r.log.take(r.replica);
  // Proposed while the first is in flight; its index is not known when the first applies.
  ASSERT_EQ(r.pub("orders.2", "", 2), submit_status::proposed);
  auto acks = r.apply(first);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 1u);
  EXPECT_EQ(r.replica.pending(), 1u);  // the queued one stays
  auto second = r.log.take(r.replica);
  acks = r.apply(second);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].token, 2u);
  EXPECT_EQ(acks[0].seq, 2u);
}

TEST(StreamReplicaAsync, RefusedProposalsGoUnansweredAndTheReplicaStopsTakingWrites) {
  async_rig r;
  r.become_ready();
  ASSERT_EQ(r.pub("orders.1", "", 1), submit_status::proposed);
  ASSERT_EQ(r.pub("orders.2", "", 2), submit_status::proposed);
  r.log.refuse(r.replica);  // pg-repl no longer leads in term 1
  EXPECT_EQ(r.replica.pending(), 0u);
  EXPECT_EQ(r.replica.lost_proposals(), 2u);
  EXPECT_FALSE(r.replica.ready());
  EXPECT_TRUE(r.replies.empty());
  // Its shadow sequences are void: nothing more is proposed in that term, not even another
  // leader_start (the role event saying who leads now follows).
  r.replica.on_role(kNow);
  EXPECT_TRUE(r.log.queue.empty());
  EXPECT_EQ(r.pub("orders.3", "", 3), submit_status::not_ready);
  // Leading again in a new term: leader_start, then sequences continue the applied state.
  r.log.current_term = 2;
  r.become_ready();
  ASSERT_EQ(r.pub("orders.4", "", 4), submit_status::proposed);
  auto es = r.log.take(r.replica);
  auto acks = r.apply(es);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 1u);  // no gap from the refused ones
  EXPECT_FALSE(r.replica.failed()) << r.replica.error();
}

TEST(StreamReplicaAsync, RefusalOfAnOldTermLeavesTheNewLeadershipAlone) {
  async_rig r;
  r.become_ready();
  ASSERT_EQ(r.pub("orders.1", "", 1), submit_status::proposed);
  const auto stale_ticket = r.log.queue.front().ticket;
  r.log.queue.clear();
  // Term 2 began (role event) before pg-repl answered the term-1 proposal.
  r.log.current_term = 2;
  r.become_ready();
  r.replica.on_proposed(stale_ticket, 1, 0, 1);
  EXPECT_TRUE(r.replica.ready());
  EXPECT_EQ(r.pub("orders.2", "", 2), submit_status::proposed);
}

TEST(StreamReplicaAsync, BusyLogChangesNothing) {
  async_rig r;
  r.become_ready();
  r.log.busy = true;
  EXPECT_EQ(r.pub("orders.1", "", 1), submit_status::busy);
  EXPECT_EQ(r.replica.pending(), 0u);
  EXPECT_TRUE(r.replies.empty());
  r.log.busy = false;
  ASSERT_EQ(r.pub("orders.1", "NATS/1.0\r\nNats-Expected-Last-Sequence: 0\r\n\r\n", 1), submit_status::proposed);
  auto es = r.log.take(r.replica);
  auto acks = r.apply(es);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 1u);
}

TEST(StreamReplicaAsync, MsgIdRetryOfAQueuedProposalGetsTheOriginalSequence) {
  async_rig r;
  r.become_ready();
  const std::string id = "NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n";
  ASSERT_EQ(r.pub("orders.1", id, 1), submit_status::proposed);
  ASSERT_EQ(r.pub("orders.1", id, 2), submit_status::proposed);  // rides on the first
  EXPECT_EQ(r.log.queue.size(), 1u);
  auto es = r.log.take(r.replica);
  auto acks = r.apply(es);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0].token, 1u);
  EXPECT_FALSE(acks[0].duplicate);
  EXPECT_EQ(acks[1].token, 2u);
  EXPECT_TRUE(acks[1].duplicate);
  EXPECT_EQ(acks[1].seq, 1u);
}

}  // namespace
