// Replicated streams (R3) on three real peregrine-server processes: created with libnats from
// a client on one server, published to with sync PubAcks from clients on the others, read
// back through every server, StreamInfo's cluster section, LEADER.STEPDOWN moving the leader,
// kill -9 of the stream leader during a steady publish stream (no acknowledged message lost, a
// new leader acknowledging within 2 s), kill -9 of a follower that catches up from the log
// after its restart. Every wait polls with a bound.
#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_streams : public cluster_js_fixture {};

TEST_F(cluster_streams, r3_created_published_on_every_server_and_stepped_down) {
  create_r3(0, "ORDERS", "orders.>");
  const std::string leader = stream_leader("ORDERS", scaled(10000));
  ASSERT_FALSE(leader.empty()) << "no agreed stream leader";

  // Sync PubAcks from clients on B and C (and A): sequences follow one another.
  std::map<std::uint64_t, std::string> acked;
  for (int i = 0; i < 30; ++i) {
    const int on = i % 3;
    auto nc = connect(servers_[on]->url());
    ASSERT_TRUE(nc);
    const std::string data = "order-" + std::to_string(i);
    const std::uint64_t seq = publish(nc.get(), "orders.new", data, "id-" + std::to_string(i), scaled(5000));
    ASSERT_EQ(seq, std::uint64_t(i + 1)) << "publish " << i << " on " << char('A' + on);
    acked[seq] = data;
  }
  // A retried Msg-Id is a duplicate with its first sequence.
  {
    auto nc = connect(servers_[1]->url());
    const json ack = publish_with_id(nc.get(), "orders.new", "x", "id-3");
    EXPECT_EQ(ack.value("seq", 0u), 4u) << ack.dump();
    EXPECT_TRUE(ack.value("duplicate", false)) << ack.dump();
  }
  for (int i = 0; i < 3; ++i) expect_all(i, "ORDERS", acked);
  {  // STREAM.NAMES on every server lists it (from the meta log)
    for (int i = 0; i < 3; ++i) {
      auto nc = connect(servers_[i]->url());
      const json n = api(nc.get(), "$JS.API.STREAM.NAMES", "");
      EXPECT_EQ(n.value("streams", json::array()), json::array({"ORDERS"})) << n.dump();
      EXPECT_EQ(n.value("total", 0), 1);
      EXPECT_EQ(api(nc.get(), "$JS.API.INFO", "").value("streams", 0), 1);
    }
  }

  // StreamInfo on every server: the state and the cluster as the leader sees it, both
  // followers current once they have the leader's commit.
  const auto deadline = clock_type::now() + scaled(5000);
  json si;
  while (clock_type::now() < deadline) {
    si = info(2, "ORDERS");
    const auto reps = si.value("cluster", json::object()).value("replicas", json::array());
    if (reps.size() == 2 && reps[0].value("current", false) && reps[1].value("current", false)) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(si["state"].value("messages", 0u), 30u) << si.dump();
  EXPECT_EQ(si["state"].value("last_seq", 0u), 30u);
  EXPECT_EQ(si["config"].value("num_replicas", 0), 3);
  const json cl = si["cluster"];
  EXPECT_EQ(cl.value("name", ""), "pgtest");
  EXPECT_EQ(cl.value("leader", ""), leader);
  ASSERT_EQ(cl["replicas"].size(), 2u) << cl.dump();
  for (const auto& r : cl["replicas"]) {
    EXPECT_NE(r.value("name", ""), leader);
    EXPECT_TRUE(r.value("current", false)) << cl.dump();
    EXPECT_EQ(r.value("peer", "").size(), 8u);
  }

  // Stepdown asked on a server that does not lead: the leader moves, publishes continue,
  // and the new leader's own store (a follower's until now) holds everything.
  const int other = (index_of(leader) + 1) % 3;
  {
    auto nc = connect(servers_[other]->url());
    const json r = api(nc.get(), "$JS.API.STREAM.LEADER.STEPDOWN.ORDERS", "");
    EXPECT_EQ(r.dump(), R"({"type":"io.nats.jetstream.api.v1.stream_leader_stepdown_response","success":true})");
  }
  const std::string next = stream_leader("ORDERS", scaled(10000), leader);
  ASSERT_FALSE(next.empty()) << "the leader did not move from " << leader;
  {
    auto nc = connect(servers_[other]->url());
    for (int i = 30; i < 35; ++i) {
      const std::uint64_t seq = publish(nc.get(), "orders.new", "order-" + std::to_string(i), "id-" + std::to_string(i), scaled(5000));
      ASSERT_EQ(seq, std::uint64_t(i + 1));
      acked[seq] = "order-" + std::to_string(i);
    }
  }
  expect_all(index_of(next), "ORDERS", acked);

  // Purge and delete reach the leader and the meta leader.
  {
    auto nc = connect(servers_[(index_of(next) + 1) % 3]->url());
    const json p = api(nc.get(), "$JS.API.STREAM.PURGE.ORDERS", "");
    EXPECT_TRUE(p.value("success", false)) << p.dump();
    EXPECT_EQ(p.value("purged", 0u), 35u) << p.dump();
    const json d = api(nc.get(), "$JS.API.STREAM.DELETE.ORDERS", "");
    EXPECT_TRUE(d.value("success", false)) << d.dump();
    // Every server applies the removal from the meta log (the reply came from the leader's).
    for (int i = 0; i < 3; ++i) {
      const auto deadline = clock_type::now() + scaled(5000);
      json gone;
      while (clock_type::now() < deadline) {
        gone = info(i, "ORDERS");
        if (gone.value("error", json::object()).value("err_code", 0) == 10059) break;
        std::this_thread::sleep_for(50ms);
      }
      EXPECT_EQ(gone.value("error", json::object()).value("err_code", 0), 10059) << gone.dump();
    }
  }
}

// The publish path pipelines: a client on a follower sends 2,000 publishes without waiting
// for any PubAck. Each is acknowledged once, its sequence in the order sent, and the PubAcks
// arrive in that order (they leave as the entries apply, in log order).
struct pipelined_acks {
  std::mutex mu;
  std::vector<std::pair<int, std::uint64_t>> got;  // (publish number, PubAck seq) as they came
  std::string bad;
};

void on_pipelined_ack(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  auto* a = static_cast<pipelined_acks*>(closure);
  const std::string subject = natsMsg_GetSubject(msg);
  const int n = std::atoi(subject.substr(subject.rfind('.') + 1).c_str());
  const json ack = json::parse(data_of(msg), nullptr, false);
  natsMsg_Destroy(msg);
  std::lock_guard lk(a->mu);
  if (!ack.is_object() || ack.contains("error") || !ack.contains("seq")) {
    if (a->bad.empty()) a->bad = subject + ": " + (ack.is_object() ? ack.dump() : std::string("not JSON"));
    return;
  }
  a->got.emplace_back(n, ack["seq"].get<std::uint64_t>());
}

TEST_F(cluster_streams, pipelined_publishes_are_acked_once_in_order) {
  create_r3(0, "PIPE", "pipe.>");
  const std::string leader = stream_leader("PIPE", scaled(10000));
  ASSERT_FALSE(leader.empty()) << "no agreed stream leader";
  const int on = (index_of(leader) + 1) % 3;  // a follower: every publish crosses a route
  auto nc = connect(servers_[on]->url());
  ASSERT_TRUE(nc);
  // Acknowledged once, so the leader's interest in pipe.> has reached this server.
  ASSERT_EQ(publish(nc.get(), "pipe.first", "first", "first", scaled(5000)), 1u);
  pipelined_acks acks;
  natsSubscription* sub = nullptr;
  ASSERT_EQ(natsConnection_Subscribe(&sub, nc.get(), "pipe_acks.*", on_pipelined_ack, &acks), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
  constexpr int kN = 2000;
  for (int i = 0; i < kN; ++i) {
    const std::string data = "p-" + std::to_string(i);
    ASSERT_EQ(natsConnection_PublishRequestString(nc.get(), "pipe.x", ("pipe_acks." + std::to_string(i)).c_str(),
                                                  data.c_str()),
              NATS_OK);
  }
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
  const auto deadline = clock_type::now() + scaled(30000);
  while (clock_type::now() < deadline) {
    {
      std::lock_guard lk(acks.mu);
      if (acks.got.size() >= std::size_t(kN) || !acks.bad.empty()) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  natsSubscription_Unsubscribe(sub);
  {
    std::lock_guard lk(acks.mu);
    EXPECT_EQ(acks.bad, "");
    ASSERT_EQ(acks.got.size(), std::size_t(kN)) << logs();
    for (int k = 0; k < kN; ++k) {
      ASSERT_EQ(acks.got[std::size_t(k)].first, k) << "PubAck " << k << " out of order";
      ASSERT_EQ(acks.got[std::size_t(k)].second, std::uint64_t(k + 2)) << "publish " << k;
    }
  }
  natsSubscription_Destroy(sub);
  const json si = info(on, "PIPE");
  EXPECT_EQ(si.value("state", json::object()).value("messages", 0u), std::uint64_t(kN + 1)) << si.dump();
  EXPECT_EQ(si.value("state", json::object()).value("last_seq", 0u), std::uint64_t(kN + 1));
}

TEST_F(cluster_streams, too_few_servers_is_10005) {
  auto nc = connect(servers_[0]->url());
  ASSERT_TRUE(nc);
  json r;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {
    r = api(nc.get(), "$JS.API.STREAM.CREATE.BIG", R"({"name":"BIG","subjects":["big"],"num_replicas":5})");
    if (r.value("error", json::object()).value("err_code", 0) != 10008) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(r.value("error", json::object()).value("err_code", 0), 10005) << r.dump();
  EXPECT_EQ(r["error"].value("description", ""), "no suitable peers for placement") << r.dump();
}

TEST_F(cluster_streams, leader_kill9_loses_no_acknowledged_message_and_follower_catches_up) {
  create_r3(1, "EVENTS", "events.>");
  std::map<std::uint64_t, std::string> acked;
  int next_id = 0;
  std::vector<long> failovers;
  for (int round = 0; round < 3; ++round) {
    const std::string leader = stream_leader("EVENTS", scaled(10000));
    ASSERT_FALSE(leader.empty()) << "round " << round;
    const int li = index_of(leader);
    const int pub_on = (li + 1) % 3;
    auto nc = connect(servers_[pub_on]->url());
    ASSERT_TRUE(nc);
    // Steady publishing, then kill -9 of the leader mid-stream.
    for (int i = 0; i < 20; ++i, ++next_id) {
      const std::string data = "ev-" + std::to_string(next_id);
      const std::uint64_t seq = publish(nc.get(), "events.x", data, "e-" + std::to_string(next_id), scaled(5000));
      ASSERT_NE(seq, 0u) << "round " << round << " publish " << i;
      acked[seq] = data;
    }
    ::kill(servers_[li]->pid(), SIGKILL);
    const auto killed = clock_type::now();
    servers_[li]->stop();
    const std::string data = "ev-" + std::to_string(next_id);
    const std::uint64_t seq = publish(nc.get(), "events.x", data, "e-" + std::to_string(next_id++), scaled(10000));
    const long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - killed).count());
    ASSERT_NE(seq, 0u) << "no acknowledged publish after killing " << leader;
    acked[seq] = data;
    failovers.push_back(ms);
    std::cerr << "round " << round << ": killed leader " << leader << ", next PubAck after " << ms << " ms\n";
    EXPECT_LE(ms, 2000 * timeout_mult());
    for (int i = 0; i < 10; ++i, ++next_id) {
      const std::string d = "ev-" + std::to_string(next_id);
      const std::uint64_t s = publish(nc.get(), "events.x", d, "e-" + std::to_string(next_id), scaled(5000));
      ASSERT_NE(s, 0u);
      acked[s] = d;
    }
    // The killed server comes back and catches up from the log.
    ASSERT_TRUE(servers_[li]->start()) << servers_[li]->error();
  }
  // Sequences are gapless and every acknowledged one is there, read through every server
  // (once the last restarted one replayed the meta log and knows the stream again).
  ASSERT_FALSE(stream_leader("EVENTS", scaled(10000)).empty());
  std::uint64_t expect = 1;
  for (const auto& [seq, d] : acked) EXPECT_EQ(seq, expect++);
  for (int i = 0; i < 3; ++i) expect_all(i, "EVENTS", acked);

  // A follower killed: publishes go on with two servers; restarted, it catches up.
  const std::string leader = stream_leader("EVENTS", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int fi = (index_of(leader) + 1) % 3;
  ::kill(servers_[fi]->pid(), SIGKILL);
  servers_[fi]->stop();
  {
    auto nc = connect(servers_[index_of(leader)]->url());
    for (int i = 0; i < 10; ++i, ++next_id) {
      const std::string d = "ev-" + std::to_string(next_id);
      const std::uint64_t s = publish(nc.get(), "events.x", d, "e-" + std::to_string(next_id), scaled(5000));
      ASSERT_NE(s, 0u);
      acked[s] = d;
    }
  }
  ASSERT_TRUE(servers_[fi]->start()) << servers_[fi]->error();
  // Caught up: the leader reports it current; then it takes over and serves everything.
  const std::string follower(1, char('A' + fi));
  const auto deadline = clock_type::now() + scaled(15000);
  bool current = false;
  while (clock_type::now() < deadline && !current) {
    for (const auto& r : info(index_of(leader), "EVENTS").value("cluster", json::object()).value("replicas", json::array()))
      if (r.value("name", "") == follower && r.value("current", false)) current = true;
    if (!current) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(current) << "restarted follower " << follower << " never current";
  // With the third server down, a stepdown can only hand leadership to the restarted
  // follower (the leader and it are a majority): its own store must hold everything.
  const int third = 3 - index_of(leader) - fi;
  ::kill(servers_[third]->pid(), SIGKILL);
  servers_[third]->stop();
  std::string moved;
  for (int tries = 0; tries < 5 && moved.empty(); ++tries) {  // until the leader saw the link drop
    auto nc = connect(servers_[index_of(leader)]->url());
    const json r = api(nc.get(), "$JS.API.STREAM.LEADER.STEPDOWN.EVENTS", "");
    EXPECT_TRUE(r.value("success", false)) << r.dump();
    moved = stream_leader("EVENTS", scaled(3000), leader);
  }
  ASSERT_EQ(moved, follower) << "leadership did not reach " << follower;
  expect_all(fi, "EVENTS", acked);
}


// /jsz on every server counts the replicated streams it holds a replica of, as nats-server
// 2.9.10 does on a 3-node cluster (run by hand beside this: every member counts an R3 stream in
// streams/messages/bytes/storage; ha_assets is its Raft nodes, the meta group's included; an R1
// stream's cluster is {name, leader}); stream details carry the cluster as StreamInfo's, and
// with raft=true the stream's Raft group name (stream_raft_group, a later nats-server's field,
// after state). Top-level field order is 2.9.10's.
TEST_F(cluster_streams, jsz_counts_replicated_streams_with_their_cluster_and_raft_group) {
  create_r3(0, "JSZ", "jsz.>");
  const std::string leader = stream_leader("JSZ", scaled(10000));
  ASSERT_FALSE(leader.empty());
  {
    auto nc = connect(servers_[1]->url());
    ASSERT_TRUE(nc);
    for (int i = 1; i <= 5; ++i)
      ASSERT_EQ(publish(nc.get(), "jsz.x", "data-" + std::to_string(i), "j" + std::to_string(i), scaled(5000)),
                std::uint64_t(i));
    const json r1 = api(nc.get(), "$JS.API.STREAM.CREATE.LOCAL", R"({"name":"LOCAL","subjects":["local.>"]})");
    ASSERT_FALSE(r1.contains("error")) << r1.dump();
    ASSERT_EQ(publish(nc.get(), "local.x", "l", "l1", scaled(5000)), 1u);
  }
  for (int i = 0; i < 3; ++i) {
    const std::string path = "/jsz?streams=true&config=true&raft=true";
    json j;
    const auto deadline = clock_type::now() + scaled(10000);
    auto jsz_messages = [](const json& body) {  // JSZ's own count in this server's details
      if (!body.is_object() || !body.contains("account_details")) return 0u;
      for (const auto& sd : body["account_details"][0].value("stream_detail", json::array()))
        if (sd.value("name", "") == "JSZ") return sd["state"].value("messages", 0u);
      return 0u;
    };
    while (clock_type::now() < deadline) {  // a follower applies the last entries a little later
      j = json::parse(http_get(http_[i], path), nullptr, false);
      if (jsz_messages(j) >= 5u) break;
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(j.is_object()) << char('A' + i);
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"server_id", "now", "config", "memory", "storage", "reserved_memory",
                                              "reserved_storage", "accounts", "ha_assets", "api", "streams", "consumers",
                                              "messages", "bytes", "meta_cluster", "account_details"}))
        << j.dump();
    const bool has_local = i == 1;
    EXPECT_EQ(j.value("streams", 0), has_local ? 2 : 1) << char('A' + i) << ": " << j.dump();
    EXPECT_EQ(j.value("messages", 0u), has_local ? 6u : 5u) << j.dump();
    EXPECT_EQ(j.value("ha_assets", 0), 2) << "the meta group and JSZ's group: " << j.dump();
    EXPECT_GT(j.value("bytes", 0u), 0u);
    EXPECT_EQ(j.value("storage", 0u), j.value("bytes", 0u)) << "file streams: " << j.dump();
    const json meta = j.value("meta_cluster", json::object());
    EXPECT_EQ(meta.value("name", ""), "pgtest");
    EXPECT_EQ(meta.value("cluster_size", 0), 3);
    EXPECT_EQ(meta.value("peer", "").size(), 8u);
    ASSERT_TRUE(j.contains("account_details") && j["account_details"].size() == 1) << j.dump();
    std::map<std::string, json> details;
    for (const auto& d : j["account_details"][0].value("stream_detail", json::array())) details[d.value("name", "")] = d;
    ASSERT_TRUE(details.count("JSZ")) << j.dump();
    const json& d = details["JSZ"];
    keys.clear();
    for (const auto& [k, v] : d.items()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"name", "created", "cluster", "config", "state", "stream_raft_group"}));
    EXPECT_EQ(d["cluster"].value("name", ""), "pgtest");
    EXPECT_EQ(d["cluster"].value("leader", ""), leader);
    EXPECT_EQ(d["config"].value("num_replicas", 0), 3);
    EXPECT_EQ(d["state"].value("messages", 0u), 5u);
    const std::string group = d.value("stream_raft_group", "");
    EXPECT_EQ(group.rfind("S-R3F-", 0), 0u) << group;
    EXPECT_EQ(group.size(), 14u) << group;
    if (i == index_of(leader)) {
      EXPECT_EQ(d["cluster"].value("replicas", json::array()).size(), 2u) << d.dump();
    }
    EXPECT_EQ(details.count("LOCAL"), has_local ? 1u : 0u);
    if (has_local) {
      EXPECT_EQ(details["LOCAL"]["cluster"].dump(), R"({"name":"pgtest","leader":"B"})");
      EXPECT_FALSE(details["LOCAL"].contains("stream_raft_group")) << "an R1 stream has no Raft group here";
    }
    // The group name is the same on every member; without raft=true it is not shown.
    const json plain = json::parse(http_get(http_[i], "/jsz?streams=true"), nullptr, false);
    for (const auto& sd : plain["account_details"][0]["stream_detail"]) {
      EXPECT_FALSE(sd.contains("stream_raft_group"));
      EXPECT_FALSE(sd.contains("config"));
    }
    if (i > 0) {
      const json first = json::parse(http_get(http_[0], path), nullptr, false);
      for (const auto& sd : first["account_details"][0]["stream_detail"]) {
        if (sd.value("name", "") == "JSZ") {
          EXPECT_EQ(sd.value("stream_raft_group", ""), group);
        }
      }
    }
    EXPECT_EQ(http_get(http_[i], "/healthz?js-server-only=true"), R"({"status":"ok"})");
  }
  EXPECT_EQ(http_get(http_[0], "/jsz?raft=maybe").rfind("Error decoding boolean for 'raft'", 0), 0u) << "a bad boolean is a 400";
  // leader-only: the meta leader alone answers (nats-server's 400 text elsewhere).
  int leaders = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string b = http_get(http_[i], "/jsz?leader-only=true");
    if (b.rfind("{", 0) == 0)
      ++leaders;
    else
      EXPECT_EQ(b, "filtered response: not leader") << char('A' + i);
  }
  EXPECT_EQ(leaders, 1);
}

// Clustered JetStream is unhealthy without a meta leader (nats-server's check and text): with two
// of three servers gone the last one loses its leader; js-enabled-only still answers ok.
TEST_F(cluster_streams, healthz_without_a_meta_leader_is_unavailable) {
  for (int i = 0; i < 3; ++i) EXPECT_EQ(http_get(http_[i], "/healthz"), R"({"status":"ok"})") << char('A' + i);
  for (int i = 1; i < 3; ++i) {
    ::kill(servers_[i]->pid(), SIGKILL);
    servers_[i]->stop();
  }
  std::string h;
  const auto deadline = clock_type::now() + scaled(30000);
  while (clock_type::now() < deadline) {
    h = http_get(http_[0], "/healthz?js-server-only=true");
    if (h.find("meta leader") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  const json j = json::parse(h, nullptr, false);
  EXPECT_EQ(j.value("status", ""), "unavailable") << h;
  EXPECT_EQ(j.value("error", ""), "JetStream has not established contact with a meta leader") << h;
  EXPECT_EQ(http_get(http_[0], "/healthz?js-enabled-only=true"), R"({"status":"ok"})");
}

}  // namespace
}  // namespace peregrine::test
