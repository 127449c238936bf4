// Cluster configurations and neighbours: server_name rules, JetStream beside a cluster, a
// config listing every server (itself too), and a mixed cluster with nats-server 2.9.10.
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/raw_client.h"

namespace peregrine::test {
namespace {

bool is_peregrine() { return server_binary().find("peregrine") != std::string::npos; }

TEST(cluster_config, server_name_is_required) {
  if (server_binary().empty() || !is_peregrine()) GTEST_SKIP() << "peregrine-server only (nats-server does not require it)";
  server_process p("cluster {\n  listen: 127.0.0.1:" + std::to_string(pick_free_port()) + "\n}\n");
  ASSERT_FALSE(p.start(2s));
  EXPECT_NE(p.error().find("server_name is required in a cluster"), std::string::npos) << p.error();
}

TEST(cluster_config, a_route_to_a_server_with_the_same_name_is_refused) {
  if (server_binary().empty()) GTEST_SKIP();
  const int c1 = pick_free_port(), c2 = pick_free_port();
  server_process one(cluster_conf("twin", c1, {}));
  server_process two(cluster_conf("twin", c2, {c1}));
  ASSERT_TRUE(one.start()) << one.error();
  ASSERT_TRUE(two.start()) << two.error();
  const auto deadline = clock_type::now() + 10s;
  auto both = [&] { return one.log() + two.log(); };  // either end may notice first
  while (clock_type::now() < deadline && both().find("duplicate name") == std::string::npos)
    std::this_thread::sleep_for(50ms);
  EXPECT_NE(both().find("duplicate name"), std::string::npos) << both();
  auto nc = connect(two.url());
  ASSERT_TRUE(nc);
  EXPECT_EQ(discovered(nc.get()), 0);  // no route: the other server is not advertised
}

TEST(cluster_config, jetstream_beside_a_cluster_stays_per_server) {
  if (server_binary().empty() || !is_peregrine()) GTEST_SKIP() << "nats-server clusters JetStream (needs 3 servers)";
  const int c1 = pick_free_port(), c2 = pick_free_port();
  server_process one(cluster_conf("js1", c1, {}) + "jetstream { store_dir: \"@TMPDIR@/js\" }\n");
  server_process two(cluster_conf("js2", c2, {c1}));
  ASSERT_TRUE(one.start()) << one.error();
  ASSERT_TRUE(two.start()) << two.error();
  EXPECT_NE(one.log().find("an R1 stream stays on the server that created it"), std::string::npos) << one.log();
  auto on_one = connect(one.url());
  auto on_two = connect(two.url());
  ASSERT_TRUE(on_one && on_two);
  natsMsg* reply = nullptr;
  ASSERT_EQ(natsConnection_RequestString(&reply, on_one.get(), "$JS.API.INFO", "", 5000), NATS_OK);
  msg_ptr r(reply);
  EXPECT_NE(data_of(r.get()).find("io.nats.jetstream.api.v1.account_info_response"), std::string::npos);
  // The other server has no JetStream, and one's is not reachable through the route.
  auto s = subscribe_sync(on_one.get(), "js.probe");
  ASSERT_TRUE(s);
  ASSERT_TRUE(wait_interest(on_one.get(), on_two.get()));
  EXPECT_EQ(natsConnection_RequestString(&reply, on_two.get(), "$JS.API.INFO", "", 2000), NATS_NO_RESPONDERS);
}

TEST(cluster_config, a_push_consumer_delivers_to_a_subscriber_on_another_server) {
  if (server_binary().empty() || !is_peregrine()) GTEST_SKIP() << "standalone JetStream beside a cluster: peregrine";
  const int c1 = pick_free_port(), c2 = pick_free_port();
  server_process one(cluster_conf("js1", c1, {}) + "jetstream { store_dir: \"@TMPDIR@/js\" }\n");
  server_process two(cluster_conf("js2", c2, {c1}));
  ASSERT_TRUE(one.start()) << one.error();
  ASSERT_TRUE(two.start()) << two.error();
  auto on_one = connect(one.url());
  auto on_two = connect(two.url());
  ASSERT_TRUE(on_one && on_two);
  auto inbox = subscribe_sync(on_two.get(), "push.deliver");
  ASSERT_TRUE(inbox);
  ASSERT_TRUE(wait_interest(on_two.get(), on_one.get()));
  auto request = [&](const char* subject, const char* body) {
    natsMsg* reply = nullptr;
    EXPECT_EQ(natsConnection_RequestString(&reply, on_one.get(), subject, body, 5000), NATS_OK) << subject;
    msg_ptr r(reply);
    return r ? data_of(r.get()) : std::string();
  };
  EXPECT_EQ(request("$JS.API.STREAM.CREATE.ORDERS", R"({"name":"ORDERS","subjects":["orders.*"]})").find("error"),
            std::string::npos);
  EXPECT_EQ(request("$JS.API.CONSUMER.CREATE.ORDERS.P",
                    R"({"stream_name":"ORDERS","config":{"durable_name":"P","deliver_subject":"push.deliver","ack_policy":"none"}})")
                .find("error"),
            std::string::npos);
  request("orders.1", "first");
  // The delivery crosses the route on the inbox subject it matched, not the stream subject.
  auto m = next_msg(inbox.get(), 5s);
  ASSERT_TRUE(m) << one.log();
  EXPECT_EQ(data_of(m.get()), "first");
}

TEST(cluster_config, garbage_on_the_route_port_closes_that_connection_only) {
  if (server_binary().empty()) GTEST_SKIP();
  const int cport = pick_free_port();
  server_process srv(cluster_conf("solo", cport, {}));
  ASSERT_TRUE(srv.start()) << srv.error();
  for (const char* junk : {"RMSG $G foo notasize\r\n", "RS+\r\n", "HMSG $G foo 99 3\r\nabc\r\n",
                           "\x01\x02\x03 nonsense\r\n"}) {
    raw_client r;
    ASSERT_TRUE(r.connect(cport));
    EXPECT_NE(r.read_info().find("\"server_id\""), std::string::npos);
    ASSERT_TRUE(r.send(junk));
    EXPECT_TRUE(r.read_until_closed(5s).has_value()) << "still open after " << junk;
  }
  EXPECT_TRUE(healthy_client_works(srv.url()));
}

// Client TLS covers the client listener only: routes stay plaintext (as in nats-server
// without a cluster tls block), so a cluster of TLS-only servers still routes.
TEST(cluster_config, routes_work_when_clients_must_use_tls) {
  if (server_binary().empty()) GTEST_SKIP();
  const std::string dir = PG_TLS_TEST_DIR;
  const std::string tls = "tls {\n  cert_file: \"" + dir + "/server.pem\"\n  key_file: \"" + dir + "/server-key.pem\"\n}\n";
  const int c1 = pick_free_port(), c2 = pick_free_port();
  server_process one(cluster_conf("t1", c1, {}) + tls);
  server_process two(cluster_conf("t2", c2, {c1}) + tls);
  ASSERT_TRUE(one.start()) << one.error();
  ASSERT_TRUE(two.start()) << two.error();
  auto secure = [&](const server_process& s) {
    auto o = make_opts(s.url());
    natsOptions_SetSecure(o.get(), true);
    natsOptions_LoadCATrustedCertificates(o.get(), (dir + "/ca.pem").c_str());
    natsOptions_SetExpectedHostname(o.get(), "localhost");
    std::string err;
    auto nc = connect(o.get(), &err);
    EXPECT_TRUE(nc) << err;
    return nc;
  };
  auto on_one = secure(one);
  auto on_two = secure(two);
  ASSERT_TRUE(on_one && on_two);
  auto s = subscribe_sync(on_two.get(), "over.tls");
  ASSERT_TRUE(s);
  ASSERT_TRUE(wait_interest(on_two.get(), on_one.get())) << one.log() << two.log();
  ASSERT_EQ(natsConnection_PublishString(on_one.get(), "over.tls", "hi"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(on_one.get()), NATS_OK);
  auto m = next_msg(s.get(), 5s);
  ASSERT_TRUE(m);
  EXPECT_EQ(data_of(m.get()), "hi");
}

// One server of each kind: the route protocol must be nats-server 2.9.10's.
class mixed_cluster : public cluster {
 protected:
  void SetUp() override { start_mixed_pair(); }
};

TEST_F(mixed_cluster, pub_sub_and_queue_groups_both_ways) {
  auto p = connect(url(0));
  auto n = connect(url(1));
  ASSERT_TRUE(p && n);
  auto on_p = subscribe_sync(p.get(), "mixed.>");
  auto on_n = subscribe_sync(n.get(), "mixed.>");
  auto q_p = subscribe_sync(p.get(), "mixed.q", "g");
  auto q_n = subscribe_sync(n.get(), "mixed.q", "g");
  ASSERT_TRUE(on_p && on_n && q_p && q_n);
  ASSERT_TRUE(wait_interest(p.get(), n.get()));
  ASSERT_TRUE(wait_interest(n.get(), p.get()));
  natsMsg* hm = nullptr;
  ASSERT_EQ(natsMsg_Create(&hm, "mixed.h", "reply.to", "body", 4), NATS_OK);
  msg_ptr hmsg(hm);
  ASSERT_EQ(natsMsgHeader_Set(hm, "X-Test", "yes"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishMsg(p.get(), hm), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(n.get(), "mixed.plain", "from-n"), NATS_OK);
  constexpr int kQ = 100;
  for (int i = 0; i < kQ; ++i) {
    ASSERT_EQ(natsConnection_PublishString(i % 2 ? p.get() : n.get(), "mixed.q", std::to_string(i).c_str()), NATS_OK);
  }
  ASSERT_EQ(natsConnection_Flush(p.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(n.get()), NATS_OK);
  // Each plain subscriber: the header message from P, the plain one from N, all kQ queue messages.
  for (natsSubscription* s : {on_p.get(), on_n.get()}) {
    int q = 0;
    bool header_seen = false, plain_seen = false;
    for (int i = 0; i < kQ + 2; ++i) {
      auto m = next_msg(s, 5s);
      ASSERT_TRUE(m) << i;
      const std::string subj = natsMsg_GetSubject(m.get());
      if (subj == "mixed.h") {
        const char* v = nullptr;
        ASSERT_EQ(natsMsgHeader_Get(m.get(), "X-Test", &v), NATS_OK);
        EXPECT_STREQ(v, "yes");
        EXPECT_STREQ(natsMsg_GetReply(m.get()), "reply.to");
        header_seen = true;
      } else if (subj == "mixed.plain") {
        plain_seen = true;
      } else {
        ++q;
      }
    }
    EXPECT_TRUE(header_seen && plain_seen);
    EXPECT_EQ(q, kQ);
  }
  std::set<std::string> seen;
  int from_p = 0, from_n = 0;
  const auto deadline = clock_type::now() + 10s;
  while (int(seen.size()) < kQ && clock_type::now() < deadline) {
    while (auto m = next_msg(q_p.get(), 1ms)) {
      EXPECT_TRUE(seen.insert(data_of(m.get())).second);
      ++from_p;
    }
    while (auto m = next_msg(q_n.get(), 1ms)) {
      EXPECT_TRUE(seen.insert(data_of(m.get())).second);
      ++from_n;
    }
  }
  EXPECT_EQ(int(seen.size()), kQ);
  EXPECT_GT(from_p, 0);
  EXPECT_GT(from_n, 0);
  EXPECT_FALSE(next_msg(q_p.get(), 200ms));
  EXPECT_FALSE(next_msg(q_n.get(), 50ms));
}

}  // namespace
}  // namespace peregrine::test
