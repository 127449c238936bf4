// Process management, as nats-server does it: the ports file and pid file, SIGHUP config
// reload (live limits and auth, refusals, a malformed file keeps the running config),
// SIGUSR1 log reopen, SIGUSR2 lame duck, --signal. Runs against nats-server 2.9.10 as well.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/integration/nats_helpers.h"
#include "tests/integration/ops_harness.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/server_process.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

class ops : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "no server binary";
    dir_ = make_test_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    srv_ = std::make_unique<ops_server>(dir_, server_binary());
  }
  void TearDown() override {
    if (HasFailure() && srv_) std::cerr << "---- server log ----\n" << srv_->log() << "----\n";
    srv_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // A config in the shape nats.js's test launcher writes.
  std::string launcher_conf(const std::string& extra = "") const {
    return "port: -1\nhttp: \"127.0.0.1:-1\"\nports_file_dir: \"" + (dir_ / "ports").string() +
           "\"\nserver_tags: [\"tag:1\", \"other\"]\n"
           "leafnodes {\n  listen: \"127.0.0.1:-1\"\n}\nwebsocket {\n  listen: \"127.0.0.1:-1\"\n  no_tls: true\n}\n" +
           extra;
  }
  std::string conf_on(int port, const std::string& extra) const {
    return "listen: \"127.0.0.1:" + std::to_string(port) + "\"\n" + extra;
  }
  static json info_of(int port) {
    raw_client rc;
    // An empty object (not null) while the server is not listening yet, so callers polling
    // with .value() retry instead of throwing.
    if (!rc.connect(port)) return json::object();
    std::string line = rc.read_info();
    if (line.rfind("INFO ", 0) != 0) return json::object();
    json info = json::parse(line.substr(5), nullptr, false);
    return info.is_object() ? info : json::object();
  }

  std::filesystem::path dir_;
  std::unique_ptr<ops_server> srv_;
};

TEST_F(ops, launcher_config_writes_ports_file_and_serves_varz) {
  srv_->write_config(launcher_conf());
  ASSERT_TRUE(srv_->start());
  const int nats_port = srv_->port_from_ports_file("nats");
  const int http_port = srv_->port_from_ports_file("monitoring");
  ASSERT_GT(nats_port, 0) << read_text(srv_->ports_file());
  ASSERT_GT(http_port, 0) << read_text(srv_->ports_file());
  const json ports = json::parse(read_text(srv_->ports_file()));
  EXPECT_EQ(ports["monitoring"][0], "http://127.0.0.1:" + std::to_string(http_port));
  for (const auto& u : ports["nats"]) EXPECT_EQ(u.get<std::string>().rfind("nats://", 0), 0u) << u;

  nc_ptr nc = connect("nats://127.0.0.1:" + std::to_string(nats_port));
  ASSERT_TRUE(nc);
  const json info = info_of(nats_port);
  const http_result r = http_get(http_port, "/varz");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  const json v = json::parse(r.body);
  EXPECT_EQ(v["server_id"], info["server_id"]);
  EXPECT_EQ(v["port"], nats_port);
  EXPECT_EQ(v["http_host"], "127.0.0.1");
  EXPECT_EQ(v["tags"], json::array({"tag:1", "other"}));
  EXPECT_GE(v["connections"].get<int>(), 1);
  EXPECT_EQ(v["max_payload"], 1048576);
  EXPECT_TRUE(v["version"].is_string());
  EXPECT_EQ(v["version"], info["version"]);

  nc.reset();
  srv_->signal(SIGTERM);
  const int st = srv_->wait_exit(5s);
  ASSERT_TRUE(WIFEXITED(st)) << st;
  EXPECT_FALSE(std::filesystem::exists(srv_->ports_file()));  // removed at exit
}

TEST_F(ops, pid_file_holds_the_pid) {
  const int port = pick_free_port();
  const auto pid_file = dir_ / "server.pid";
  srv_->write_config(conf_on(port, "pid_file: \"" + pid_file.string() + "\"\n"));
  ASSERT_TRUE(srv_->start());
  ASSERT_TRUE(eventually([&] { return !read_text(pid_file).empty(); }, 5s));
  EXPECT_EQ(std::stoi(read_text(pid_file)), srv_->pid());
}

TEST_F(ops, sighup_reload_under_load_applies_max_payload_and_drops_no_client) {
  const int port = pick_free_port();
  srv_->write_config(conf_on(port, "max_payload: 2048\n"));
  ASSERT_TRUE(srv_->start());
  ASSERT_TRUE(eventually([&] { return info_of(port).value("max_payload", 0) == 2048; }, 5s));
  const std::string url = "nats://127.0.0.1:" + std::to_string(port);

  std::atomic<int> disconnects{0};
  std::atomic<long> received{0};
  auto on_disconnect = [](natsConnection*, void* c) { ++*static_cast<std::atomic<int>*>(c); };
  auto connect_watched = [&] {
    opts_ptr o = make_opts(url);
    natsOptions_SetDisconnectedCB(o.get(), on_disconnect, &disconnects);
    return connect(o.get());
  };
  std::vector<nc_ptr> subs_nc;
  std::vector<natsSubscription*> subs;
  for (int i = 0; i < 2; ++i) {
    subs_nc.push_back(connect_watched());
    ASSERT_TRUE(subs_nc.back());
    natsSubscription* s = nullptr;
    ASSERT_EQ(natsConnection_Subscribe(
                  &s, subs_nc.back().get(), "load",
                  [](natsConnection*, natsSubscription*, natsMsg* m, void* c) {
                    ++*static_cast<std::atomic<long>*>(c);
                    natsMsg_Destroy(m);
                  },
                  &received),
              NATS_OK);
    natsSubscription_SetPendingLimits(s, -1, -1);
    subs.push_back(s);
    ASSERT_EQ(natsConnection_Flush(subs_nc.back().get()), NATS_OK);
  }
  std::atomic<bool> stop{false};
  std::atomic<long> published{0};
  std::vector<std::thread> pubs;
  std::vector<nc_ptr> pub_nc;
  for (int i = 0; i < 2; ++i) {
    pub_nc.push_back(connect_watched());
    ASSERT_TRUE(pub_nc.back());
  }
  for (int i = 0; i < 2; ++i) {
    natsConnection* nc = pub_nc[std::size_t(i)].get();
    pubs.emplace_back([&, nc] {
      const std::string body(512, 'x');
      while (!stop) {
        if (natsConnection_Publish(nc, "load", body.data(), int(body.size())) == NATS_OK) ++published;
        if (published % 200 == 0) natsConnection_Flush(nc);
      }
      natsConnection_Flush(nc);
    });
  }
  std::this_thread::sleep_for(200ms);
  srv_->write_config(conf_on(port, "max_payload: 4096\n"));
  srv_->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return info_of(port).value("max_payload", 0) == 4096; }, 5s)) << srv_->log();
  std::this_thread::sleep_for(200ms);
  stop = true;
  for (auto& t : pubs) t.join();
  for (auto& nc : subs_nc) natsConnection_Flush(nc.get());
  EXPECT_TRUE(eventually([&] { return received.load() == 2 * published.load(); }, 10s))
      << "received " << received << " of " << 2 * published;
  EXPECT_GT(published.load(), 0);
  EXPECT_EQ(disconnects.load(), 0);
  for (auto& nc : pub_nc) EXPECT_EQ(natsConnection_Status(nc.get()), NATS_CONN_STATUS_CONNECTED);
  for (natsSubscription* s : subs) natsSubscription_Destroy(s);
  EXPECT_TRUE(srv_->log_has("Reloaded server configuration"));
}

TEST_F(ops, sighup_with_malformed_config_keeps_the_running_config) {
  const int port = pick_free_port();
  srv_->write_config(conf_on(port, "max_payload: 2048\n"));
  ASSERT_TRUE(srv_->start());
  ASSERT_TRUE(eventually([&] { return info_of(port).value("max_payload", 0) == 2048; }, 5s));
  raw_client held;
  ASSERT_TRUE(held.open(port));
  srv_->write_config(conf_on(port, "max_payload: 4096\nauthorization { user: \n"));  // unterminated block
  srv_->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return srv_->log_has("Failed to reload server configuration"); }, 5s)) << srv_->log();
  EXPECT_TRUE(srv_->running());
  EXPECT_EQ(info_of(port).value("max_payload", 0), 2048);
  EXPECT_TRUE(held.ping_pong());
  EXPECT_TRUE(healthy_client_works("nats://127.0.0.1:" + std::to_string(port)));
}

TEST_F(ops, sighup_new_token_closes_clients_that_used_the_old_one) {
  const int port = pick_free_port();
  srv_->write_config(conf_on(port, "authorization { token: \"first\" }\n"));
  ASSERT_TRUE(srv_->start());
  raw_client old_client;
  ASSERT_TRUE(eventually([&] { return old_client.open(port, "CONNECT {\"verbose\":false,\"auth_token\":\"first\"}\r\n"); }, 5s));
  ASSERT_TRUE(old_client.ping_pong());
  srv_->write_config(conf_on(port, "authorization { token: \"second\" }\n"));
  srv_->signal(SIGHUP);
  const auto rest = old_client.read_until_closed(5s);
  ASSERT_TRUE(rest.has_value()) << "the client with the old token is still connected";
  EXPECT_NE(rest->find("-ERR 'Authorization Violation'"), std::string::npos) << *rest;
  raw_client next;
  ASSERT_TRUE(next.open(port, "CONNECT {\"verbose\":false,\"auth_token\":\"second\"}\r\n"));
  EXPECT_TRUE(next.ping_pong());
  raw_client stale;
  ASSERT_TRUE(stale.connect(port));
  stale.read_info();
  stale.send("CONNECT {\"verbose\":false,\"auth_token\":\"first\"}\r\nPING\r\n");
  const auto refused = stale.read_until_closed(5s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("Authorization Violation"), std::string::npos);
}

TEST_F(ops, sighup_users_reload_revokes_subscriptions_closes_removed_users_and_admits_new_ones) {
  const int port = pick_free_port();
  srv_->write_config(conf_on(port, "authorization { users: [\n"
                                   "  { user: alice, password: pa, permissions: { subscribe: [\"a.>\", \"b.>\"] } }\n"
                                   "  { user: bob, password: pb }\n] }\n"));
  ASSERT_TRUE(srv_->start());
  auto login = [](const std::string& user, const std::string& pass) {
    return "CONNECT {\"verbose\":false,\"pedantic\":false,\"user\":\"" + user + "\",\"pass\":\"" + pass + "\"}\r\n";
  };
  raw_client alice, bob;
  ASSERT_TRUE(eventually([&] { return alice.open(port, login("alice", "pa")); }, 5s));
  ASSERT_TRUE(alice.send("SUB a.x 1\r\nSUB b.x 2\r\n"));
  ASSERT_TRUE(alice.ping_pong());
  ASSERT_TRUE(bob.open(port, login("bob", "pb")));
  ASSERT_TRUE(bob.ping_pong());
  srv_->write_config(conf_on(port, "authorization { users: [\n"
                                   "  { user: alice, password: pa, permissions: { subscribe: \"a.>\", publish: { deny: \"a.no\" } } }\n"
                                   "  { user: carol, password: pc }\n] }\n"));
  srv_->signal(SIGHUP);
  // alice stays connected, loses the subscription her new permissions refuse...
  EXPECT_EQ(alice.read_line(5s), "-ERR 'Permissions Violation for Subscription to \"b.x\" (sid \"2\")'\r\n");
  ASSERT_TRUE(alice.ping_pong());
  // ... and gets her new publish rules.
  ASSERT_TRUE(alice.send("PUB a.no 0\r\n\r\n"));
  EXPECT_EQ(alice.read_line(), "-ERR 'Permissions Violation for Publish to \"a.no\"'\r\n");
  // bob is no longer a user: closed without an -ERR, as nats-server closes a client whose
  // user (and so account) went away.
  const auto rest = bob.read_until_closed(5s);
  ASSERT_TRUE(rest.has_value()) << "the removed user is still connected";
  EXPECT_EQ(*rest, "");
  // carol is new; what she publishes reaches alice's remaining subscription only.
  raw_client carol;
  ASSERT_TRUE(carol.open(port, login("carol", "pc")));
  ASSERT_TRUE(carol.send("PUB b.x 1\r\nb\r\nPUB a.x 1\r\na\r\n"));
  ASSERT_TRUE(carol.ping_pong());
  EXPECT_EQ(alice.read_line(), "MSG a.x 1 1\r\n");
  raw_client stale;
  ASSERT_TRUE(stale.connect(port));
  stale.read_info();
  stale.send(login("bob", "pb") + "PING\r\n");
  const auto refused = stale.read_until_closed(5s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("Authorization Violation"), std::string::npos);
}

TEST_F(ops, sighup_moving_a_user_to_another_account_closes_its_connection) {
  const int port = pick_free_port();
  auto conf = [&](const char* a_users, const char* b_users) {
    return conf_on(port, std::string("accounts {\n  A: { users: [") + a_users + "] }\n  B: { users: [" + b_users + "] }\n}\n");
  };
  srv_->write_config(conf("{user: u1, password: p}, {user: u2, password: p}", "{user: u3, password: p}"));
  ASSERT_TRUE(srv_->start());
  auto login = [](const std::string& user) {
    return "CONNECT {\"verbose\":false,\"pedantic\":false,\"user\":\"" + user + "\",\"pass\":\"p\"}\r\n";
  };
  raw_client u1, u2;
  ASSERT_TRUE(eventually([&] { return u1.open(port, login("u1")); }, 5s));
  ASSERT_TRUE(u2.open(port, login("u2")));
  ASSERT_TRUE(u1.send("SUB t 1\r\n"));
  ASSERT_TRUE(u1.ping_pong());
  ASSERT_TRUE(u2.ping_pong());
  srv_->write_config(conf("{user: u1, password: p}", "{user: u2, password: p}, {user: u3, password: p}"));
  srv_->signal(SIGHUP);
  const auto rest = u2.read_until_closed(5s);
  ASSERT_TRUE(rest.has_value()) << "the moved user is still connected";
  EXPECT_EQ(*rest, "");
  ASSERT_TRUE(u1.ping_pong());
  // u2 comes back in B: it no longer reaches A's subscribers.
  raw_client again;
  ASSERT_TRUE(again.open(port, login("u2")));
  ASSERT_TRUE(again.send("PUB t 1\r\nx\r\n"));
  ASSERT_TRUE(again.ping_pong());
  EXPECT_TRUE(u1.ping_pong());
}

TEST_F(ops, sighup_lower_max_connections_closes_the_excess) {
  const int port = pick_free_port();
  srv_->write_config(conf_on(port, "max_connections: 10\n"));
  ASSERT_TRUE(srv_->start());
  ASSERT_TRUE(eventually([&] { return !info_of(port).empty(); }, 5s));
  std::vector<std::unique_ptr<raw_client>> cs;
  for (int i = 0; i < 5; ++i) {
    cs.push_back(std::make_unique<raw_client>());
    ASSERT_TRUE(cs.back()->open(port, "CONNECT {\"verbose\":false}\r\n"));
    ASSERT_TRUE(cs.back()->ping_pong());
  }
  srv_->write_config(conf_on(port, "max_connections: 3\n"));
  srv_->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return srv_->log_has("Reloaded: max_connections"); }, 5s));
  int closed = 0, open = 0;
  for (auto& c : cs) {
    c->send("PING\r\n");
    const auto line = c->read_line(3s);
    if (line && *line == "PONG\r\n") {
      ++open;
      continue;
    }
    ASSERT_TRUE(line.has_value()) << "neither PONG nor -ERR";
    EXPECT_EQ(*line, "-ERR 'maximum connections exceeded'\r\n");
    ++closed;
  }
  EXPECT_EQ(closed, 2);
  EXPECT_EQ(open, 3);
}

TEST_F(ops, sighup_cannot_move_the_listener) {
  const int port = pick_free_port();
  const int other = pick_free_port();
  srv_->write_config(conf_on(port, ""));
  ASSERT_TRUE(srv_->start());
  ASSERT_TRUE(eventually([&] { return !info_of(port).empty(); }, 5s));
  srv_->write_config(conf_on(other, ""));
  srv_->signal(SIGHUP);
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(srv_->running());
  EXPECT_FALSE(info_of(port).empty());
  EXPECT_TRUE(info_of(other).empty());
}

TEST_F(ops, lame_duck_tells_clients_stops_accepting_closes_them_and_exits) {
  const int port = pick_free_port();
  // nats-server refuses a lame_duck_duration under 30 s; Peregrine takes shorter ones.
  const bool reference = server_binary().find("nats-server") != std::string::npos;
  const auto duration = reference ? 30s : 3s;
  srv_->write_config(conf_on(port, "lame_duck_duration: \"" + std::to_string(duration.count()) +
                                       "s\"\nlame_duck_grace_period: \"1s\"\n"));
  ASSERT_TRUE(srv_->start());
  std::vector<std::unique_ptr<raw_client>> clients;
  ASSERT_TRUE(eventually([&] { return !info_of(port).empty(); }, 5s));
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<raw_client>());
    ASSERT_TRUE(clients.back()->open(port, "CONNECT {\"verbose\":false,\"protocol\":1}\r\n"));
    ASSERT_TRUE(clients.back()->ping_pong());
  }
  const auto t0 = std::chrono::steady_clock::now();
  srv_->signal(SIGUSR2);
  // Every client gets an INFO with "ldm":true before it is closed.
  for (auto& c : clients) {
    const auto rest = c->read_until_closed(duration + 5s);
    ASSERT_TRUE(rest.has_value()) << "still open after the lame duck duration";
    EXPECT_NE(rest->find("\"ldm\":true"), std::string::npos) << *rest;
  }
  const auto closed_all = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(closed_all, 900ms);  // nobody is closed during the grace period
  raw_client late;
  EXPECT_FALSE(late.connect(port) && late.read_info().rfind("INFO", 0) == 0);
  EXPECT_LE(closed_all, duration + 4s);  // generous: a loaded machine delays the last closes
  const int st = srv_->wait_exit(duration + 5s);
  ASSERT_NE(st, -1) << "did not exit";
  EXPECT_TRUE(WIFEXITED(st));
}

TEST_F(ops, sigusr1_reopens_the_log_file) {
  const int port = pick_free_port();
  const auto log_file = dir_ / "broker.log";
  srv_->write_config(conf_on(port, "logfile: \"" + log_file.string() + "\"\n"));
  ASSERT_TRUE(srv_->start());
  ASSERT_TRUE(eventually([&] { return read_text(log_file).find("Server is ready") != std::string::npos; }, 5s));
  std::filesystem::rename(log_file, dir_ / "broker.log.1");  // what logrotate does
  srv_->signal(SIGUSR1);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(log_file); }, 5s));
  EXPECT_NE(read_text(log_file).find("re-opened"), std::string::npos) << read_text(log_file);
}

TEST_F(ops, signal_flag_reaches_the_server_by_pid) {
  const int port = pick_free_port();
  srv_->write_config(conf_on(port, ""));
  ASSERT_TRUE(srv_->start());
  ASSERT_TRUE(eventually([&] { return !info_of(port).empty(); }, 5s));
  const std::string cmd = server_binary() + " --signal reload=" + std::to_string(srv_->pid()) + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(eventually([&] { return srv_->log_has("Reloaded server configuration"); }, 5s));
  const std::string quit = server_binary() + " --signal quit=" + std::to_string(srv_->pid()) + " 2>&1";
  EXPECT_EQ(std::system(quit.c_str()), 0);
  EXPECT_NE(srv_->wait_exit(5s), -1);
  const std::string bogus = server_binary() + " --signal bogus=1 >/dev/null 2>&1";
  EXPECT_NE(std::system(bogus.c_str()), 0);
}

}  // namespace
}  // namespace peregrine::test
