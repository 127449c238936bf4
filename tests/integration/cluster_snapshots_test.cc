// Log compaction of replicated streams and consumers (issue 11): with a small snapshot floor
// (PEREGRINE_SNAPSHOT_MIN_BYTES), every group snapshots its state every few dozen entries and
// raft forgets the log before it. A follower that was down while the leader compacted past
// what it had catches up through InstallSnapshot; a server restarted resumes from its own
// snapshot plus the log after it. Checked: the restored replica's state matches the others',
// every acknowledged message reads back from it as leader, the Msg-Id window survives, a
// consumer's delivered and ack floor carry over, and each server's journal file, rewritten
// with only what the groups still need, is what the restart recovers from. A work-queue
// follower back from snapshots drops what its consumer acknowledged while it was away.
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

// A work-queue stream whose follower was down while messages were taken and acknowledged:
// it comes back through the stream's and the consumer's snapshots (whichever order they
// land in) and its replica drops what the consumer acknowledged meanwhile, as the others did.
TEST_F(cluster_snapshots, a_work_queue_follower_back_from_snapshots_drops_what_was_acked) {
  const json cr = api_retry(0, "$JS.API.STREAM.CREATE.SNAP",
                            R"({"name":"SNAP","subjects":["snap.>"],"num_replicas":3,"retention":"workqueue"})");
  ASSERT_FALSE(cr.contains("error")) << cr.dump();
  const json cc = api_retry(0, "$JS.API.CONSUMER.DURABLE.CREATE.SNAP.WORK",
                            R"({"stream_name":"SNAP","config":{"durable_name":"WORK","ack_policy":"explicit"}})");
  ASSERT_FALSE(cc.contains("error")) << cc.dump();
  const std::string leader = stream_leader("SNAP", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader);
  // The follower to stop: not the stream's leader, and not the consumer's where possible.
  const std::string cl = consumer_info(li, "SNAP", "WORK").value("cluster", json::object()).value("leader", "");
  int down = (li + 1) % 3;
  if (index_of(cl) == down) down = (li + 2) % 3;
  if (index_of(cl) == down) down = (li + 1) % 3;
  const int up = 3 - li - down;
  ASSERT_EQ(publish_many(li, 0, 100).size(), 100u);
  ASSERT_TRUE(wait_replica(down, "SNAP", 100, scaled(10000)));
  ::kill(servers_[down]->pid(), SIGKILL);
  ASSERT_EQ(publish_many(li, 100, 1400).size(), 1400u);
  // 600 taken and acknowledged in batches of 100 while it is away (a work queue drops each).
  auto nc = connect(servers_[li]->url());
  ASSERT_TRUE(nc);
  natsSubscription* sub = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&sub, nc.get(), "_INBOX.snapwork"), NATS_OK);
  int acked = 0;
  const auto deadline = clock_type::now() + scaled(30000);
  while (acked < 600 && clock_type::now() < deadline) {
    ASSERT_EQ(natsConnection_PublishRequestString(nc.get(), "$JS.API.CONSUMER.MSG.NEXT.SNAP.WORK", "_INBOX.snapwork",
                                                  R"({"batch":100,"expires":2000000000})"),
              NATS_OK);
    for (int k = 0; k < 100; ++k) {
      natsMsg* m = nullptr;
      if (natsSubscription_NextMsg(&m, sub, 3000) != NATS_OK) break;
      const char* reply = natsMsg_GetReply(m);
      if (reply != nullptr && std::string(reply).rfind("$JS.ACK.", 0) == 0) {
        natsMsg* ok = nullptr;
        if (natsConnection_RequestString(&ok, nc.get(), reply, "", 3000) == NATS_OK) {
          natsMsg_Destroy(ok);
          ++acked;
        }
      }
      natsMsg_Destroy(m);
    }
  }
  natsSubscription_Destroy(sub);
  nc.reset();
  ASSERT_EQ(acked, 600);
  const auto settled = clock_type::now() + scaled(10000);
  while (replica_state(up, "SNAP").value("messages", 0u) != 900u && clock_type::now() < settled)
    std::this_thread::sleep_for(100ms);
  ASSERT_EQ(replica_state(up, "SNAP").value("first_seq", 0u), 601u) << replica_state(up, "SNAP").dump();

  ASSERT_TRUE(servers_[down]->start()) << servers_[down]->error();
  ASSERT_TRUE(wait_replica(down, "SNAP", 1500, scaled(20000))) << replica_state(down, "SNAP").dump() << logs();
  json a;
  const auto converged = clock_type::now() + scaled(10000);
  while (clock_type::now() < converged) {
    a = replica_state(down, "SNAP");
    if (a.value("messages", 0u) == 900u) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(logged(down, "Replicated stream SNAP: restored from a snapshot")) << logs();
  const json b = replica_state(up, "SNAP");
  for (const char* f : {"messages", "bytes", "first_seq", "last_seq"}) EXPECT_EQ(a[f], b[f]) << f << " " << a.dump();
  EXPECT_EQ(a.value("first_seq", 0u), 601u) << a.dump();
  // The consumer, asked through the returned server, goes on after what was acked.
  const json ci = consumer_info(down, "SNAP", "WORK");
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0u), 600u) << ci.dump();
  EXPECT_EQ(ci.value("num_pending", 0u), 900u) << ci.dump();
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

// The meta group compacts its log too: with 8 entries left after a snapshot
// (PEREGRINE_SNAPSHOT_TRAILING), a server down while streams and consumers come and go gets
// the meta table as a snapshot, and drops, reconfigures and creates its replicas to match.
class cluster_meta_snapshots : public cluster_snapshots {
 protected:
  void SetUp() override {
    ::setenv("PEREGRINE_SNAPSHOT_TRAILING", "8", 1);
    cluster_snapshots::SetUp();
  }
  void TearDown() override {
    cluster_snapshots::TearDown();
    ::unsetenv("PEREGRINE_SNAPSHOT_TRAILING");
  }

  // Server i's /jsz stream_detail entry for `name` (empty when it holds no replica).
  json hosted(int i, const std::string& name) {
    const json j = json::parse(http_get(http_[i], "/jsz?streams=true&config=true"), nullptr, false);
    if (!j.is_object() || !j.contains("account_details")) return json::object();
    for (const auto& sd : j["account_details"][0].value("stream_detail", json::array()))
      if (sd.value("name", "") == name) return sd;
    return json::object();
  }
};

TEST_F(cluster_meta_snapshots, a_server_back_after_the_meta_log_compacted_follows_the_table) {
  create_r3(0, "KEEP", "keep.>");
  create_r3(0, "GONE", "gone.>");
  create_r3(0, "RECONF", "reconf.>");
  const int down = 2;
  for (const char* name : {"KEEP", "GONE", "RECONF"}) {
    const auto until = clock_type::now() + scaled(10000);
    while (hosted(down, name).empty() && clock_type::now() < until) std::this_thread::sleep_for(100ms);
    ASSERT_FALSE(hosted(down, name).empty()) << name;
  }
  ::kill(servers_[down]->pid(), SIGKILL);
  ASSERT_TRUE(wait_meta_leader(scaled(20000))) << logs();
  // While it is away: a stream deleted, one reconfigured, 12 consumers created on KEEP (each
  // ~2 KB of meta entry; each create waits out an election without it) and 6 deleted again.
  const json del = api_retry(0, "$JS.API.STREAM.DELETE.GONE", "");
  ASSERT_TRUE(del.value("success", false)) << del.dump();
  const json up = api_retry(0, "$JS.API.STREAM.UPDATE.RECONF",
                            R"({"name":"RECONF","subjects":["reconf.>"],"num_replicas":3,"storage":"file","max_msgs":5})");
  ASSERT_FALSE(up.contains("error")) << up.dump();
  for (int k = 0; k < 12; ++k) {
    const std::string name = "D" + std::to_string(k);
    const json cr = api_retry(k % 2, "$JS.API.CONSUMER.DURABLE.CREATE.KEEP." + name,
                              R"({"stream_name":"KEEP","config":{"durable_name":")" + name +
                                  R"(","ack_policy":"explicit","description":")" + std::string(2000, 'x') + R"("}})");
    ASSERT_FALSE(cr.contains("error")) << name << " " << cr.dump();
  }
  for (int k = 0; k < 6; ++k) {
    const json cd = api_retry(0, "$JS.API.CONSUMER.DELETE.KEEP.D" + std::to_string(k), "");
    ASSERT_TRUE(cd.value("success", false)) << k << " " << cd.dump();
  }
  auto nc = connect(servers_[0]->url());
  ASSERT_TRUE(nc);
  ASSERT_NE(publish(nc.get(), "keep.a", "one", "keep-1", scaled(5000)), 0u);
  const auto compacted = clock_type::now() + scaled(5000);
  while (!logged(0, "meta snapshot at index") && clock_type::now() < compacted) std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(logged(0, "meta snapshot at index")) << logs();

  ASSERT_TRUE(servers_[down]->start()) << servers_[down]->error();
  const auto restored = clock_type::now() + scaled(20000);
  while (!logged(down, "meta state restored from a snapshot") && clock_type::now() < restored)
    std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(logged(down, "meta state restored from a snapshot")) << logs();
  // Its replicas follow the table: GONE dropped, RECONF with the new limit, the consumers
  // created meanwhile placed here.
  const auto settled = clock_type::now() + scaled(20000);
  while (clock_type::now() < settled &&
         (!hosted(down, "GONE").empty() ||
          hosted(down, "RECONF").value("config", json::object()).value("max_msgs", 0) != 5 ||
          !logged(down, "Replicated consumer KEEP > D11 (R3) placed here")))
    std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(hosted(down, "GONE").empty()) << hosted(down, "GONE").dump();
  EXPECT_EQ(hosted(down, "RECONF").value("config", json::object()).value("max_msgs", 0), 5);
  EXPECT_TRUE(logged(down, "Replicated consumer KEEP > D11 (R3) placed here")) << logs();
  ASSERT_TRUE(wait_replica(down, "KEEP", 1, scaled(20000)));

  // With the first server gone, the returned one and the second serve KEEP and a consumer
  // made while it was away.
  ::kill(servers_[0]->pid(), SIGKILL);
  nc.reset();
  auto nc2 = connect(servers_[down]->url());
  ASSERT_TRUE(nc2);
  ASSERT_NE(publish(nc2.get(), "keep.b", "two", "keep-2", scaled(20000)), 0u) << logs();
  json got;
  const auto fetched = clock_type::now() + scaled(20000);
  while (clock_type::now() < fetched) {
    natsMsg* m = nullptr;
    if (natsConnection_RequestString(&m, nc2.get(), "$JS.API.CONSUMER.MSG.NEXT.KEEP.D9", R"({"batch":1})", 2000) ==
        NATS_OK) {
      const std::string data = data_of(m);
      const bool is_msg = natsMsg_GetReply(m) != nullptr && std::string(natsMsg_GetReply(m)).rfind("$JS.ACK.", 0) == 0;
      natsMsg_Destroy(m);
      if (is_msg) {
        EXPECT_EQ(data, "one");
        got = json::object({{"ok", true}});
        break;
      }
    }
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_FALSE(got.empty()) << "no message through D9 with " << char('A' + down) << " and B up" << logs();
}

}  // namespace
}  // namespace peregrine::test
