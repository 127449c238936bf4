// Log compaction of replicated streams and consumers (issue 11): with a small snapshot floor
// (PEREGRINE_SNAPSHOT_MIN_BYTES), every group snapshots its state every few dozen entries and
// raft forgets the log before it. A follower that was down while the leader compacted past
// what it had catches up through InstallSnapshot; a server restarted resumes from its own
// snapshot plus the log after it. Checked: the restored replica's state matches the others',
// every acknowledged message reads back from it as leader, the Msg-Id window survives, a
// consumer's delivered and ack floor carry over, and each server's journal file, rewritten
// with only what the groups still need, is what the restart recovers from.
#include <signal.h>

#include <cstdlib>
#include <map>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_snapshots : public cluster_js_fixture {
 protected:
  void SetUp() override {
    // Inherited by the servers: a snapshot every ~16 KiB of applied entries, and the journal
    // rewritten once past 64 KiB (and twice what the groups need).
    ::setenv("PEREGRINE_SNAPSHOT_MIN_BYTES", "16384", 1);
    ::setenv("PEREGRINE_JOURNAL_MIN_BYTES", "65536", 1);
    cluster_js_fixture::SetUp();
  }
  void TearDown() override {
    cluster_js_fixture::TearDown();
    ::unsetenv("PEREGRINE_SNAPSHOT_MIN_BYTES");
    ::unsetenv("PEREGRINE_JOURNAL_MIN_BYTES");
  }

  bool wait_replica(int i, const std::string& name, std::uint64_t last_seq, std::chrono::milliseconds limit) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      if (replica_state(i, name).value("last_seq", 0u) == last_seq) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  // Steps the stream's leadership down until server `want` leads it.
  bool lead_on(const std::string& name, int want) {
    const auto deadline = clock_type::now() + scaled(20000);
    while (clock_type::now() < deadline) {
      const std::string l = stream_leader(name, scaled(5000));
      if (index_of(l) == want) return true;
      (void)api_retry(want, "$JS.API.STREAM.LEADER.STEPDOWN." + name, "");
      std::this_thread::sleep_for(300ms);
    }
    return false;
  }

  std::map<std::uint64_t, std::string> publish_many(int via, int from, int n) {
    auto nc = connect(servers_[via]->url());
    std::map<std::uint64_t, std::string> acked;
    if (!nc) return acked;
    for (int k = from; k < from + n; ++k) {
      const std::string data = "order-" + std::to_string(k) + std::string(100, char('a' + k % 26));
      const std::uint64_t seq = publish(nc.get(), "snap.orders", data, "id-" + std::to_string(k), scaled(5000));
      if (seq == 0) break;
      acked[seq] = data;
    }
    return acked;
  }

  bool logged(int i, const std::string& what) const { return servers_[i]->log().find(what) != std::string::npos; }
};

TEST_F(cluster_snapshots, a_follower_behind_the_compacted_log_catches_up_from_a_snapshot) {
  create_r3(0, "SNAP", "snap.>");
  const std::string leader = stream_leader("SNAP", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader);
  const int down = (li + 1) % 3, up = (li + 2) % 3;
  auto acked = publish_many(li, 0, 50);
  ASSERT_EQ(acked.size(), 50u);
  ASSERT_TRUE(wait_replica(down, "SNAP", 50, scaled(10000)));
  ::kill(servers_[down]->pid(), SIGKILL);
  // 1500 more messages (~300 KiB of entries): the other two compact far past what it holds
  // (and past the 512 entries a snapshot leaves in the log).
  auto more = publish_many(li, 50, 1500);
  ASSERT_EQ(more.size(), 1500u);
  acked.insert(more.begin(), more.end());
  ASSERT_TRUE(servers_[down]->start()) << servers_[down]->error();
  ASSERT_TRUE(wait_replica(down, "SNAP", 1550, scaled(20000))) << replica_state(down, "SNAP").dump() << logs();
  EXPECT_TRUE(logged(down, "Replicated stream SNAP: restored from a snapshot")) << logs();
  // Its replica is the others', message for message.
  const json a = replica_state(down, "SNAP"), b = replica_state(up, "SNAP");
  for (const char* f : {"messages", "bytes", "first_seq", "last_seq", "num_subjects"}) EXPECT_EQ(a[f], b[f]) << f;
  // As leader it serves every acknowledged message and still knows the Msg-Ids.
  ASSERT_TRUE(lead_on("SNAP", down)) << logs();
  expect_all(down, "SNAP", acked);
  auto nc = connect(servers_[down]->url());
  ASSERT_TRUE(nc);
  const json ack = publish_with_id(nc.get(), "snap.orders", "again", "id-7");
  EXPECT_EQ(ack.value("duplicate", false), true) << ack.dump();
  EXPECT_EQ(ack.value("seq", 0u), 8u) << ack.dump();
  // New writes go on from there on every replica.
  auto after = publish_many(down, 1550, 10);
  ASSERT_EQ(after.size(), 10u);
  EXPECT_EQ(after.rbegin()->first, 1560u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(wait_replica(i, "SNAP", 1560, scaled(10000))) << i;
  acked.insert(after.begin(), after.end());
  // A restart of all three recovers from their snapshot files and logs.
  for (auto& s : servers_) s->stop();
  for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
  ASSERT_TRUE(wait_meta_leader(scaled(15000))) << logs();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(wait_replica(i, "SNAP", 1560, scaled(20000))) << i << logs();
  ASSERT_FALSE(stream_leader("SNAP", scaled(15000)).empty());
  expect_all(up, "SNAP", acked);
}

TEST_F(cluster_snapshots, a_restarted_cluster_resumes_from_snapshots_with_its_consumer) {
  create_r3(0, "SNAP", "snap.>");
  json cr = api_retry(0, "$JS.API.CONSUMER.DURABLE.CREATE.SNAP.WORK",
                      R"({"stream_name":"SNAP","config":{"durable_name":"WORK","ack_policy":"explicit","num_replicas":3}})");
  ASSERT_FALSE(cr.contains("error")) << cr.dump();
  const std::string leader = stream_leader("SNAP", scaled(10000));
  ASSERT_FALSE(leader.empty());
  auto acked = publish_many(index_of(leader), 0, 1200);
  ASSERT_EQ(acked.size(), 1200u);
  // Fetch and ack 200 of them, one by one (every ack is a consumer entry: the consumer's log
  // compacts too).
  auto nc = connect(servers_[0]->url());
  ASSERT_TRUE(nc);
  int done = 0;
  const auto deadline = clock_type::now() + scaled(30000);
  while (done < 200 && clock_type::now() < deadline) {
    natsMsg* reply = nullptr;
    if (natsConnection_RequestString(&reply, nc.get(), "$JS.API.CONSUMER.MSG.NEXT.SNAP.WORK", R"({"batch":1,"expires":2000000000})",
                                     3000) != NATS_OK)
      continue;
    const char* ack_subject = natsMsg_GetReply(reply);
    if (ack_subject != nullptr && std::string(ack_subject).rfind("$JS.ACK.", 0) == 0) {
      natsMsg* ok = nullptr;
      if (natsConnection_Request(&ok, nc.get(), ack_subject, "", 0, 3000) == NATS_OK) {
        natsMsg_Destroy(ok);
        ++done;
      }
    }
    natsMsg_Destroy(reply);
  }
  ASSERT_EQ(done, 200);
  nc.reset();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(wait_replica(i, "SNAP", 1200, scaled(10000)));
  for (auto& s : servers_) s->stop();
  for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
  ASSERT_TRUE(wait_meta_leader(scaled(15000))) << logs();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(wait_replica(i, "SNAP", 1200, scaled(20000))) << i << logs();
    EXPECT_TRUE(logged(i, "Replicated stream SNAP: restored from a snapshot")) << i;
  }
  ASSERT_FALSE(stream_leader("SNAP", scaled(15000)).empty());
  expect_all(0, "SNAP", acked);
  // The consumer goes on after what was acked: 1000 pending, nothing redelivered yet.
  json ci;
  const auto until = clock_type::now() + scaled(15000);
  while (clock_type::now() < until) {
    ci = consumer_info(0, "SNAP", "WORK");
    if (ci.contains("ack_floor")) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(ci.contains("ack_floor")) << ci.dump();
  EXPECT_EQ(ci["ack_floor"].value("stream_seq", 0u), 200u) << ci.dump();
  EXPECT_EQ(ci["delivered"].value("stream_seq", 0u), 200u) << ci.dump();
  EXPECT_EQ(ci.value("num_pending", 0u), 1000u) << ci.dump();
}

// A stream whose limits keep it small while its log grows: the journal file is rewritten with
// only what the group still needs, and a restart recovers from the rewritten file.
TEST_F(cluster_snapshots, a_limited_stream_keeps_its_journal_small) {
  const json cr = api_retry(0, "$JS.API.STREAM.CREATE.SNAP",
                            R"({"name":"SNAP","subjects":["snap.>"],"num_replicas":3,"max_msgs":100})");
  ASSERT_FALSE(cr.contains("error")) << cr.dump();
  const std::string leader = stream_leader("SNAP", scaled(10000));
  ASSERT_FALSE(leader.empty());
  auto acked = publish_many(index_of(leader), 0, 2500);
  ASSERT_EQ(acked.size(), 2500u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(wait_replica(i, "SNAP", 2500, scaled(10000)));
    const auto until = clock_type::now() + scaled(5000);
    while (!logged(i, "Replication journal rewritten") && clock_type::now() < until) std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(logged(i, "Replication journal rewritten")) << i;
  }
  for (auto& s : servers_) s->stop();
  for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
  ASSERT_TRUE(wait_meta_leader(scaled(15000))) << logs();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(wait_replica(i, "SNAP", 2500, scaled(20000))) << i << logs();
    EXPECT_EQ(replica_state(i, "SNAP").value("messages", 0u), 100u);
    EXPECT_EQ(replica_state(i, "SNAP").value("first_seq", 0u), 2401u);
  }
  ASSERT_FALSE(stream_leader("SNAP", scaled(15000)).empty());
  std::map<std::uint64_t, std::string> kept(acked.lower_bound(2401), acked.end());
  expect_all(1, "SNAP", kept);
}

}  // namespace
}  // namespace peregrine::test
