// STREAM.UPDATE of replicated streams on three real peregrine-server processes (issue 11):
// limits and subjects of an R3 stream changed from a server that does not lead it; the
// chapter's `nats stream edit ORDERS --replicas=3` (an R1 stream with 100 messages scaled to
// R3, every message read back from a survivor after kill -9 of the leader) and back to R1;
// the same with durable consumers (cluster_consumer_scale_test.cc); STREAM.PEER.REMOVE (a peer
// replaced by the third server, or the group shrunk after node loss); SERVER.REMOVE.
// Every wait polls with a bound.
#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_stream_update : public cluster_js_clients {
 protected:
  // A system account user for SERVER.REMOVE (nats-server's rule); other clients are $G's.
  std::string extra_conf() const override {
    return "accounts { $SYS { users: [ { user: sys, password: ps } ] } }\n"
           "authorization { users: [ { user: g, password: pg } ] }\nno_auth_user: g\n";
  }

  using cluster_js_fixture::api;

  // A $JS.API request on server i as JSON (an empty object on timeout); `sys`: as the system
  // account's user.
  json api(int i, const std::string& subject, const std::string& body, int timeout_ms = 3000, bool sys = false) {
    nc_ptr sys_nc;
    if (sys) {
      auto o = make_opts(servers_[i]->url());
      natsOptions_SetUserInfo(o.get(), "sys", "ps");
      sys_nc = connect(o.get());
      if (!sys_nc) return json::object();
    }
    natsMsg* reply = nullptr;
    if (natsConnection_RequestString(&reply, sys ? sys_nc.get() : nc_[i].get(), subject.c_str(), body.c_str(),
                                     timeout_ms) != NATS_OK)
      return json::object();
    json j = json::parse(data_of(reply), nullptr, false);
    natsMsg_Destroy(reply);
    return j.is_object() ? j : json::object();
  }

  // The request retried while the cluster answers 10008 (an election) or times out.
  json api_retried(int i, const std::string& subject, const std::string& body, bool sys = false) {
    json r;
    const auto deadline = clock_type::now() + scaled(15000);
    while (clock_type::now() < deadline) {
      r = api(i, subject, body, 3000, sys);
      const int code = r.value("error", json::object()).value("err_code", 0);
      if (!r.empty() && code != 10008) break;
      std::this_thread::sleep_for(100ms);
    }
    return r;
  }

  static json config(const std::string& name, const std::vector<std::string>& subjects, int replicas) {
    return json{{"name", name}, {"subjects", subjects}, {"storage", "file"}, {"num_replicas", replicas}};
  }

  // A sync publish on server i, retried until acknowledged; the PubAck (empty on failure).
  json publish(int i, const std::string& subject, const std::string& data, const std::string& msg_id,
               std::chrono::milliseconds limit) {
    const auto deadline = clock_type::now() + limit;
    json ack;
    while (clock_type::now() < deadline) {
      natsMsg* m = nullptr;
      natsMsg* reply = nullptr;
      natsMsg_Create(&m, subject.c_str(), nullptr, data.data(), int(data.size()));
      if (!msg_id.empty()) natsMsgHeader_Set(m, "Nats-Msg-Id", msg_id.c_str());
      const natsStatus s = natsConnection_RequestMsg(&reply, nc_[i].get(), m, 1000);
      natsMsg_Destroy(m);
      if (s == NATS_OK) {
        ack = json::parse(data_of(reply), nullptr, false);
        natsMsg_Destroy(reply);
        if (ack.is_object() && (ack.contains("seq") || ack.contains("error"))) return ack;
      }
      std::this_thread::sleep_for(20ms);
    }
    return json::object();
  }

  // StreamInfo on server i once its leader is `leader` and its replicas are exactly `replicas`,
  // every one current (the last answer otherwise).
  json info_when(int i, const std::string& leader, const std::set<std::string>& replicas) {
    json si;
    const auto deadline = clock_type::now() + scaled(15000);
    while (clock_type::now() < deadline) {
      si = api(i, "$JS.API.STREAM.INFO.ORDERS", "");
      const json cl = si.value("cluster", json::object());
      std::set<std::string> seen;
      bool current = true;
      for (const auto& r : cl.value("replicas", json::array())) {
        seen.insert(r.value("name", ""));
        current = current && r.value("current", false);
      }
      if (cl.value("leader", "") == leader && seen == replicas && current) break;
      std::this_thread::sleep_for(50ms);
    }
    return si;
  }

  // ORDERS' StreamInfo on server i once it lists `n` replicas (the last answer otherwise).
  json with_replicas(int i, std::size_t n) {
    json si;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      si = info(i, "ORDERS");
      if (si.value("cluster", json::object()).value("replicas", json::array()).size() == n) break;
      std::this_thread::sleep_for(50ms);
    }
    return si;
  }

  // One message of a pull consumer (MSG.NEXT as a request); its reply subject, "" on timeout.
  std::string next_of(int i, const std::string& consumer, std::uint64_t* stream_seq = nullptr) {
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      natsMsg* m = nullptr;
      const std::string subject = "$JS.API.CONSUMER.MSG.NEXT.ORDERS." + consumer;
      if (natsConnection_RequestString(&m, nc_[i].get(), subject.c_str(), R"({"batch":1,"expires":1000000000})",
                                       2000) != NATS_OK)
        continue;
      const std::string reply = natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "";
      jsMsgMetaData* md = nullptr;
      if (stream_seq && natsMsg_GetMetaData(&md, m) == NATS_OK) {
        *stream_seq = md->Sequence.Stream;
        jsMsgMetaData_Destroy(md);
      }
      natsMsg_Destroy(m);
      if (!reply.empty()) return reply;
    }
    return {};
  }

};

json error_of(const json& r) { return r.value("error", json::object()); }

TEST_F(cluster_stream_update, r3_limits_and_subjects_updated_from_a_follower) {
  const json created = api_retried(0, "$JS.API.STREAM.CREATE.ORDERS", config("ORDERS", {"orders.>"}, 3).dump());
  ASSERT_TRUE(created.contains("config")) << created.dump();
  const std::string leader = stream_leader("ORDERS", scaled(10000));
  ASSERT_FALSE(leader.empty());
  for (int n = 0; n < 10; ++n)
    ASSERT_EQ(publish(n % 3, "orders.new", "o" + std::to_string(n), "", scaled(5000)).value("seq", 0), n + 1);

  // From a server that does not lead the stream: max_msgs 5 (discard old) and a new subject.
  const int follower = (index_of(leader) + 1) % 3;
  json cfg = config("ORDERS", {"orders.>", "returns.*"}, 3);
  cfg["max_msgs"] = 5;
  const json up = api_retried(follower, "$JS.API.STREAM.UPDATE.ORDERS", cfg.dump());
  ASSERT_EQ(up.value("type", ""), "io.nats.jetstream.api.v1.stream_update_response") << up.dump();
  ASSERT_FALSE(up.contains("error")) << up.dump();
  EXPECT_EQ(up["config"].value("max_msgs", 0), 5);
  EXPECT_EQ(up["config"]["subjects"], json::array({"orders.>", "returns.*"}));
  EXPECT_EQ(up["state"].value("messages", 0), 5) << up.dump();
  EXPECT_EQ(up["state"].value("first_seq", 0), 6);
  ASSERT_TRUE(up.contains("cluster")) << up.dump();
  EXPECT_EQ(up["cluster"].value("leader", ""), leader);

  // Every server sees the new config; the new subject takes publishes from any server.
  for (int i = 0; i < 3; ++i) {
    const json si = api(i, "$JS.API.STREAM.INFO.ORDERS", "");
    EXPECT_EQ(si["config"].value("max_msgs", 0), 5) << si.dump();
  }
  const json ack = publish(follower, "returns.r1", "back", "", scaled(5000));
  EXPECT_EQ(ack.value("seq", 0), 11) << ack.dump();
  EXPECT_EQ(ack.value("stream", ""), "ORDERS");
  // Every replica trimmed to the new limit: after a stepdown the next leader holds 5 too.
  json si = api(follower, "$JS.API.STREAM.INFO.ORDERS", "");
  EXPECT_EQ(si["state"].value("messages", 0), 5) << si.dump();
  EXPECT_EQ(si["state"].value("first_seq", 0), 7);
  const json sd = api(follower, "$JS.API.STREAM.LEADER.STEPDOWN.ORDERS", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  std::string next;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline && (next.empty() || next == leader)) {
    next = stream_leader("ORDERS", scaled(2000));
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_NE(next, leader);
  si = api(follower, "$JS.API.STREAM.INFO.ORDERS", "");
  EXPECT_EQ(si["state"].value("messages", 0), 5) << si.dump();
  EXPECT_EQ(si["state"].value("first_seq", 0), 7);
  EXPECT_EQ(si["state"].value("last_seq", 0), 11);

  // Validation as for R1: the storage type cannot change (10052), on any server.
  json bad = config("ORDERS", {"orders.>"}, 3);
  bad["storage"] = "memory";
  const json refused = api_retried(follower, "$JS.API.STREAM.UPDATE.ORDERS", bad.dump());
  EXPECT_EQ(refused.value("error", json::object()).value("err_code", 0), 10052) << refused.dump();
  EXPECT_EQ(refused["error"].value("description", ""), "stream configuration update can not change storage type");
  // The old subject that is gone no longer stores anything.
  json moved = config("ORDERS", {"returns.*"}, 3);
  moved["max_msgs"] = 5;
  const json up2 = api_retried(index_of(next), "$JS.API.STREAM.UPDATE.ORDERS", moved.dump());
  ASSERT_FALSE(up2.contains("error")) << up2.dump();
  natsMsg* reply = nullptr;
  EXPECT_NE(natsConnection_RequestString(&reply, nc_[follower].get(), "orders.new", "x", 500), NATS_OK);
  if (reply) natsMsg_Destroy(reply);
}

TEST_F(cluster_stream_update, r1_scaled_to_r3_survives_leader_kill9_and_back_to_r1) {
  // An R1 stream on A with 100 messages.
  const json created = api(0, "$JS.API.STREAM.CREATE.ORDERS", config("ORDERS", {"orders.>"}, 1).dump());
  ASSERT_TRUE(created.contains("config")) << created.dump();
  std::map<std::uint64_t, std::string> stored;
  for (int n = 0; n < 100; ++n) {
    const std::string data = "order-" + std::to_string(n);
    const json ack = publish(0, "orders.new", data, "id-" + std::to_string(n), scaled(5000));
    ASSERT_EQ(ack.value("seq", 0), n + 1) << ack.dump();
    stored[n + 1] = data;
  }
  // `nats stream edit ORDERS --replicas=3`.
  const json up = api(0, "$JS.API.STREAM.UPDATE.ORDERS", config("ORDERS", {"orders.>"}, 3).dump(), 15000);
  ASSERT_EQ(up.value("type", ""), "io.nats.jetstream.api.v1.stream_update_response") << up.dump();
  ASSERT_FALSE(up.contains("error")) << up.dump();
  EXPECT_EQ(up["config"].value("num_replicas", 0), 3);
  EXPECT_EQ(up["state"].value("messages", 0), 100) << up.dump();
  EXPECT_EQ(up["state"].value("last_seq", 0), 100);
  ASSERT_TRUE(up.contains("cluster")) << up.dump();
  EXPECT_EQ(up["cluster"].value("leader", ""), "A") << "the R1 stream's server seeds and leads it";

  // Both new replicas catch up from the leader: current, on every server's StreamInfo.
  json si;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {
    si = api(2, "$JS.API.STREAM.INFO.ORDERS", "");
    const auto reps = si.value("cluster", json::object()).value("replicas", json::array());
    if (reps.size() == 2 && reps[0].value("current", false) && reps[1].value("current", false)) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(si["cluster"]["replicas"].size(), 2u) << si.dump();
  for (const auto& r : si["cluster"]["replicas"]) EXPECT_TRUE(r.value("current", false)) << si.dump();
  EXPECT_EQ(si["state"].value("messages", 0), 100);
  // One stream, on A too (its R1 entry left the placement table with the R1 stream).
  for (int i = 0; i < 3; ++i) {
    json names, info;
    const auto until = clock_type::now() + scaled(5000);
    while (clock_type::now() < until) {
      names = api(i, "$JS.API.STREAM.NAMES", "");
      info = api(i, "$JS.API.INFO", "");
      if (names.value("total", 0) == 1 && info.value("streams", 0) == 1) break;
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(names.value("total", 0), 1) << char('A' + i) << ": " << names.dump();
    EXPECT_EQ(info.value("streams", 0), 1) << char('A' + i) << ": " << info.dump();
  }
  // Publishes from another server continue the sequence; a retried Msg-Id is still a duplicate.
  const json next = publish(1, "orders.new", "order-100", "id-100", scaled(5000));
  ASSERT_EQ(next.value("seq", 0), 101) << next.dump();
  stored[101] = "order-100";
  const json dup = publish(2, "orders.new", "again", "id-7", scaled(5000));
  EXPECT_EQ(dup.value("seq", 0), 8) << dup.dump();
  EXPECT_TRUE(dup.value("duplicate", false)) << dup.dump();

  // kill -9 of the leader (A, the R1 stream's own server): a survivor serves all 101.
  const std::string leader = stream_leader("ORDERS", scaled(5000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader);
  ::kill(servers_[li]->pid(), SIGKILL);
  servers_[li]->stop();
  nc_[li].reset();
  const int survivor = (li + 1) % 3;
  const json after = publish(survivor, "orders.new", "order-101", "id-101", scaled(15000));
  ASSERT_EQ(after.value("seq", 0), 102) << after.dump();
  stored[102] = "order-101";
  for (const auto& [seq, data] : stored) {
    const json r = api(survivor, "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":)" + std::to_string(seq) + "}");
    ASSERT_TRUE(r.contains("message")) << "seq " << seq << ": " << r.dump();
    EXPECT_EQ(base64_decode(r["message"].value("data", "")), data) << "seq " << seq;
  }

  // Back to R1 (asked on the other survivor): the stream stays on its leader with everything.
  const int other = (li + 2) % 3;
  const json down = api_retried(other, "$JS.API.STREAM.UPDATE.ORDERS", config("ORDERS", {"orders.>"}, 1).dump());
  ASSERT_FALSE(down.contains("error")) << down.dump();
  EXPECT_EQ(down["config"].value("num_replicas", 0), 1);
  EXPECT_EQ(down["state"].value("messages", 0), 102) << down.dump();
  EXPECT_EQ(down.value("cluster", json::object()).value("replicas", json::array()).size(), 0u) << down.dump();
  const json last = publish(other, "orders.new", "order-102", "", scaled(5000));
  EXPECT_EQ(last.value("seq", 0), 103) << last.dump();
  const json r = api(survivor, "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":1})");
  EXPECT_EQ(base64_decode(r.value("message", json::object()).value("data", "")), "order-0") << r.dump();
}

// `nats stream cluster peer-remove ORDERS <server>` on an R2 stream of three servers: the third
// server replaces the removed one (a new group seeded from the leader, its durable consumer
// with it), so the removed server can go and the stream still takes writes.
TEST_F(cluster_stream_update, r2_peer_removed_is_replaced_by_the_server_it_was_not_on) {
  const json created = api_retried(0, "$JS.API.STREAM.CREATE.ORDERS", config("ORDERS", {"orders.>"}, 2).dump());
  ASSERT_TRUE(created.contains("config")) << created.dump();
  const std::string leader = stream_leader("ORDERS", scaled(10000));
  ASSERT_FALSE(leader.empty());
  json si = with_replicas(0, 1);
  ASSERT_EQ(si["cluster"]["replicas"].size(), 1u) << si.dump();
  const std::string removed = si["cluster"]["replicas"][0].value("name", "");
  std::string third;
  for (std::string s : {"A", "B", "C"})
    if (s != leader && s != removed) third = s;
  std::map<std::uint64_t, std::string> stored;
  for (int n = 1; n <= 20; ++n) {
    stored[std::uint64_t(n)] = "order-" + std::to_string(n);
    ASSERT_EQ(publish(n % 3, "orders.new", stored[std::uint64_t(n)], "id-" + std::to_string(n), scaled(5000)).value("seq", 0), n);
  }
  const json w = api_retried(0, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.W",
                             R"({"stream_name":"ORDERS","config":{"durable_name":"W","ack_policy":"explicit","ack_wait":60000000000}})");
  ASSERT_FALSE(w.contains("error")) << w.dump();
  for (int k = 1; k <= 5; ++k) {
    const std::string ack = next_of(0, "W");
    ASSERT_FALSE(ack.empty()) << k;
    natsMsg* r = nullptr;
    ASSERT_EQ(natsConnection_RequestString(&r, nc_[0].get(), ack.c_str(), "+ACK", 3000), NATS_OK) << k;
    natsMsg_Destroy(r);
  }

  // Refused: a server that is not a member, an empty request, a stream that does not exist.
  const int asked = index_of(third);  // neither the leader nor a member
  EXPECT_EQ(error_of(api(asked, "$JS.API.STREAM.PEER.REMOVE.ORDERS", R"({"peer":"Z"})")),
            json({{"code", 400}, {"err_code", 10040}, {"description", "peer not a member"}}));
  EXPECT_EQ(error_of(api(asked, "$JS.API.STREAM.PEER.REMOVE.ORDERS", json{{"peer", third}}.dump())).value("err_code", 0),
            10040);
  EXPECT_EQ(error_of(api(asked, "$JS.API.STREAM.PEER.REMOVE.ORDERS", "")).value("err_code", 0), 10003);
  EXPECT_EQ(error_of(api(asked, "$JS.API.STREAM.PEER.REMOVE.NOPE", R"({"peer":"A"})")).value("err_code", 0), 10059);

  const json rm = api(asked, "$JS.API.STREAM.PEER.REMOVE.ORDERS", json{{"peer", removed}}.dump(), 15000);
  EXPECT_EQ(rm, json({{"type", "io.nats.jetstream.api.v1.stream_remove_peer_response"}, {"success", true}}));
  si = info_when(asked, leader, {third});
  ASSERT_EQ(si["cluster"].value("leader", ""), leader) << si.dump();
  ASSERT_EQ(si["cluster"]["replicas"].size(), 1u) << si.dump();
  EXPECT_EQ(si["cluster"]["replicas"][0].value("name", ""), third) << si.dump();
  EXPECT_EQ(si["state"].value("messages", 0), 20) << si.dump();
  EXPECT_EQ(si["config"].value("num_replicas", 0), 2);
  // The durable followed the stream's peers, with its acks.
  json ci;
  const auto deadline = clock_type::now() + scaled(15000);
  while (clock_type::now() < deadline) {
    ci = api(asked, "$JS.API.CONSUMER.INFO.ORDERS.W", "");
    const json cl = ci.value("cluster", json::object());
    std::set<std::string> on{cl.value("leader", "")};
    for (const auto& r : cl.value("replicas", json::array())) on.insert(r.value("name", ""));
    if (on == std::set<std::string>{leader, third}) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 5) << ci.dump();
  EXPECT_EQ(ci.value("num_pending", 0), 15) << ci.dump();

  // The removed server goes (kill -9): an R2 group that still had it would have lost its
  // quorum; this one takes the next publish.
  const int gone = index_of(removed);
  ::kill(servers_[gone]->pid(), SIGKILL);
  servers_[gone]->stop();
  nc_[gone].reset();
  const int li = index_of(leader);
  stored[21] = "order-21";
  ASSERT_EQ(publish(li, "orders.new", stored[21], "id-21", scaled(10000)).value("seq", 0), 21);
  // The replacement holds everything: it leads after a stepdown and serves every message.
  const json sd = api_retried(li, "$JS.API.STREAM.LEADER.STEPDOWN.ORDERS", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  ASSERT_EQ(stream_leader("ORDERS", scaled(10000), leader), third);
  for (const auto& [seq, data] : stored) {
    const json r = api_retried(asked, "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":)" + std::to_string(seq) + "}");
    ASSERT_TRUE(r.contains("message")) << "seq " << seq << ": " << r.dump();
    EXPECT_EQ(base64_decode(r["message"].value("data", "")), data) << "seq " << seq;
  }
  std::uint64_t seq = 0;
  EXPECT_FALSE(next_of(asked, "W", &seq).empty());
  EXPECT_EQ(seq, 6u) << "the consumer's acks moved with it";
}

// Node loss on a three-server cluster: the lost server is removed from an R3 stream; with no
// server to replace it the group shrinks and the answer is 10075, as nats-server answers. A
// leader asked to remove itself hands leadership on first.
TEST_F(cluster_stream_update, r3_peer_removed_with_no_replacement_shrinks_the_group) {
  const json created = api_retried(0, "$JS.API.STREAM.CREATE.ORDERS", config("ORDERS", {"orders.>"}, 3).dump());
  ASSERT_TRUE(created.contains("config")) << created.dump();
  const std::string leader = stream_leader("ORDERS", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader);
  const int lost = (li + 1) % 3, other = (li + 2) % 3;
  std::map<std::uint64_t, std::string> stored;
  for (int n = 1; n <= 10; ++n) {
    stored[std::uint64_t(n)] = "order-" + std::to_string(n);
    ASSERT_EQ(publish(n % 3, "orders.new", stored[std::uint64_t(n)], "", scaled(5000)).value("seq", 0), n);
  }
  ::kill(servers_[lost]->pid(), SIGKILL);
  servers_[lost]->stop();
  nc_[lost].reset();
  const std::string lost_name(1, char('A' + lost)), other_name(1, char('A' + other));

  const json rm = api_retried(other, "$JS.API.STREAM.PEER.REMOVE.ORDERS", json{{"peer", lost_name}}.dump());
  EXPECT_EQ(rm, json({{"type", "io.nats.jetstream.api.v1.stream_remove_peer_response"},
                      {"error", {{"code", 503}, {"err_code", 10075}, {"description", "peer remap failed"}}}}));
  json si = info_when(other, leader, {other_name});
  ASSERT_EQ(si["cluster"]["replicas"].size(), 1u) << si.dump();
  EXPECT_EQ(si["state"].value("messages", 0), 10) << si.dump();
  stored[11] = "order-11";
  ASSERT_EQ(publish(other, "orders.new", stored[11], "", scaled(10000)).value("seq", 0), 11);

  // The leader removes itself: the other server leads and carries it out (R1 group now).
  const json self = api_retried(other, "$JS.API.STREAM.PEER.REMOVE.ORDERS", json{{"peer", leader}}.dump());
  EXPECT_EQ(error_of(self).value("err_code", 0), 10075) << self.dump();
  si = info_when(other, other_name, {});
  EXPECT_EQ(si["cluster"].value("leader", ""), other_name) << si.dump();
  EXPECT_TRUE(si["cluster"].value("replicas", json::array()).empty()) << si.dump();
  stored[12] = "order-12";
  ASSERT_EQ(publish(li, "orders.new", stored[12], "", scaled(10000)).value("seq", 0), 12);
  for (const auto& [seq, data] : stored) {
    const json r = api_retried(li, "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":)" + std::to_string(seq) + "}");
    ASSERT_TRUE(r.contains("message")) << "seq " << seq << ": " << r.dump();
    EXPECT_EQ(base64_decode(r["message"].value("data", "")), data) << "seq " << seq;
  }
}

// $JS.API.SERVER.REMOVE after node loss: the lost server leaves the meta group (cluster_size
// 2 on the survivors, and it is not added back when it returns) and the streams it held are
// remapped without it, as nats-server's meta leader remaps them.
TEST_F(cluster_stream_update, server_removed_after_node_loss_leaves_the_meta_group_and_its_streams) {
  const json created = api_retried(0, "$JS.API.STREAM.CREATE.ORDERS", config("ORDERS", {"orders.>"}, 3).dump());
  ASSERT_TRUE(created.contains("config")) << created.dump();
  const std::string leader = stream_leader("ORDERS", scaled(10000));
  ASSERT_FALSE(leader.empty());
  // The lost server is one of the stream's followers (its leader keeps the group's quorum).
  const std::string lost(1, char('A' + (index_of(leader) + 1) % 3)), third(1, char('A' + (index_of(leader) + 2) % 3));
  for (int n = 1; n <= 5; ++n)
    ASSERT_EQ(publish(index_of(leader), "orders.new", "o" + std::to_string(n), "", scaled(5000)).value("seq", 0), n);
  const int li = index_of(leader), ti = index_of(third), gone = index_of(lost);
  ::kill(servers_[gone]->pid(), SIGKILL);
  servers_[gone]->stop();
  nc_[gone].reset();

  // From a client of the global account: ignored (no answer), as nats-server ignores it.
  EXPECT_TRUE(api(ti, "$JS.API.SERVER.REMOVE", json{{"peer", lost}}.dump(), 1000).empty());
  // Refused: an empty request, a server that is not a member.
  json r;
  const auto deadline = clock_type::now() + scaled(15000);
  while (clock_type::now() < deadline && r.empty()) r = api(ti, "$JS.API.SERVER.REMOVE", "", 3000, true);  // meta election
  EXPECT_EQ(error_of(r).value("err_code", 0), 10003) << r.dump();
  r = api_retried(ti, "$JS.API.SERVER.REMOVE", R"({"peer":"Z"})", true);
  EXPECT_EQ(r, json({{"type", "io.nats.jetstream.api.v1.meta_server_remove_response"},
                     {"error", {{"code", 400}, {"err_code", 10044}, {"description", "server is not a member of the cluster"}}}}));
  r = api_retried(ti, "$JS.API.SERVER.REMOVE", json{{"peer", lost}}.dump(), true);
  EXPECT_EQ(r, json({{"type", "io.nats.jetstream.api.v1.meta_server_remove_response"}, {"success", true}}));

  auto cluster_size = [&](int i) {
    const json j = json::parse(http_get(http_[i], "/jsz"), nullptr, false);
    return j.is_object() ? j.value("meta_cluster", json::object()).value("cluster_size", 0) : 0;
  };
  auto wait_size = [&](int want) {
    const auto until = clock_type::now() + scaled(15000);
    while (clock_type::now() < until && (cluster_size(li) != want || cluster_size(ti) != want))
      std::this_thread::sleep_for(50ms);
    return cluster_size(li) == want && cluster_size(ti) == want;
  };
  EXPECT_TRUE(wait_size(2)) << cluster_size(li) << " " << cluster_size(ti);
  // The stream it held leaves it out: no server is left to replace it, so the group shrinks
  // to the two survivors, with every message.
  json si = info_when(li, leader, {third});
  EXPECT_EQ(si["cluster"]["replicas"].size(), 1u) << si.dump();
  EXPECT_EQ(si["cluster"]["replicas"][0].value("name", ""), third) << si.dump();
  EXPECT_EQ(si["state"].value("messages", 0), 5) << si.dump();
  EXPECT_EQ(publish(ti, "orders.new", "o6", "", scaled(10000)).value("seq", 0), 6);
  r = api_retried(ti, "$JS.API.SERVER.REMOVE", json{{"peer", lost}}.dump(), true);
  EXPECT_EQ(error_of(r).value("err_code", 0), 10044) << "removed already: " << r.dump();

  // It comes back: routed again, but not a meta member again.
  ASSERT_TRUE(servers_[gone]->start()) << servers_[gone]->error();
  nc_[gone] = connect(servers_[gone]->url());
  ASSERT_TRUE(nc_[gone]);
  ASSERT_TRUE(wait_interest(nc_[gone].get(), nc_[li].get())) << "the returning server is not routed";
  for (int k = 0; k < 20; ++k) {
    ASSERT_EQ(cluster_size(li), 2) << "the removed server was added back";
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(publish(li, "orders.new", "o7", "", scaled(10000)).value("seq", 0), 7);
}

}  // namespace
}  // namespace peregrine::test
