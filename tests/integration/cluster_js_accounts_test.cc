// JetStream per account in a cluster: three servers with the same accounts, two of them with
// JetStream (ACME, GLOBEX). Each account has its own replicated streams and consumers (the
// meta log is one for the cluster; an ORDERS in each account, same subjects, is two streams),
// its R1 streams are served from every server in that account only, a replicated stream of an
// account survives the loss of its leader, and the cluster operator's requests from the
// system account reach JetStream although the global account has none. Runs against
// nats-server 2.9.10 as a cluster too (cluster_js_accounts_nats_server).
#include <set>
#include <string>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_js_accounts : public cluster_js_fixture {
 protected:
  std::string extra_conf() const override {
    return R"(
accounts {
  ACME: { jetstream: enabled, users: [ { user: acme, password: pa } ] }
  GLOBEX: { jetstream: enabled, users: [ { user: globex, password: pg } ] }
  ADMIN: { users: [ { user: admin, password: px } ] }
  LIMITED: { jetstream: { max_streams: 2, max_consumers: 1, max_file: 10000 },
             users: [ { user: limited, password: pl } ] }
}
system_account: ADMIN
)";
  }
  bool runs_on_reference() const override { return true; }

  nc_ptr as(int i, const char* user, const char* pass) {
    auto o = make_opts(servers_[i]->url());
    natsOptions_SetUserInfo(o.get(), user, pass);
    std::string err;
    auto nc = connect(o.get(), &err);
    EXPECT_TRUE(nc) << user << "@" << i << ": " << err;
    return nc;
  }
  nc_ptr acme(int i) { return as(i, "acme", "pa"); }
  nc_ptr globex(int i) { return as(i, "globex", "pg"); }

  // A request retried while the cluster answers 10008 (electing), 10005 (nats-server's meta
  // leader before it heard every peer) or nothing.
  json api_until(natsConnection* nc, const std::string& subject, const std::string& body) {
    json r;
    const auto deadline = clock_type::now() + scaled(15000);
    while (clock_type::now() < deadline) {
      r = api(nc, subject, body);
      const int code = r.value("error", json::object()).value("err_code", 0);
      if (!r.empty() && code != 10008 && code != 10005) break;
      std::this_thread::sleep_for(200ms);
    }
    return r;
  }
  json create(natsConnection* nc, const json& cfg) {
    return api_until(nc, "$JS.API.STREAM.CREATE." + cfg.value("name", ""), cfg.dump());
  }
  // The stream's info once it has a leader (an empty object when it has none in time).
  json led_info(natsConnection* nc, const std::string& name) {
    const auto deadline = clock_type::now() + scaled(10000);
    json j;
    while (clock_type::now() < deadline) {
      j = api(nc, "$JS.API.STREAM.INFO." + name, "");
      if (!j.value("cluster", json::object()).value("leader", "").empty()) return j;
      std::this_thread::sleep_for(50ms);
    }
    return j;
  }
  static int err_code(const json& j) { return j.value("error", json::object()).value("err_code", 0); }
  static std::uint64_t msgs(const json& info) {
    return info.value("state", json::object()).value("messages", std::uint64_t(0));
  }
};

TEST_F(cluster_js_accounts, each_account_has_its_own_replicated_orders) {
  auto a0 = acme(0), g2 = globex(2), a1 = acme(1), g1 = globex(1);
  ASSERT_TRUE(a0 && g2 && a1 && g1);
  const json orders{{"name", "ORDERS"}, {"subjects", {"orders.>"}}, {"num_replicas", 3}};
  const json ca = create(a0.get(), orders);
  ASSERT_TRUE(ca.contains("config")) << ca.dump() << logs();
  EXPECT_EQ(ca["config"].value("num_replicas", 0), 3);
  // The same name and subjects in another account: not in use, no overlap.
  const json cg = create(g2.get(), orders);
  ASSERT_TRUE(cg.contains("config")) << cg.dump() << logs();
  ASSERT_FALSE(led_info(a1.get(), "ORDERS").empty());
  ASSERT_FALSE(led_info(g1.get(), "ORDERS").empty());
  // Publishes from the middle server reach each account's own stream.
  EXPECT_EQ(publish(a1.get(), "orders.created", "acme-1", "a1", scaled(10000)), 1u);
  EXPECT_EQ(publish(g1.get(), "orders.created", "globex-1", "g1", scaled(10000)), 1u);
  EXPECT_EQ(publish(g1.get(), "orders.shipped", "globex-2", "g2", scaled(10000)), 2u);
  for (int i = 0; i < 3; ++i) {
    auto a = acme(i), g = globex(i);
    ASSERT_TRUE(a && g);
    const json ia = led_info(a.get(), "ORDERS"), ig = led_info(g.get(), "ORDERS");
    EXPECT_EQ(msgs(ia), 1u) << i << ": " << ia.dump();
    EXPECT_EQ(msgs(ig), 2u) << i << ": " << ig.dump();
    EXPECT_EQ(ia.value("cluster", json::object()).value("replicas", json::array()).size(), 2u) << ia.dump();
    // The message is the account's own.
    const json m = api(a.get(), "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":1})");
    EXPECT_EQ(m.value("message", json::object()).value("subject", ""), "orders.created") << m.dump();
    const json none = api(a.get(), "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":2})");
    EXPECT_EQ(err_code(none), 10037) << none.dump();
  }
  // Deleting one account's ORDERS leaves the other's.
  const json del = api_until(g2.get(), "$JS.API.STREAM.DELETE.ORDERS", "");
  EXPECT_TRUE(del.value("success", false)) << del.dump();
  // (every server once it applied the delete)
  int gone = 0;
  const auto deadline = clock_type::now() + scaled(5000);
  while (clock_type::now() < deadline && (gone = err_code(api(g1.get(), "$JS.API.STREAM.INFO.ORDERS", ""))) != 10059)
    std::this_thread::sleep_for(50ms);
  EXPECT_EQ(gone, 10059);
  EXPECT_EQ(msgs(led_info(a0.get(), "ORDERS")), 1u);
}

TEST_F(cluster_js_accounts, an_accounts_replicated_consumer_delivers_and_acks_from_any_server) {
  auto g0 = globex(0), g2 = globex(2);
  ASSERT_TRUE(g0 && g2);
  ASSERT_TRUE(create(g0.get(), {{"name", "WORK"}, {"subjects", {"work.>"}}, {"num_replicas", 3}}).contains("config"));
  ASSERT_FALSE(led_info(g2.get(), "WORK").empty());
  for (int k = 1; k <= 3; ++k)
    ASSERT_EQ(publish(g2.get(), "work.item", "w" + std::to_string(k), "w" + std::to_string(k), scaled(10000)),
              std::uint64_t(k));
  const json cc = api_until(g0.get(), "$JS.API.CONSUMER.CREATE.WORK.PROC",
                            R"({"stream_name":"WORK","config":{"durable_name":"PROC","ack_policy":"explicit"}})");
  ASSERT_TRUE(cc.contains("config")) << cc.dump() << logs();
  EXPECT_EQ(cc.value("cluster", json::object()).value("replicas", json::array()).size(), 2u) << cc.dump();
  // Fetch on another server, ack each.
  const std::string sub_inbox = "_INBOX.proc";
  natsSubscription* sub = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&sub, g2.get(), sub_inbox.c_str()), NATS_OK);
  ASSERT_EQ(natsConnection_PublishRequestString(g2.get(), "$JS.API.CONSUMER.MSG.NEXT.WORK.PROC", sub_inbox.c_str(),
                                                R"({"batch":3,"expires":5000000000})"),
            NATS_OK);
  std::set<std::string> got;
  for (int k = 0; k < 3; ++k) {
    natsMsg* m = nullptr;
    ASSERT_EQ(natsSubscription_NextMsg(&m, sub, int(scaled(5000).count())), NATS_OK) << logs();
    got.insert(data_of(m));
    ASSERT_NE(natsMsg_GetReply(m), nullptr);
    ASSERT_EQ(natsConnection_PublishString(g2.get(), natsMsg_GetReply(m), "+ACK"), NATS_OK);
    natsMsg_Destroy(m);
  }
  natsSubscription_Destroy(sub);
  EXPECT_EQ(got, (std::set<std::string>{"w1", "w2", "w3"}));
  ASSERT_EQ(natsConnection_Flush(g2.get()), NATS_OK);
  // Every server sees the acks (through the consumer's leader).
  const auto deadline = clock_type::now() + scaled(5000);
  json ci;
  while (clock_type::now() < deadline) {
    ci = api(g0.get(), "$JS.API.CONSUMER.INFO.WORK.PROC", "");
    if (ci.value("ack_floor", json::object()).value("stream_seq", 0) == 3) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 3) << ci.dump();
  EXPECT_EQ(ci.value("num_ack_pending", -1), 0) << ci.dump();
  // ACME has no such stream or consumer.
  auto a0 = acme(0);
  ASSERT_TRUE(a0);
  EXPECT_EQ(err_code(api(a0.get(), "$JS.API.CONSUMER.INFO.WORK.PROC", "")), 10059);
}

TEST_F(cluster_js_accounts, an_accounts_r1_stream_is_served_from_every_server_in_that_account) {
  auto a0 = acme(0);
  ASSERT_TRUE(a0);
  const json c = create(a0.get(), {{"name", "LOCAL"}, {"subjects", {"local.>"}}});
  ASSERT_TRUE(c.contains("config")) << c.dump();
  ASSERT_TRUE(create(a0.get(), {{"name", "SHARED"}, {"subjects", {"shared.>"}}, {"num_replicas", 3}}).contains("config"));
  auto a2 = acme(2), g2 = globex(2);
  ASSERT_TRUE(a2 && g2);
  // Once the cluster knows it, another server answers for it in ACME only.
  json info;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {
    info = api(a2.get(), "$JS.API.STREAM.INFO.LOCAL", "");
    if (info.contains("config")) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(info.contains("config")) << info.dump() << logs();
  EXPECT_EQ(publish(a2.get(), "local.x", "x", "x1", scaled(5000)), 1u);
  EXPECT_EQ(err_code(api(g2.get(), "$JS.API.STREAM.INFO.LOCAL", "")), 10059);
  const json names = api(a2.get(), "$JS.API.STREAM.NAMES", "");
  std::set<std::string> listed;
  for (const auto& n : names.value("streams", json::array())) listed.insert(n.get<std::string>());
  EXPECT_EQ(listed, (std::set<std::string>{"LOCAL", "SHARED"})) << names.dump();
  const json gnames = api(g2.get(), "$JS.API.STREAM.NAMES", "");
  EXPECT_EQ(gnames.value("total", -1), 0) << gnames.dump();
  // The account's usage counts its own streams only.
  const json ai = api(a2.get(), "$JS.API.INFO", "");
  EXPECT_EQ(ai.value("streams", -1), 2) << ai.dump();
  const json gi = api(g2.get(), "$JS.API.INFO", "");
  EXPECT_EQ(gi.value("streams", -1), 0) << gi.dump();
}

TEST_F(cluster_js_accounts, an_accounts_stream_loses_nothing_when_its_leader_is_killed) {
  auto a0 = acme(0);
  ASSERT_TRUE(a0);
  ASSERT_TRUE(create(a0.get(), {{"name", "ORDERS"}, {"subjects", {"orders.>"}}, {"num_replicas", 3}}).contains("config"));
  const std::string leader = led_info(a0.get(), "ORDERS").value("cluster", json::object()).value("leader", "");
  ASSERT_FALSE(leader.empty());
  const int li = leader[0] - 'A';
  const int other = (li + 1) % 3;
  auto pub = acme(other);
  ASSERT_TRUE(pub);
  for (int k = 1; k <= 20; ++k)
    ASSERT_EQ(publish(pub.get(), "orders.created", "o" + std::to_string(k), "o" + std::to_string(k), scaled(5000)),
              std::uint64_t(k));
  ::kill(servers_[li]->pid(), SIGKILL);
  // A new leader takes publishes; the 20 acknowledged are all there.
  EXPECT_EQ(publish(pub.get(), "orders.created", "o21", "o21", scaled(15000)), 21u) << logs();
  const json i = led_info(pub.get(), "ORDERS");
  EXPECT_NE(i.value("cluster", json::object()).value("leader", ""), leader) << i.dump();
  EXPECT_EQ(msgs(i), 21u) << i.dump();
}

// What server i's own replica of an account's stream holds (/jsz, per account).
json replica_in(int http_port, const std::string& account, const std::string& name) {
  const json j = json::parse(http_get(http_port, "/jsz?accounts=true&streams=true"), nullptr, false);
  if (!j.is_object()) return json::object();
  for (const auto& ad : j.value("account_details", json::array())) {
    if (ad.value("name", "") != account) continue;
    for (const auto& sd : ad.value("stream_detail", json::array()))
      if (sd.value("name", "") == name) return sd.value("state", json::object());
  }
  return json::object();
}

// A server killed and started again replays the one meta log into both accounts and brings
// back each account's replica, which catches up with what was published while it was down.
TEST_F(cluster_js_accounts, a_restarted_server_brings_back_every_accounts_replicas) {
  if (reference_server()) GTEST_SKIP() << "reads replica states from Peregrine's /jsz stream_detail per server";
  auto a0 = acme(0), g0 = globex(0);
  ASSERT_TRUE(a0 && g0);
  const json orders{{"name", "ORDERS"}, {"subjects", {"orders.>"}}, {"num_replicas", 3}};
  ASSERT_TRUE(create(a0.get(), orders).contains("config"));
  ASSERT_TRUE(create(g0.get(), orders).contains("config"));
  for (int k = 1; k <= 5; ++k) ASSERT_GT(publish(a0.get(), "orders.a", "a", "a" + std::to_string(k), scaled(10000)), 0u);
  for (int k = 1; k <= 7; ++k) ASSERT_GT(publish(g0.get(), "orders.g", "g", "g" + std::to_string(k), scaled(10000)), 0u);
  ::kill(servers_[2]->pid(), SIGKILL);
  for (int k = 6; k <= 8; ++k) ASSERT_GT(publish(a0.get(), "orders.a", "a", "a" + std::to_string(k), scaled(15000)), 0u);
  for (int k = 8; k <= 10; ++k) ASSERT_GT(publish(g0.get(), "orders.g", "g", "g" + std::to_string(k), scaled(15000)), 0u);
  ASSERT_TRUE(servers_[2]->start()) << servers_[2]->error();
  const auto deadline = clock_type::now() + scaled(20000);
  json ra, rg;
  while (clock_type::now() < deadline) {
    ra = replica_in(http_[2], "ACME", "ORDERS");
    rg = replica_in(http_[2], "GLOBEX", "ORDERS");
    if (ra.value("messages", 0) == 8 && rg.value("messages", 0) == 10) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(ra.value("messages", 0), 8) << ra.dump() << logs();
  EXPECT_EQ(rg.value("messages", 0), 10) << rg.dump();
  EXPECT_EQ(rg.value("last_seq", 0), 10) << rg.dump();
}

// An account's limits hold across the cluster as nats-server applies them: a replicated
// stream reserves max_bytes on each replica (10047 past max_file), max_streams counts the
// account's streams on every server (10027), max_consumers caps each stream's (10026).
TEST_F(cluster_js_accounts, an_accounts_limits_count_replicas_and_every_servers_streams) {
  auto l0 = as(0, "limited", "pl"), l2 = as(2, "limited", "pl");
  ASSERT_TRUE(l0 && l2);
  const json s1 = create(l0.get(), {{"name", "S1"}, {"subjects", {"s1"}}, {"num_replicas", 3}, {"max_bytes", 3000}});
  ASSERT_TRUE(s1.contains("config")) << s1.dump();
  // 3 x 3000 reserved: another 3 x 1000 does not fit in 10000.
  const json s2 = create(l2.get(), {{"name", "S2"}, {"subjects", {"s2"}}, {"num_replicas", 3}, {"max_bytes", 1000}});
  EXPECT_EQ(err_code(s2), 10047) << s2.dump();
  // One replica of 1000 does.
  const json r1 = create(l2.get(), {{"name", "S2"}, {"subjects", {"s2"}}, {"max_bytes", 1000}});
  ASSERT_TRUE(r1.contains("config")) << r1.dump();
  // Two streams in the account, on different servers: a third is refused anywhere.
  json s3;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {  // once the cluster knows server C's R1 stream
    s3 = create(l0.get(), {{"name", "S3"}, {"subjects", {"s3"}}});
    if (err_code(s3) == 10027) break;
    if (s3.contains("config")) api(l0.get(), "$JS.API.STREAM.DELETE.S3", "");
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(err_code(s3), 10027) << s3.dump();
  EXPECT_EQ(s3.value("error", json::object()).value("description", ""), "maximum number of streams reached");
  const json s4 = create(l2.get(), {{"name", "S4"}, {"subjects", {"s4"}}, {"num_replicas", 3}});
  EXPECT_EQ(err_code(s4), 10027) << s4.dump();
  const char* c1 = R"({"stream_name":"S1","config":{"durable_name":"C1","ack_policy":"explicit"}})";
  const char* c2 = R"({"stream_name":"S1","config":{"durable_name":"C2","ack_policy":"explicit"}})";
  EXPECT_TRUE(api_until(l0.get(), "$JS.API.CONSUMER.CREATE.S1.C1", c1).contains("config"));
  const json second = api_until(l2.get(), "$JS.API.CONSUMER.CREATE.S1.C2", c2);
  EXPECT_EQ(err_code(second), 10026) << second.dump();
  // The other accounts are not limited by it.
  auto a0 = acme(0);
  ASSERT_TRUE(a0);
  for (const char* n : {"X1", "X2", "X3"})
    EXPECT_TRUE(create(a0.get(), {{"name", n}, {"subjects", {std::string(n) + ".>"}}, {"num_replicas", 3},
                                  {"max_bytes", 100000}})
                    .contains("config"));
}

TEST_F(cluster_js_accounts, the_operators_meta_stepdown_reaches_jetstream_without_a_global_one) {
  auto admin = as(0, "admin", "px");
  ASSERT_TRUE(admin);
  json r;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {
    r = api(admin.get(), "$JS.API.META.LEADER.STEPDOWN", "");
    if (r.value("success", false)) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(r.value("success", false)) << r.dump() << logs();
  EXPECT_TRUE(wait_meta_leader(scaled(15000))) << logs();
  // JetStream keeps working in the accounts afterwards.
  auto g1 = globex(1);
  ASSERT_TRUE(g1);
  EXPECT_TRUE(create(g1.get(), {{"name", "AFTER"}, {"subjects", {"after.>"}}, {"num_replicas", 3}}).contains("config"));
}

}  // namespace
}  // namespace peregrine::test
