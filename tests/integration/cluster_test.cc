// Core NATS across a three-server cluster (cluster_fixture.h), libnats clients on different
// servers: fan-out once per server, wildcards, queue groups, request/reply, unsubscribe,
// gossip, INFO connect_urls, restart, /routez.
#include "tests/integration/cluster_fixture.h"

namespace peregrine::test {
namespace {

TEST_F(cluster, every_server_gets_every_message_once) {
  std::vector<nc_ptr> nc;
  std::vector<sub_ptr> sub;
  for (int i = 0; i < 3; ++i) {
    nc.push_back(connect(url(i)));
    ASSERT_TRUE(nc.back());
    sub.push_back(subscribe_sync(nc.back().get(), "all.msgs"));
    ASSERT_TRUE(sub.back());
  }
  for (int s = 0; s < 3; ++s) {
    for (int p = 0; p < 3; ++p) {
      if (s != p) {
        ASSERT_TRUE(wait_interest(nc[s].get(), nc[p].get())) << s << "<-" << p;
      }
    }
  }
  constexpr int kPer = 20;
  for (int p = 0; p < 3; ++p) {
    for (int i = 0; i < kPer; ++i)
      ASSERT_EQ(natsConnection_PublishString(nc[p].get(), "all.msgs", (std::to_string(p) + ":" + std::to_string(i)).c_str()),
                NATS_OK);
    ASSERT_EQ(natsConnection_PublishString(nc[p].get(), "all.msgs", (std::to_string(p) + ":end").c_str()), NATS_OK);
    ASSERT_EQ(natsConnection_Flush(nc[p].get()), NATS_OK);
  }
  for (int s = 0; s < 3; ++s) {
    std::map<int, int> next;  // publisher -> next expected index (per-publisher order)
    int ends = 0;
    while (ends < 3) {
      auto m = next_msg(sub[s].get(), 5s);
      ASSERT_TRUE(m) << "server " << s << " after " << ends << " ends";
      const std::string d = data_of(m.get());
      const int p = d[0] - '0';
      if (d.substr(2) == "end") {
        EXPECT_EQ(next[p], kPer) << "server " << s << " publisher " << p;
        ++ends;
      } else {
        EXPECT_EQ(std::stoi(d.substr(2)), next[p]++) << "server " << s << " publisher " << p;
      }
    }
    // No copy comes back around a loop of routes.
    EXPECT_FALSE(next_msg(sub[s].get(), 300ms)) << "server " << s << " got a message twice";
  }
}

TEST_F(cluster, wildcard_subscriptions_match_across_servers) {
  auto a = connect(url(0));
  auto c = connect(url(2));
  ASSERT_TRUE(a && c);
  auto star = subscribe_sync(a.get(), "w.*.x");
  auto full = subscribe_sync(a.get(), "w.>");
  ASSERT_TRUE(star && full);
  ASSERT_TRUE(wait_interest(a.get(), c.get()));
  for (const char* s : {"w.a.x", "w.b.y", "v.a.x", "w.end.x"}) ASSERT_EQ(natsConnection_PublishString(c.get(), s, s), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(c.get()), NATS_OK);
  auto subjects = [](natsSubscription* s, std::size_t n) {
    std::vector<std::string> got;
    while (got.size() < n) {
      auto m = next_msg(s, 5s);
      if (!m) break;
      got.push_back(natsMsg_GetSubject(m.get()));
    }
    return got;
  };
  EXPECT_EQ(subjects(star.get(), 2), (std::vector<std::string>{"w.a.x", "w.end.x"}));
  EXPECT_EQ(subjects(full.get(), 3), (std::vector<std::string>{"w.a.x", "w.b.y", "w.end.x"}));
  // Two matching subscriptions on A, one message each: the route carried one copy per message
  // and A fanned it out, nothing more.
  EXPECT_FALSE(next_msg(star.get(), 200ms));
  EXPECT_FALSE(next_msg(full.get(), 50ms));
}

TEST_F(cluster, queue_group_delivers_each_message_to_one_member_cluster_wide) {
  auto a = connect(url(0));
  auto b = connect(url(1));
  auto c = connect(url(2));
  ASSERT_TRUE(a && b && c);
  std::vector<std::pair<int, sub_ptr>> members;
  members.emplace_back(0, subscribe_sync(a.get(), "jobs", "workers"));
  members.emplace_back(0, subscribe_sync(a.get(), "jobs", "workers"));
  members.emplace_back(1, subscribe_sync(b.get(), "jobs", "workers"));
  members.emplace_back(2, subscribe_sync(c.get(), "jobs", "workers"));
  auto watcher = subscribe_sync(c.get(), "jobs");  // a plain subscriber sees every message
  for (auto& [srv, s] : members) ASSERT_TRUE(s);
  ASSERT_TRUE(watcher);
  ASSERT_TRUE(wait_interest(a.get(), b.get()));
  ASSERT_TRUE(wait_interest(c.get(), b.get()));
  constexpr int kMsgs = 400;
  for (int i = 0; i < kMsgs; ++i)
    ASSERT_EQ(natsConnection_PublishString(b.get(), "jobs", std::to_string(i).c_str()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(b.get()), NATS_OK);
  for (int i = 0; i < kMsgs; ++i) {
    auto m = next_msg(watcher.get(), 5s);
    ASSERT_TRUE(m) << i;
    EXPECT_EQ(data_of(m.get()), std::to_string(i));
  }
  std::set<std::string> seen;
  std::map<int, int> per_server;
  const auto deadline = clock_type::now() + 10s;
  while (int(seen.size()) < kMsgs && clock_type::now() < deadline) {
    for (auto& [srv, s] : members) {
      while (auto m = next_msg(s.get(), 1ms)) {
        EXPECT_TRUE(seen.insert(data_of(m.get())).second) << "delivered twice: " << data_of(m.get());
        ++per_server[srv];
      }
    }
  }
  EXPECT_EQ(int(seen.size()), kMsgs);
  for (auto& [srv, s] : members) EXPECT_FALSE(next_msg(s.get(), 100ms)) << "extra message on server " << srv;
  for (int srv = 0; srv < 3; ++srv) EXPECT_GT(per_server[srv], 0) << "no member on server " << srv << " was chosen";
  // Queue weights: A announced 2 members, C 1, so A is chosen about twice as often as C
  // (nats-server picks at random: 400 messages make the inverse practically impossible).
  EXPECT_GT(per_server[0], per_server[2] * 3 / 2) << per_server[0] << " vs " << per_server[2];
}

void echo_cb(natsConnection* nc, natsSubscription*, natsMsg* msg, void*) {
  if (natsMsg_GetReply(msg))
    natsConnection_Publish(nc, natsMsg_GetReply(msg), natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
  natsMsg_Destroy(msg);
}

TEST_F(cluster, request_reply_across_servers) {
  auto responder = connect(url(2));
  auto requester = connect(url(0));
  ASSERT_TRUE(responder && requester);
  natsSubscription* raw = nullptr;
  ASSERT_EQ(natsConnection_Subscribe(&raw, responder.get(), "svc.echo", echo_cb, nullptr), NATS_OK);
  sub_ptr svc(raw);
  ASSERT_TRUE(wait_interest(responder.get(), requester.get()));
  for (int i = 0; i < 20; ++i) {
    natsMsg* reply = nullptr;
    const std::string body = "req-" + std::to_string(i);
    ASSERT_EQ(natsConnection_RequestString(&reply, requester.get(), "svc.echo", body.c_str(), 5000), NATS_OK) << i;
    msg_ptr r(reply);
    EXPECT_EQ(data_of(r.get()), body);
  }
}

TEST_F(cluster, unsubscribe_removes_interest_on_other_servers) {
  auto a = connect(url(0));
  auto c = connect(url(2));
  ASSERT_TRUE(a && c);
  auto s = subscribe_sync(a.get(), "leaving");
  ASSERT_TRUE(s);
  ASSERT_TRUE(wait_interest(a.get(), c.get()));
  natsMsg* reply = nullptr;
  // With interest on A, a request from C does not fail fast (it times out: nobody answers).
  EXPECT_EQ(natsConnection_RequestString(&reply, c.get(), "leaving", "x", 300), NATS_TIMEOUT);
  ASSERT_TRUE(next_msg(s.get(), 2s));
  ASSERT_EQ(natsSubscription_Unsubscribe(s.get()), NATS_OK);
  ASSERT_TRUE(wait_interest(a.get(), c.get()));  // the RS- went before this probe's RS+
  EXPECT_EQ(natsConnection_RequestString(&reply, c.get(), "leaving", "x", 2000), NATS_NO_RESPONDERS);
  auto b = connect(url(1));
  ASSERT_TRUE(b);
  ASSERT_TRUE(wait_interest(a.get(), b.get()));
  EXPECT_EQ(natsConnection_RequestString(&reply, b.get(), "leaving", "x", 2000), NATS_NO_RESPONDERS);
}

TEST_F(cluster, gossip_forms_a_direct_route_between_unconfigured_servers) {
  // A and C were configured with B only; with B gone they still talk over their own route.
  servers_[1]->stop();
  auto a = connect(url(0));
  auto c = connect(url(2));
  ASSERT_TRUE(a && c);
  auto s = subscribe_sync(c.get(), "direct");
  ASSERT_TRUE(s);
  ASSERT_TRUE(wait_interest(c.get(), a.get()));
  ASSERT_EQ(natsConnection_PublishString(a.get(), "direct", "hi"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  auto m = next_msg(s.get(), 5s);
  ASSERT_TRUE(m);
  EXPECT_EQ(data_of(m.get()), "hi");
}

TEST_F(cluster, info_lists_the_cluster_and_updates_when_a_server_joins_and_leaves) {
  auto a = connect(url(0));
  ASSERT_TRUE(a);
  const auto known = servers_of(a.get());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(known.count(url(i))) << url(i) << " missing from the pool";
  raw_client raw;
  ASSERT_TRUE(raw.open(servers_[0]->port()));
  // D joins through B; A's clients hear of it by an async INFO.
  add("D", pick_free_port(), {cport_[1]});
  ASSERT_TRUE(servers_[3]->start()) << servers_[3]->error();
  const std::string d_url = "127.0.0.1:" + std::to_string(servers_[3]->port());
  auto wait_info = [&](bool with_d) {
    const auto deadline = clock_type::now() + 15s;
    while (clock_type::now() < deadline) {
      const std::string line = raw.read_info(500ms);
      if (line.rfind("INFO ", 0) == 0 && (line.find(d_url) != std::string::npos) == with_d) return true;
      if (line == "PING\r\n") raw.send("PONG\r\n");
    }
    return false;
  };
  EXPECT_TRUE(wait_info(true)) << "no async INFO naming D";
  const auto deadline = clock_type::now() + 15s;
  while (discovered(a.get()) < 3 && clock_type::now() < deadline) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(servers_of(a.get()).count("nats://" + d_url)) << "libnats did not add D to its pool";
  servers_[3]->stop();
  EXPECT_TRUE(wait_info(false)) << "no async INFO without D after it left";
}

TEST_F(cluster, route_comes_back_after_a_server_restarts) {
  servers_[2]->stop();
  ASSERT_TRUE(servers_[2]->start()) << servers_[2]->error();
  ASSERT_TRUE(wait_mesh());
  auto a = connect(url(0));
  auto c = connect(url(2));
  ASSERT_TRUE(a && c);
  auto on_c = subscribe_sync(c.get(), "after.restart");
  auto on_a = subscribe_sync(a.get(), "after.restart");
  ASSERT_TRUE(on_c && on_a);
  ASSERT_TRUE(wait_interest(c.get(), a.get()));
  ASSERT_TRUE(wait_interest(a.get(), c.get()));
  ASSERT_EQ(natsConnection_PublishString(a.get(), "after.restart", "from-a"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(c.get(), "after.restart", "from-c"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(c.get()), NATS_OK);
  std::multiset<std::string> got_c, got_a;
  for (int i = 0; i < 2; ++i) {
    auto m = next_msg(on_c.get(), 5s);
    ASSERT_TRUE(m);
    got_c.insert(data_of(m.get()));
    auto n = next_msg(on_a.get(), 5s);
    ASSERT_TRUE(n);
    got_a.insert(data_of(n.get()));
  }
  EXPECT_EQ(got_c, (std::multiset<std::string>{"from-a", "from-c"}));
  EXPECT_EQ(got_a, (std::multiset<std::string>{"from-a", "from-c"}));
}

TEST_F(cluster, routez_lists_the_routes_and_their_interest) {
  auto b = connect(url(1));
  auto c = connect(url(2));
  auto a = connect(url(0));
  ASSERT_TRUE(a && b && c);
  auto s = subscribe_sync(c.get(), "seen.on.routez");
  ASSERT_TRUE(s);
  ASSERT_TRUE(wait_interest(c.get(), a.get()));
  const std::string body = http_get(http_port_, "/routez?subs=1");
  EXPECT_NE(body.find("\"num_routes\": 2"), std::string::npos) << body;
  for (natsConnection* nc : {b.get(), c.get()}) {
    char id[128] = {};
    ASSERT_EQ(natsConnection_GetConnectedServerId(nc, id, sizeof id), NATS_OK);
    EXPECT_NE(body.find(std::string("\"remote_id\": \"") + id + "\""), std::string::npos) << id << "\n" << body;
  }
  EXPECT_NE(body.find("\"seen.on.routez\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"did_solicit\": true"), std::string::npos) << body;  // A dialed B
  const std::string varz = http_get(http_port_, "/varz");
  EXPECT_NE(varz.find("\"cluster_port\": " + std::to_string(cport_[0])), std::string::npos) << varz;
  EXPECT_NE(varz.find("\"routes\": 2"), std::string::npos) << varz;
  // cluster.urls as nats-server lists them: host:port, never the URL (it may hold credentials).
  EXPECT_NE(varz.find("\"127.0.0.1:" + std::to_string(cport_[1]) + "\""), std::string::npos) << varz;
  EXPECT_EQ(varz.find("nats-route://"), std::string::npos) << varz;
  // Routes are not client connections.
  const std::string connz = http_get(http_port_, "/connz");
  EXPECT_NE(connz.find("\"num_connections\": 1,"), std::string::npos) << connz;
}

// Every server lists every server, itself included (a common nats-server config): routes to
// self are dropped, each pair keeps one of the two routes it dials, messages arrive once.
class full_mesh_config : public cluster {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set";
    for (auto& p : cport_) p = pick_free_port();
    const std::vector<int> all(cport_.begin(), cport_.end());
    add("A", cport_[0], all);
    add("B", cport_[1], all);
    add("C", cport_[2], all);
    for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
    ASSERT_TRUE(wait_mesh()) << logs();
  }
};

TEST_F(full_mesh_config, one_route_per_pair_and_each_message_once) {
  std::vector<nc_ptr> nc;
  std::vector<sub_ptr> sub;
  for (int i = 0; i < 3; ++i) {
    nc.push_back(connect(url(i)));
    ASSERT_TRUE(nc.back());
    sub.push_back(subscribe_sync(nc.back().get(), "mesh"));
    ASSERT_TRUE(sub.back());
  }
  for (int s = 1; s < 3; ++s) ASSERT_TRUE(wait_interest(nc[s].get(), nc[0].get()));
  std::this_thread::sleep_for(1500ms);  // duplicate routes found and closed meanwhile must not matter
  for (int i = 0; i < 50; ++i) ASSERT_EQ(natsConnection_PublishString(nc[0].get(), "mesh", std::to_string(i).c_str()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc[0].get()), NATS_OK);
  for (int s = 0; s < 3; ++s) {
    for (int i = 0; i < 50; ++i) {
      auto m = next_msg(sub[s].get(), 5s);
      ASSERT_TRUE(m) << "server " << s << " message " << i;
      EXPECT_EQ(data_of(m.get()), std::to_string(i));
    }
    EXPECT_FALSE(next_msg(sub[s].get(), 200ms)) << "server " << s << " got a message twice";
  }
  EXPECT_TRUE(wait_mesh());  // and every server still knows the two others
}

}  // namespace
}  // namespace peregrine::test
