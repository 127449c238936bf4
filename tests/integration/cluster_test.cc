// Core NATS across a cluster: three servers joined by routes (A -> B, C -> B: the A-C route
// comes from gossip), libnats clients on different servers. Every wait is bounded and
// event-driven: interest is known to have crossed a route when a probe subscribed after it
// (on the same connection, so behind it on the same route) is delivered.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

std::string cluster_conf(const std::string& name, int cluster_port, const std::vector<int>& routes) {
  std::string c = "server_name: " + name + "\ncluster {\n  name: pgtest\n  listen: 127.0.0.1:" +
                  std::to_string(cluster_port) + "\n";
  if (!routes.empty()) {
    c += "  routes: [\n";
    for (int p : routes) c += "    nats-route://127.0.0.1:" + std::to_string(p) + "\n";
    c += "  ]\n";
  }
  return c + "}\n";
}

int discovered(natsConnection* nc) {
  char** servers = nullptr;
  int n = 0;
  if (natsConnection_GetDiscoveredServers(nc, &servers, &n) != NATS_OK) return -1;
  for (int i = 0; i < n; ++i) free(servers[i]);
  free(servers);
  return n;
}

std::set<std::string> servers_of(natsConnection* nc) {
  char** servers = nullptr;
  int n = 0;
  std::set<std::string> out;
  if (natsConnection_GetServers(nc, &servers, &n) != NATS_OK) return out;
  for (int i = 0; i < n; ++i) {
    out.insert(servers[i]);
    free(servers[i]);
  }
  free(servers);
  return out;
}

// True once a subscription made on `sub_nc` before this call is visible to `pub_nc`'s server.
bool wait_interest(natsConnection* sub_nc, natsConnection* pub_nc, std::chrono::milliseconds limit = 15s) {
  static std::atomic<int> seq{0};
  const std::string subject = "probe." + std::to_string(++seq);
  auto probe = subscribe_sync(sub_nc, subject);
  if (!probe || natsConnection_Flush(sub_nc) != NATS_OK) return false;
  const auto deadline = clock_type::now() + limit;
  while (clock_type::now() < deadline) {
    if (natsConnection_PublishString(pub_nc, subject.c_str(), "p") != NATS_OK) return false;
    natsConnection_Flush(pub_nc);
    if (next_msg(probe.get(), 100ms)) return true;
  }
  return false;
}

std::string data_of(natsMsg* m) { return std::string(natsMsg_GetData(m), natsMsg_GetDataLength(m)); }

// GET on the monitoring port; the body, or empty.
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(std::uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, std::size_t(n));
    }
  }
  ::close(fd);
  const auto body = out.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : out.substr(body + 4);
}

class cluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set and no nats-server found";
    for (auto& p : cport_) p = pick_free_port();
    // A -> B and C -> B only: A and C find each other through B's gossip.
    http_port_ = pick_free_port();
    add("A", cport_[0], {cport_[1]}, {}, "http_port: " + std::to_string(http_port_) + "\n");
    add("B", cport_[1], {});
    add("C", cport_[2], {cport_[1]});
    for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
    ASSERT_TRUE(wait_mesh()) << logs();
  }

  void TearDown() override {
    if (HasFailure()) std::cerr << logs();
    servers_.clear();
  }

  void add(const std::string& name, int cport, const std::vector<int>& routes, const std::string& bin = {},
           const std::string& extra = {}) {
    servers_.push_back(std::make_unique<server_process>(cluster_conf(name, cport, routes) + extra));
    if (!bin.empty()) servers_.back()->set_binary(bin);
  }

  std::string logs() const {
    std::string out;
    for (std::size_t i = 0; i < servers_.size(); ++i)
      out += "---- server " + std::to_string(i) + " log ----\n" + servers_[i]->log();
    return out;
  }

  // Every running server knows every other one (its INFO connect_urls lists them all).
  bool wait_mesh(std::chrono::milliseconds limit = 20s) {
    const auto deadline = clock_type::now() + limit;
    int want = 0;
    for (auto& s : servers_) want += s->running() ? 1 : 0;
    for (auto& s : servers_) {
      if (!s->running()) continue;
      for (;;) {
        if (clock_type::now() > deadline) return false;
        auto nc = connect(s->url());
        if (nc && discovered(nc.get()) == want - 1) break;
        std::this_thread::sleep_for(50ms);
      }
    }
    return true;
  }

  std::string url(int i) const { return servers_[std::size_t(i)]->url(); }

  std::array<int, 3> cport_{};
  int http_port_ = 0;
  std::vector<std::unique_ptr<server_process>> servers_;
};

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
  EXPECT_NE(one.log().find("JetStream runs standalone on this server"), std::string::npos) << one.log();
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

// One server of each kind: the route protocol must be nats-server 2.9.10's.
class mixed_cluster : public cluster {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set";
    const std::string reference = "/usr/sbin/nats-server";
    if (::access(reference.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << reference;
    cport_[0] = pick_free_port();
    cport_[1] = pick_free_port();
    add("P", cport_[0], {});
    add("N", cport_[1], {cport_[0]}, reference);  // nats-server dials us
    for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
    ASSERT_TRUE(wait_mesh()) << logs();
  }
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
