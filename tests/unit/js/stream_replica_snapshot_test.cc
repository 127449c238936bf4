// stream_replica's snapshots (log compaction): a replica restored from another's snapshot
// holds the same messages (sequences, gaps, times, TTLs), the same Msg-Id window and config,
// and goes on applying the log after it; a snapshot never takes a replica back.
#include "tests/unit/js/stream_replica_rig.h"

#include "src/js/repl_entries.h"

namespace {

using namespace stream_replica_rig;

repl::committed_entry snapshot_entry(const js::stream_replica& from) {
  repl::committed_entry e;
  e.index = from.applied_index();
  e.value.term = 1;
  e.value.type = repl::entry_type::snapshot;
  e.value.data = from.snapshot();
  return e;
}

TEST(StreamReplicaSnapshot, ARestoredReplicaHoldsTheSameStateAndGoesOn) {
  rig a;
  a.become_ready();
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(a.pub("orders." + std::to_string(i % 3), "NATS/1.0\r\nNats-Msg-Id: m" + std::to_string(i) + "\r\n\r\n"),
              submit_status::proposed);
  a.commit_all();
  ASSERT_TRUE(a.store.remove(2).ok());  // a gap inside
  ASSERT_EQ(a.store.last_seq(), 6u);

  rig b;
  b.log.leader = false;
  std::vector<replica_reply> out;
  b.replica.apply(snapshot_entry(a.replica), out);
  ASSERT_FALSE(b.replica.failed()) << b.replica.error();
  EXPECT_EQ(b.replica.applied_index(), a.replica.applied_index());
  EXPECT_EQ(b.store.state(true), a.store.state(true));
  for (std::uint64_t seq : {1u, 3u, 6u}) {
    auto x = a.store.load(seq), y = b.store.load(seq);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(x->subject, y->subject);
    EXPECT_EQ(x->headers, y->headers);
    EXPECT_EQ(x->ts, y->ts);
  }
  EXPECT_FALSE(b.store.load(2).ok());
  // Its snapshot is the same bytes: nothing was lost or added on the way.
  EXPECT_EQ(b.replica.snapshot(), a.replica.snapshot());
  // The log after the snapshot applies on top; as leader it still knows the Msg-Ids.
  b.log.leader = true;
  b.log.next_index = a.replica.applied_index() + 1;
  b.become_ready();
  std::vector<replica_reply> replies;
  EXPECT_EQ(b.replica.publish(kNow, "orders.0", "NATS/1.0\r\nNats-Msg-Id: m3\r\n\r\n", "x", 9, replies),
            submit_status::answered);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(replies[0].duplicate);
  EXPECT_EQ(replies[0].seq, 4u);
  EXPECT_EQ(b.pub("orders.9"), submit_status::proposed);
  auto acks = b.commit_all();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 7u);
}

// A replica that already holds part of the stream (its own earlier snapshot, then entries;
// one message gone here that the newer snapshot still has) takes the newer snapshot whole:
// its store starts over (found by cluster_snapshots: a restarted follower's own snapshot, then
// InstallSnapshot, stopped the replica with "sequence 1 out of order").
TEST(StreamReplicaSnapshot, ANewerSnapshotReplacesWhatTheReplicaHeld) {
  rig a;
  a.become_ready();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(a.pub("orders." + std::to_string(i)), submit_status::proposed);
  a.commit_all();
  const auto early = snapshot_entry(a.replica);
  for (int i = 3; i < 8; ++i) ASSERT_EQ(a.pub("orders." + std::to_string(i)), submit_status::proposed);
  a.commit_all();
  ASSERT_TRUE(a.store.remove(5).ok());
  const auto later = snapshot_entry(a.replica);

  rig b;
  b.log.leader = false;
  std::vector<replica_reply> out;
  b.replica.apply(early, out);
  ASSERT_FALSE(b.replica.failed()) << b.replica.error();
  ASSERT_EQ(b.store.last_seq(), 3u);
  ASSERT_TRUE(b.store.remove(1).ok());  // released here (a work queue's ack applied first)
  b.replica.apply(later, out);
  ASSERT_FALSE(b.replica.failed()) << b.replica.error();
  EXPECT_EQ(b.store.state(true), a.store.state(true));
  EXPECT_TRUE(b.store.load(1).ok());
  EXPECT_FALSE(b.store.load(5).ok());
  EXPECT_EQ(b.replica.snapshot(), a.replica.snapshot());
}

// The owner clones the store and another thread encodes from the clone: the same bytes as
// encoding in place, whatever the store does after the clone.
TEST(StreamReplicaSnapshot, EncodingFromACloneGivesTheSameBytes) {
  rig a;
  a.become_ready();
  for (int i = 0; i < 40; ++i)
    ASSERT_EQ(a.pub("orders." + std::to_string(i % 7), "NATS/1.0\r\nNats-Msg-Id: c" + std::to_string(i) + "\r\n\r\n"),
              submit_status::proposed);
  a.commit_all();
  ASSERT_TRUE(a.store.remove(9).ok());
  const std::vector<std::uint8_t> in_place = a.replica.snapshot();
  js::stream_replica::snapshot_parts parts = a.replica.snapshot_source();
  ASSERT_NE(parts.store, nullptr);
  // The original changes on: the clone does not.
  ASSERT_TRUE(a.store.remove(1).ok());
  ASSERT_TRUE(a.store.purge({"orders.3", 0, 0}).ok());
  ASSERT_EQ(a.pub("orders.x"), submit_status::proposed);
  a.commit_all();
  EXPECT_EQ(js::stream_replica::encode_snapshot(std::move(parts.head), *parts.store), in_place);
  EXPECT_EQ(parts.store->state(true).msgs, 39u);
  EXPECT_NE(a.replica.snapshot(), in_place);
}

TEST(StreamReplicaSnapshot, AnOlderSnapshotOrGarbageStopsTheReplica) {
  rig a;
  a.become_ready();
  ASSERT_EQ(a.pub("orders.1"), submit_status::proposed);
  a.commit_all();
  const auto old = snapshot_entry(a.replica);
  ASSERT_EQ(a.pub("orders.2"), submit_status::proposed);
  a.commit_all();
  std::vector<replica_reply> out;
  a.replica.apply(old, out);
  EXPECT_TRUE(a.replica.failed());
  rig b;
  auto bad = old;
  bad.value.data.resize(bad.value.data.size() / 2);
  b.replica.apply(bad, out);
  EXPECT_TRUE(b.replica.failed());
}

TEST(StreamReplicaSnapshot, SnapshotsRoundTripThroughTheirEncoding) {
  js::repl_entries::stream_snapshot s;
  s.applied_index = 9;
  s.config_index = 3;
  s.config_json = "{}";
  s.seeded = false;
  s.seed_origin = "A";
  s.last_msg_id = "x";
  s.dedup = {{"x", 4, 100}, {"y", 5, -1}};
  s.first_seq = 2;
  s.last_seq = 8;
  s.msgs = {{2, 10, 0, "a", "", "p"}, {8, 11, -1, "b", "h", ""}};
  auto back = js::repl_entries::decode_stream_snapshot(js::repl_entries::encode(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, s);
  js::repl_entries::consumer_snapshot c;
  c.applied_index = 4;
  c.was_reset = true;
  c.state.delivered_stream = 9;
  c.state.pending_acks = {{7, 3, 55}};
  c.state.redelivered = {{7, 2}};
  auto cback = js::repl_entries::decode_consumer_snapshot(js::repl_entries::encode(c));
  ASSERT_TRUE(cback);
  EXPECT_EQ(*cback, c);
  EXPECT_FALSE(js::repl_entries::decode_consumer_snapshot(js::repl_entries::encode(s)));
}

}  // namespace
