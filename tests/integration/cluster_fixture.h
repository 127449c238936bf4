// Shared by the cluster suites: a fixture that starts three servers joined by routes (A -> B,
// C -> B: the A-C route comes from gossip) and waits for the full mesh, and helpers. Every
// wait is bounded and event-driven: interest is known to have crossed a route when a probe
// subscribed after it (on the same connection, so behind it on the same route) is delivered.
#pragma once

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

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

inline std::string cluster_conf(const std::string& name, int cluster_port, const std::vector<int>& routes) {
  std::string c = "server_name: " + name + "\ncluster {\n  name: pgtest\n  listen: 127.0.0.1:" +
                  std::to_string(cluster_port) + "\n";
  if (!routes.empty()) {
    c += "  routes: [\n";
    for (int p : routes) c += "    nats-route://127.0.0.1:" + std::to_string(p) + "\n";
    c += "  ]\n";
  }
  return c + "}\n";
}

inline int discovered(natsConnection* nc) {
  char** servers = nullptr;
  int n = 0;
  if (natsConnection_GetDiscoveredServers(nc, &servers, &n) != NATS_OK) return -1;
  for (int i = 0; i < n; ++i) free(servers[i]);
  free(servers);
  return n;
}

inline std::set<std::string> servers_of(natsConnection* nc) {
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
inline bool wait_interest(natsConnection* sub_nc, natsConnection* pub_nc, std::chrono::milliseconds limit = 15s) {
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

inline std::string data_of(natsMsg* m) { return std::string(natsMsg_GetData(m), natsMsg_GetDataLength(m)); }

// GET on the monitoring port; the body, or empty.
inline std::string http_get(int port, const std::string& path) {
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

  // A peregrine-server (P, index 0) and nats-server 2.9.10 (N, index 1) dialing it, both with
  // `extra` config; skipped without the reference binary.
  void start_mixed_pair(const std::string& extra = {}) {
    static const std::string reference = "/usr/sbin/nats-server";
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set";
    if (::access(reference.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << reference;
    cport_[0] = pick_free_port();
    cport_[1] = pick_free_port();
    add("P", cport_[0], {}, {}, extra);
    add("N", cport_[1], {cport_[0]}, reference, extra);  // nats-server dials us
    for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
    ASSERT_TRUE(wait_mesh()) << logs();
  }

  std::array<int, 3> cport_{};
  int http_port_ = 0;
  std::vector<std::unique_ptr<server_process>> servers_;
};


}  // namespace peregrine::test
