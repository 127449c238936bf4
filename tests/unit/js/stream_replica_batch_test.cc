// Atomic batches on a replicated stream's leader (stream_replica_batch.cc): staged messages
// get a zero-byte ack and propose nothing, the commit is one entry and one PubAck with the
// batch's id and count, and the batch rules refuse the whole batch before anything is stored.
#include "tests/unit/js/stream_replica_rig.h"

namespace {

using namespace stream_replica_rig;

js::stream_config atomic_config() {
  auto c = config();
  c.allow_atomic = true;
  c.allow_rollup_hdrs = true;
  return c;
}

std::string batch_hdr(std::string_view id, int seq, std::string_view commit = "", std::string_view extra = "") {
  std::string h = "NATS/1.0\r\nNats-Batch-Id: " + std::string(id) + "\r\nNats-Batch-Sequence: " + std::to_string(seq) + "\r\n";
  if (!commit.empty()) h += "Nats-Batch-Commit: " + std::string(commit) + "\r\n";
  h += extra;
  return h + "\r\n";
}

TEST(StreamReplicaBatch, StagedMessagesAreAckedEmptyAndTheCommitIsOneEntry) {
  rig r(atomic_config());
  r.become_ready();
  const auto before = r.log.history.size();
  EXPECT_EQ(r.pub("orders.1", batch_hdr("b1", 1), 1), submit_status::answered);
  EXPECT_EQ(r.pub("orders.2", batch_hdr("b1", 2), 2), submit_status::answered);
  ASSERT_EQ(r.replies.size(), 2u);
  EXPECT_EQ(r.replies[0].what, replica_reply::kind::staged);
  EXPECT_EQ(r.replies[1].token, 2u);
  EXPECT_EQ(r.log.history.size(), before);  // nothing proposed while staging
  EXPECT_EQ(r.pub("orders.3", batch_hdr("b1", 3, "1"), 3), submit_status::proposed);
  EXPECT_EQ(r.log.history.size(), before + 1);
  auto acks = r.commit_all();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].token, 3u);
  EXPECT_EQ(acks[0].seq, 3u);
  EXPECT_EQ(acks[0].batch, "b1");
  EXPECT_EQ(acks[0].count, 3u);
  EXPECT_EQ(r.store.state().msgs, 3u);
}

TEST(StreamReplicaBatch, EndOfBatchMarkerIsNotStoredAndTheLastMessageShowsTheCommit) {
  rig r(atomic_config());
  r.become_ready();
  r.pub("orders.1", batch_hdr("e", 1), 1);
  r.pub("orders.2", batch_hdr("e", 2), 2);
  EXPECT_EQ(r.pub("orders.x", batch_hdr("e", 3, "eob"), 3), submit_status::proposed);
  auto acks = r.commit_all();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].count, 2u);
  EXPECT_EQ(r.store.state().msgs, 2u);
  auto last = r.store.load(2);
  ASSERT_TRUE(last.ok());
  EXPECT_NE(last->headers.find("Nats-Batch-Commit: 1"), std::string::npos) << last->headers;
}

TEST(StreamReplicaBatch, DisabledStreamRefusesWith10174) {
  rig r;  // allow_atomic off
  r.become_ready();
  EXPECT_EQ(r.pub("orders.1", batch_hdr("b", 1, "1")), submit_status::answered);
  ASSERT_EQ(r.replies.size(), 1u);
  ASSERT_TRUE(r.replies[0].error);
  EXPECT_EQ(r.replies[0].error->err_code, 10174);
}

// One rule per case; each refuses the whole batch and stores nothing.
TEST(StreamReplicaBatch, BatchRulesRefuseTheWholeBatch) {
  struct rule {
    std::string second_extra;  // headers of the batch's second (committing) message
    std::uint16_t code;
  };
  const std::vector<rule> rules{
      {"Nats-Expected-Last-Msg-Id: x\r\n", 10177},
      {"Nats-Msg-Id: same\r\n", 10201},       // the first message has the same id
      {"Nats-Expected-Last-Sequence: 1\r\n", 10164},
      {"Nats-Expected-Last-Subject-Sequence: 0\r\n", 10164},  // its subject was written earlier
      {"Nats-Rollup: all\r\n", 10111},
      {"Nats-Rollup: sub\r\n", 10111},
  };
  for (const auto& ru : rules) {
    rig r(atomic_config());
    r.become_ready();
    r.pub("orders.1", batch_hdr("r", 1, "", "Nats-Msg-Id: same\r\n"), 1);
    EXPECT_EQ(r.pub("orders.1", batch_hdr("r", 2, "1", ru.second_extra), 2), submit_status::answered)
        << ru.second_extra;
    ASSERT_EQ(r.replies.size(), 2u) << ru.second_extra;
    ASSERT_TRUE(r.replies[1].error) << ru.second_extra;
    EXPECT_EQ(r.replies[1].error->err_code, ru.code) << ru.second_extra << r.replies[1].error->description;
    r.commit_all();
    EXPECT_EQ(r.store.state().msgs, 0u) << ru.second_extra;
  }
}

TEST(StreamReplicaBatch, MsgIdAlreadyStoredRefusesTheBatch) {
  rig r(atomic_config());
  r.become_ready();
  ASSERT_EQ(r.pub("orders.1", "NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n"), submit_status::proposed);
  r.commit_all();
  EXPECT_EQ(r.pub("orders.2", batch_hdr("d", 1, "1", "Nats-Msg-Id: m1\r\n"), 5), submit_status::answered);
  ASSERT_FALSE(r.replies.empty());
  ASSERT_TRUE(r.replies.back().error);
  EXPECT_EQ(r.replies.back().error->err_code, 10201);
}

TEST(StreamReplicaBatch, ExpectedLastSequenceOnTheFirstMessageIsCheckedAgainstProposedState) {
  rig r(atomic_config());
  r.become_ready();
  ASSERT_EQ(r.pub("orders.0"), submit_status::proposed);  // seq 1, in flight
  r.pub("orders.1", batch_hdr("s", 1, "", "Nats-Expected-Last-Sequence: 1\r\n"), 2);
  EXPECT_EQ(r.pub("orders.2", batch_hdr("s", 2, "1"), 3), submit_status::proposed);
  auto acks = r.commit_all();
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[1].seq, 3u);
  EXPECT_EQ(acks[1].count, 2u);
}

TEST(StreamReplicaBatch, LosingTheLeadDropsOpenBatches) {
  rig r(atomic_config());
  r.become_ready();
  r.pub("orders.1", batch_hdr("l", 1), 1);
  r.log.leader = false;
  r.replica.on_role(kNow);
  r.log.leader = true;
  r.log.current_term = 2;
  r.become_ready();
  r.replies.clear();
  EXPECT_EQ(r.pub("orders.2", batch_hdr("l", 2, "1"), 2), submit_status::answered);
  ASSERT_EQ(r.replies.size(), 1u);
  ASSERT_TRUE(r.replies[0].error);
  EXPECT_EQ(r.replies[0].error->err_code, 10176);  // the batch is not open here
  EXPECT_EQ(r.store.state().msgs, 0u);
}

}  // namespace

namespace {

// RePublish and the ingest transform on a replicated stream (stream_replica.cc).
TEST(StreamReplicaRewrites, OnlyTheLeaderRepublishesWhatItApplies) {
  auto c = config();
  c.republish = js::ojson{{"src", "orders.>"}, {"dest", "dash.orders.>"}};
  rig leader(c), follower(c);
  leader.become_ready();
  follower.log.leader = false;
  follower.replica.on_role(kNow);
  ASSERT_EQ(leader.pub("orders.created", "", 7), submit_status::proposed);
  ASSERT_EQ(leader.pub("orders.created", "", 8), submit_status::proposed);
  std::vector<replica_reply> ignored;
  for (const auto& e : leader.log.history) follower.replica.apply(e, ignored);
  leader.commit_all();
  const auto copies = leader.replica.take_republished();
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[1].subject, "dash.orders.created");
  EXPECT_EQ(copies[1].payload, "data");
  EXPECT_NE(copies[1].headers.find("Nats-Sequence: 2"), std::string::npos) << copies[1].headers;
  EXPECT_NE(copies[1].headers.find("Nats-Last-Sequence: 1"), std::string::npos) << copies[1].headers;
  EXPECT_TRUE(leader.replica.take_republished().empty());  // taken once
  EXPECT_TRUE(follower.replica.take_republished().empty());
  EXPECT_EQ(follower.store.state().msgs, 2u);
}

TEST(StreamReplicaRewrites, IngestTransformRenamesBeforeStoring) {
  auto c = config();
  c.subjects = {"ingest.*"};
  c.subject_transform = js::ojson{{"src", "ingest.*"}, {"dest", "orders.{{wildcard(1)}}"}};
  rig r(c);
  r.become_ready();
  ASSERT_EQ(r.pub("ingest.acme"), submit_status::proposed);
  r.commit_all();
  auto m = r.store.load(1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->subject, "orders.acme");
}

// A batch left open 10 s is given up on the leader's tick, and the advisory's reason is
// handed out once (cluster_streams publishes it, as the standalone stream does).
TEST(StreamReplicaBatch, IdleBatchIsAbandonedWithTimeoutReason) {
  rig r(atomic_config());
  r.become_ready();
  r.pub("orders.1", batch_hdr("idle", 1), 1);
  (void)r.replica.tick(kNow + 9'000'000'000);
  EXPECT_TRUE(r.replica.take_abandoned().empty());
  (void)r.replica.tick(kNow + 10'000'000'000);
  const auto gone = r.replica.take_abandoned();
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0], (std::pair<std::string, std::string>{"idle", "timeout"}));
  EXPECT_TRUE(r.replica.take_abandoned().empty());
}

}  // namespace
