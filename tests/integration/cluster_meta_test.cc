// The JetStream meta group on three real peregrine-server processes (src/repl): it forms from
// the configured routes, elects a leader that every server reports in /jsz meta_cluster and
// /varz jetstream.meta, moves on $JS.API.META.LEADER.STEPDOWN (asked by a system account user
// on a follower, which forwards it; ignored from the global account), fails over when the leader is killed with SIGKILL, and takes the restarted
// server back. Every wait polls the monitoring endpoints with a bound.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/raw_client.h"

namespace peregrine::test {
namespace {

using json = nlohmann::ordered_json;  // key order is checked

// The TCP ports process `pid` listens on: its socket fds' inodes matched against the LISTEN
// entries (state 0A) of /proc/net/tcp and tcp6.
std::set<int> listening_ports(pid_t pid) {
  std::set<std::string> inodes;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      char target[128];
      const ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      const std::string t(target, std::size_t(n));
      if (t.starts_with("socket:[")) inodes.insert(t.substr(8, t.size() - 9));
    }
    ::closedir(d);
  }
  std::set<int> ports;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (st != "0A" || !inodes.count(inode)) continue;
      ports.insert(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
    }
  }
  return ports;
}

double timeout_mult() {
  const char* m = std::getenv("TIMEOUT_MULT");
  return m ? std::max(1.0, std::atof(m)) : 1.0;
}

// A system account user for the operator's requests; other clients stay anonymous ($G).
const char* kUsers = R"(
accounts { $SYS { users: [ { user: sys, password: ps } ] } }
authorization { users: [ { user: g, password: pg } ] }
no_auth_user: g
)";

nc_ptr connect_sys(const std::string& url) {
  auto o = make_opts(url);
  natsOptions_SetUserInfo(o.get(), "sys", "ps");
  std::string err;
  auto nc = connect(o.get(), &err);
  EXPECT_TRUE(nc) << err;
  return nc;
}

class cluster_meta : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set";
    if (server_binary().find("nats-server") != std::string::npos)
      GTEST_SKIP() << "META.LEADER.STEPDOWN is a system-account request on nats-server";
    for (int i = 0; i < 3; ++i) {
      cport_[i] = pick_free_port();
      http_[i] = pick_free_port();
    }
  }

  // Starts A, B and C with routes to all three; `cluster_extra` goes inside cluster { }.
  void start_all(const std::string& cluster_extra = {}) {
    const std::vector<int> all(cport_.begin(), cport_.end());
    for (int i = 0; i < 3; ++i) {
      std::string conf = cluster_conf(std::string(1, char('A' + i)), cport_[i], all);
      conf.insert(conf.rfind('}'), cluster_extra);
      servers_.push_back(std::make_unique<server_process>(conf + kUsers + "jetstream { store_dir: \"@TMPDIR@/js\" }\nhttp_port: " +
                                                          std::to_string(http_[i]) + "\n"));
    }
    for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
  }

  void TearDown() override {
    if (HasFailure())
      for (std::size_t i = 0; i < servers_.size(); ++i)
        std::cerr << "---- server " << char('A' + i) << " log ----\n" << servers_[i]->log();
    servers_.clear();
  }

  json jsz(int i) {
    const std::string body = http_get(http_[i], "/jsz");
    json j = json::parse(body, nullptr, false);
    return j.is_object() ? j : json::object();
  }

  // The leader every running server reports, once they all agree on one (empty on timeout).
  std::string agreed_leader(std::chrono::milliseconds limit, const std::string& not_this = {}) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      std::set<std::string> seen;
      bool all = true;
      for (int i = 0; i < 3; ++i) {
        if (!servers_[i]->running()) continue;
        const json m = jsz(i).value("meta_cluster", json::object());
        const std::string l = m.value("leader", "");
        if (l.empty() || m.value("cluster_size", 0) != 3) all = false;
        seen.insert(l);
      }
      if (all && seen.size() == 1 && *seen.begin() != not_this) return *seen.begin();
      std::this_thread::sleep_for(20ms);
    }
    return {};
  }

  int index_of(const std::string& name) { return name.empty() ? -1 : name[0] - 'A'; }

  std::array<int, 3> cport_{}, http_{};
  std::vector<std::unique_ptr<server_process>> servers_;
};

TEST_F(cluster_meta, leader_elected_stepped_down_failed_over_and_rejoined) {
  ASSERT_NO_FATAL_FAILURE(start_all());
  const double mult = timeout_mult();
  const auto t0 = clock_type::now();
  const std::string first = agreed_leader(std::chrono::milliseconds(int(15000 * mult)));
  ASSERT_FALSE(first.empty()) << "no meta leader";
  std::cerr << "meta leader " << first << " after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count() << " ms\n";
  const int li = index_of(first);
  ASSERT_GE(li, 0);

  // nats-server's MetaClusterInfo, in its field order; replicas only on the leader.
  const json lm = jsz(li)["meta_cluster"];
  EXPECT_EQ(lm.value("name", ""), "pgtest");
  EXPECT_EQ(lm.value("peer", "").size(), 8u);
  ASSERT_TRUE(lm.contains("replicas")) << lm.dump();
  EXPECT_EQ(lm["replicas"].size(), 2u);
  std::vector<std::string> keys;
  for (auto it = lm.begin(); it != lm.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "leader", "peer", "replicas", "cluster_size"}));
  const int fi = (li + 1) % 3;
  EXPECT_FALSE(jsz(fi)["meta_cluster"].contains("replicas"));
  const json varz = json::parse(http_get(http_[fi], "/varz"), nullptr, false);
  ASSERT_TRUE(varz.is_object());
  EXPECT_EQ(varz["jetstream"]["meta"].value("leader", ""), first);
  EXPECT_EQ(varz["jetstream"]["meta"].value("cluster_size", 0), 3);

  // $JS.API.INFO still answers on every server.
  for (int i = 0; i < 3; ++i) {
    auto nc = connect(servers_[i]->url());
    ASSERT_TRUE(nc);
    natsMsg* reply = nullptr;
    ASSERT_EQ(natsConnection_RequestString(&reply, nc.get(), "$JS.API.INFO", "", 5000), NATS_OK);
    const json info = json::parse(data_of(reply), nullptr, false);
    natsMsg_Destroy(reply);
    EXPECT_EQ(info.value("type", ""), "io.nats.jetstream.api.v1.account_info_response");
  }

  // Asked by a client of the global account: ignored with a warning, as nats-server does.
  {
    auto nc = connect(servers_[fi]->url());
    ASSERT_TRUE(nc);
    natsMsg* reply = nullptr;
    EXPECT_EQ(natsConnection_RequestString(&reply, nc.get(), "$JS.API.META.LEADER.STEPDOWN", "", 1000), NATS_TIMEOUT);
    EXPECT_NE(servers_[fi]->log().find("JetStream API META.LEADER.STEPDOWN request from non-system account"),
              std::string::npos);
    EXPECT_EQ(agreed_leader(std::chrono::milliseconds(int(2000 * mult))), first);
  }

  // Step down, asked by a system account user on a follower: the leader moves.
  {
    auto nc = connect_sys(servers_[fi]->url());
    ASSERT_TRUE(nc);
    natsMsg* reply = nullptr;
    ASSERT_EQ(natsConnection_RequestString(&reply, nc.get(), "$JS.API.META.LEADER.STEPDOWN", "", 5000), NATS_OK);
    const json r = json::parse(data_of(reply), nullptr, false);
    natsMsg_Destroy(reply);
    EXPECT_EQ(r.dump(), R"({"type":"io.nats.jetstream.api.v1.meta_leader_stepdown_response","success":true})");
    ASSERT_EQ(natsConnection_RequestString(&reply, nc.get(), "$JS.API.META.LEADER.STEPDOWN", "{bad", 5000), NATS_OK);
    const json bad = json::parse(data_of(reply), nullptr, false);
    natsMsg_Destroy(reply);
    EXPECT_EQ(bad["error"].value("err_code", 0), 10025) << bad.dump();
  }
  const std::string second = agreed_leader(std::chrono::milliseconds(int(10000 * mult)), first);
  ASSERT_FALSE(second.empty()) << "leadership did not move from " << first;

  // kill -9 of the leader: the two others agree on a new one.
  const int ki = index_of(second);
  ::kill(servers_[ki]->pid(), SIGKILL);
  const auto killed_at = clock_type::now();
  servers_[ki]->stop();  // reaps it
  const std::string third = agreed_leader(std::chrono::milliseconds(int(10000 * mult)), second);
  const auto failover_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - killed_at).count();
  ASSERT_FALSE(third.empty()) << "no new leader after killing " << second;
  std::cerr << "failover after kill -9 of " << second << ": " << third << " leads after " << failover_ms << " ms\n";
  EXPECT_LE(failover_ms, 2500 * mult);

  // The killed server restarts from its journal and follows the current leader.
  ASSERT_TRUE(servers_[ki]->start()) << servers_[ki]->error();
  const auto deadline = clock_type::now() + std::chrono::milliseconds(int(15000 * mult));
  std::string back;
  while (clock_type::now() < deadline) {
    back = jsz(ki).value("meta_cluster", json::object()).value("leader", "");
    if (!back.empty() && !agreed_leader(200ms).empty()) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_FALSE(back.empty()) << "the restarted server did not rejoin"
                             << (servers_[ki]->running() ? "" : " (it exited)");
  // It rejoined from its journal (the group and its members recovered), not by a new bootstrap.
  const std::string log = servers_[ki]->log();
  const auto last = log.rfind("bytes recovered");
  ASSERT_NE(last, std::string::npos);
  const auto line = log.rfind(": ", last);
  EXPECT_NE(log.substr(line, last - line), ": 0 ") << log.substr(line, last - line);
  EXPECT_EQ(agreed_leader(std::chrono::milliseconds(int(5000 * mult))), back);
}

// Replication connections share the cluster port: a clustered JetStream server listens on
// exactly the ports its config names (client, cluster, http), so no port it takes can be one
// another server's config names (the ephemeral replication listener once took B's cluster port).
TEST_F(cluster_meta, servers_listen_only_on_their_configured_ports) {
  ASSERT_NO_FATAL_FAILURE(start_all());
  ASSERT_FALSE(agreed_leader(std::chrono::milliseconds(int(15000 * timeout_mult()))).empty()) << "no meta leader";
  for (int i = 0; i < 3; ++i) {
    const std::set<int> want{servers_[i]->port(), cport_[i], http_[i]};
    EXPECT_EQ(listening_ports(servers_[i]->pid()), want) << "server " << char('A' + i);
  }
}

// cluster.tls covers the replication connections too (the routes' certificates, verify on):
// the meta group forms over TLS, and a replication hello followed by plaintext is refused
// without the server answering in plaintext.
TEST_F(cluster_meta, tls_cluster_forms_the_meta_group_over_tls_replication) {
  const std::string dir = PG_TLS_TEST_DIR;
  ASSERT_NO_FATAL_FAILURE(start_all("  tls {\n    cert_file: \"" + dir + "/route.pem\"\n    key_file: \"" + dir +
                                    "/route-key.pem\"\n    ca_file: \"" + dir +
                                    "/ca.pem\"\n    verify: true\n    timeout: 5\n  }\n"));
  ASSERT_FALSE(agreed_leader(std::chrono::milliseconds(int(15000 * timeout_mult()))).empty()) << "no meta leader";
  raw_client r;
  ASSERT_TRUE(r.connect(cport_[0]));
  ASSERT_TRUE(r.send("PGREPL 1 Z pgtest\r\n"));
  ASSERT_TRUE(r.send(std::string("\x05\x00\x00\x00\x02\x00\x00\x00\x00", 9)));  // a view, in plaintext
  const auto rest = r.read_until_closed(std::chrono::milliseconds(int(10000 * timeout_mult())));
  ASSERT_TRUE(rest.has_value()) << "a plaintext replication peer was kept";
  EXPECT_EQ(rest->find("PGREPL"), std::string::npos) << "answered in plaintext: " << *rest;
  const auto deadline = clock_type::now() + 10s;
  while (servers_[0]->log().find("replication TLS connection from") == std::string::npos && clock_type::now() < deadline)
    std::this_thread::sleep_for(50ms);
  EXPECT_NE(servers_[0]->log().find("replication TLS connection from"), std::string::npos);
}

// A server that starts after the meta group formed, not in its routes lists, joins: the leader
// adds it (standby, then voter once caught up) and /jsz shows four servers.
TEST_F(cluster_meta, a_server_started_later_joins_the_meta_group) {
  ASSERT_NO_FATAL_FAILURE(start_all());
  const double mult = timeout_mult();
  ASSERT_FALSE(agreed_leader(std::chrono::milliseconds(int(15000 * mult))).empty()) << "no meta leader";
  const int dport = pick_free_port(), dhttp = pick_free_port();
  std::vector<int> routes(cport_.begin(), cport_.end());
  routes.push_back(dport);
  servers_.push_back(std::make_unique<server_process>(
      cluster_conf("D", dport, routes) + "jetstream { store_dir: \"@TMPDIR@/js\" }\nhttp_port: " +
      std::to_string(dhttp) + "\n"));
  ASSERT_TRUE(servers_.back()->start()) << servers_.back()->error();
  const auto deadline = clock_type::now() + std::chrono::milliseconds(int(20000 * mult));
  json leader_meta, d_meta;
  bool joined = false;
  while (!joined && clock_type::now() < deadline) {
    for (int i = 0; i < 3 && !joined; ++i) {
      leader_meta = jsz(i).value("meta_cluster", json::object());
      if (!leader_meta.contains("replicas") || leader_meta.value("cluster_size", 0) != 4) continue;
      std::set<std::string> names;
      for (const auto& r : leader_meta["replicas"]) names.insert(r.value("name", ""));
      d_meta = json::parse(http_get(dhttp, "/jsz"), nullptr, false).value("meta_cluster", json::object());
      joined = names.count("D") && d_meta.value("leader", "") == leader_meta.value("leader", "");
    }
    if (!joined) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(joined) << "leader's meta_cluster: " << leader_meta.dump() << "\nD's: " << d_meta.dump() << "\n"
                      << servers_.back()->log();
  EXPECT_EQ(leader_meta["replicas"].size(), 3u);
}

// The same peer without TLS configured would have had the hello answered: the check above
// means something.
TEST_F(cluster_meta, a_plaintext_cluster_answers_a_replication_hello) {
  ASSERT_NO_FATAL_FAILURE(start_all());
  ASSERT_FALSE(agreed_leader(std::chrono::milliseconds(int(15000 * timeout_mult()))).empty()) << "no meta leader";
  raw_client r;
  ASSERT_TRUE(r.connect(cport_[0]));
  ASSERT_TRUE(r.send("PGREPL 1 Z pgtest\r\n"));
  const auto line = r.read_line(5s);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line, "PGREPL 1 A pgtest\r\n");
}

}  // namespace
}  // namespace peregrine::test
