// The core protocol over the DPDK transport: peregrine-server runs on a net_tap vdev with
// --no-huge inside a network namespace this test creates (unshare), and libnats / a raw
// socket in the kernel talk to it through the tap. PEREGRINE_DPDK_SHARDS / _QUEUES run
// several shards, by software steering when there are fewer queues than shards;
// PEREGRINE_DPDK_VDEV=af_packet uses net_af_packet over a veth pair instead of the tap.
// Exits 77 (skipped) with the reason when the build has no DPDK, /dev/net/tun is missing,
// or namespaces (or, for af_packet, a veth pair) cannot be created.
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/dpdk/steer.h"
#include "tests/integration/nats_helpers.h"

using namespace std::chrono_literals;
using namespace peregrine::test;

namespace {

constexpr const char* kIface = "pgdpdk0";
constexpr const char* kServerIp = "10.211.0.2";
constexpr const char* kClientCidr = "10.211.0.1/24";
constexpr int kPort = 4222;  // the namespace is ours: no port clash is possible
pid_t g_server = -1;
int g_shards = 1;  // PEREGRINE_DPDK_SHARDS
int g_queues = 1;  // PEREGRINE_DPDK_QUEUES -> --dpdk_queues: fewer than shards steers in software
// PEREGRINE_DPDK_VDEV=af_packet: the server on net_af_packet over a veth pair (one queue
// pair, no rx interrupts) instead of net_tap; kIface stays the kernel's end.
bool g_af_packet = false;
constexpr const char* kVethServerEnd = "pgdpdk0d";
std::string g_log_path;

std::string url() { return std::string("nats://") + kServerIp + ":" + std::to_string(kPort); }

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int skip(const std::string& why) {
  std::printf("SKIP: %s\n", why.c_str());
  return 77;
}

bool run(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }

int tcp_connect(int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(kPort);
  inet_pton(AF_INET, kServerIp, &a.sin_addr);
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until `needle` shows up, the peer closes, or the socket timeout passes.
std::string read_until(int fd, const std::string& needle) {
  std::string got;
  char buf[65536];
  while (got.find(needle) == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, std::size_t(n));
  }
  return got;
}

bool start_server(const std::string& bin, std::string& why) {
  char tmpl[] = "/tmp/pg-dpdk-it-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    why = "mkdtemp failed";
    return false;
  }
  g_log_path = std::string(tmpl) + "/server.log";
  const std::string eal = std::string("--dpdk_eal=-l 0 --no-huge -m 128 --no-pci --no-shconf --no-telemetry "
                                      "--log-level=error --file-prefix=pg-it-") +
                          std::to_string(::getpid()) +
                          (g_af_packet ? std::string(" --vdev=net_af_packet0,iface=") + kVethServerEnd
                                       : std::string(" --vdev=net_tap0,iface=") + kIface);
  const pid_t parent = ::getpid();
  g_server = ::fork();
  if (g_server == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int fd = ::open(g_log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const std::string port = std::to_string(kPort);
    const std::string shards = std::to_string(g_shards), queues = std::to_string(g_queues);
    const char* argv[] = {bin.c_str(), "--transport", "dpdk", eal.c_str(), "--dpdk_ip", kServerIp,
                          "--dpdk_netmask", "255.255.255.0", "-p", port.c_str(), "--shards", shards.c_str(),
                          "--dpdk_queues", queues.c_str(), "-D", nullptr};  // -D: the connection lines name each client's shard
    ::execv(bin.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  // The tap appears once the EAL probed the vdev; then give the kernel side its address.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (if_nametoindex(kIface) == 0) {
    int st = 0;
    if (::waitpid(g_server, &st, WNOHANG) == g_server || std::chrono::steady_clock::now() > deadline) {
      why = "server did not create " + std::string(kIface) + "; log:\n" + slurp(g_log_path);
      return false;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (!run(std::string("ip addr add ") + kClientCidr + " dev " + kIface + " && ip link set " + kIface + " up")) {
    why = "ip addr/link on the tap failed";
    return false;
  }
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = tcp_connect(500);
    if (fd >= 0) {
      ::close(fd);
      return true;
    }
    std::this_thread::sleep_for(50ms);
  }
  why = "server on DPDK did not accept within 20 s; log:\n" + slurp(g_log_path);
  return false;
}

void stop_server() {
  if (g_server <= 0) return;
  ::kill(g_server, SIGTERM);
  for (int i = 0; i < 300; ++i) {
    int st = 0;
    if (::waitpid(g_server, &st, WNOHANG) == g_server) return;
    std::this_thread::sleep_for(10ms);
  }
  ::kill(g_server, SIGKILL);
  ::waitpid(g_server, nullptr, 0);
}

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::mt19937_64 g(seed);
  for (auto& c : s) c = char('a' + g() % 26);
  return s;
}

}  // namespace

TEST(DpdkTransport, RawProtocolInfoPingAndError) {
  const int fd = tcp_connect(3000);
  ASSERT_GE(fd, 0);
  const std::string info = read_until(fd, "\r\n");
  EXPECT_EQ(info.rfind("INFO {", 0), 0u) << info;
  // The peer address the server saw is the kernel side of the tap.
  EXPECT_NE(info.find("\"client_ip\":\"10.211.0.1\""), std::string::npos) << info;
  const std::string hello = "CONNECT {\"verbose\":false}\r\nPING\r\n";
  ASSERT_EQ(::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL), ssize_t(hello.size()));
  EXPECT_EQ(read_until(fd, "PONG\r\n"), "PONG\r\n");
  const std::string bad = "FOO BAR\r\n";
  ::send(fd, bad.data(), bad.size(), MSG_NOSIGNAL);
  const std::string err = read_until(fd, "\r\n\r\n");  // reads to the close
  EXPECT_EQ(err, "-ERR 'Unknown Protocol Operation'\r\n");
  ::close(fd);
}

TEST(DpdkTransport, PubSubInOrder) {
  auto sub_nc = connect(url());
  auto pub_nc = connect(url());
  ASSERT_TRUE(sub_nc && pub_nc);
  auto sub = subscribe_sync(sub_nc.get(), "dpdk.>");
  ASSERT_EQ(natsConnection_Flush(sub_nc.get()), NATS_OK);
  constexpr int kMsgs = 2000;
  for (int i = 0; i < kMsgs; ++i) {
    const std::string p = "m" + std::to_string(i);
    ASSERT_EQ(natsConnection_Publish(pub_nc.get(), ("dpdk.s." + std::to_string(i % 7)).c_str(), p.data(), int(p.size())),
              NATS_OK);
  }
  ASSERT_EQ(natsConnection_Flush(pub_nc.get()), NATS_OK);
  for (int i = 0; i < kMsgs; ++i) {
    auto m = next_msg(sub.get(), 5s);
    ASSERT_TRUE(m) << "message " << i << " missing";
    EXPECT_EQ(std::string(natsMsg_GetData(m.get()), std::size_t(natsMsg_GetDataLength(m.get()))),
              "m" + std::to_string(i));
    EXPECT_EQ(std::string(natsMsg_GetSubject(m.get())), "dpdk.s." + std::to_string(i % 7));
  }
}

TEST(DpdkTransport, RequestReply) {
  auto srv_nc = connect(url());
  auto cli_nc = connect(url());
  ASSERT_TRUE(srv_nc && cli_nc);
  auto svc = subscribe_sync(srv_nc.get(), "svc.echo");
  ASSERT_EQ(natsConnection_Flush(srv_nc.get()), NATS_OK);
  std::thread responder([&] {
    for (int i = 0; i < 200; ++i) {
      auto m = next_msg(svc.get(), 5s);
      if (!m) return;
      std::string body(natsMsg_GetData(m.get()), std::size_t(natsMsg_GetDataLength(m.get())));
      body = "re:" + body;
      natsConnection_Publish(srv_nc.get(), natsMsg_GetReply(m.get()), body.data(), int(body.size()));
      natsConnection_Flush(srv_nc.get());
    }
  });
  for (int i = 0; i < 200; ++i) {
    natsMsg* reply = nullptr;
    const std::string q = "q" + std::to_string(i);
    ASSERT_EQ(natsConnection_Request(&reply, cli_nc.get(), "svc.echo", q.data(), int(q.size()), 5000), NATS_OK)
        << "request " << i;
    msg_ptr r(reply);
    EXPECT_EQ(std::string(natsMsg_GetData(reply), std::size_t(natsMsg_GetDataLength(reply))), "re:" + q);
  }
  responder.join();
  // No responders: the server answers a request nobody listens to with a 503 status.
  natsMsg* none = nullptr;
  EXPECT_EQ(natsConnection_Request(&none, cli_nc.get(), "svc.nobody", "x", 1, 2000), NATS_NO_RESPONDERS);
  natsMsg_Destroy(none);
}

TEST(DpdkTransport, QueueGroupDeliversEachMessageOnce) {
  auto pub_nc = connect(url());
  ASSERT_TRUE(pub_nc);
  std::vector<nc_ptr> ncs;
  std::vector<sub_ptr> subs;
  for (int i = 0; i < 3; ++i) {
    ncs.push_back(connect(url()));
    ASSERT_TRUE(ncs.back());
    subs.push_back(subscribe_sync(ncs.back().get(), "work", "workers"));
    ASSERT_EQ(natsConnection_Flush(ncs.back().get()), NATS_OK);
  }
  constexpr int kMsgs = 300;
  for (int i = 0; i < kMsgs; ++i) {
    const std::string p = std::to_string(i);
    ASSERT_EQ(natsConnection_Publish(pub_nc.get(), "work", p.data(), int(p.size())), NATS_OK);
  }
  ASSERT_EQ(natsConnection_Flush(pub_nc.get()), NATS_OK);
  std::set<std::string> seen;
  int total = 0;
  for (auto& s : subs) {
    for (;;) {
      auto m = next_msg(s.get(), 500ms);
      if (!m) break;
      ++total;
      seen.insert(std::string(natsMsg_GetData(m.get()), std::size_t(natsMsg_GetDataLength(m.get()))));
    }
  }
  EXPECT_EQ(total, kMsgs);
  EXPECT_EQ(seen.size(), std::size_t(kMsgs));
}

TEST(DpdkTransport, OneMebibytePayloadsArriveIntact) {
  auto sub_nc = connect(url());
  auto pub_nc = connect(url());
  ASSERT_TRUE(sub_nc && pub_nc);
  auto sub = subscribe_sync(sub_nc.get(), "big");
  ASSERT_EQ(natsConnection_Flush(sub_nc.get()), NATS_OK);
  for (int i = 0; i < 4; ++i) {
    const std::string body = random_bytes(1 << 20, std::uint64_t(i) + 1);
    ASSERT_EQ(natsConnection_Publish(pub_nc.get(), "big", body.data(), int(body.size())), NATS_OK);
    ASSERT_EQ(natsConnection_Flush(pub_nc.get()), NATS_OK);
    auto m = next_msg(sub.get(), 10s);
    ASSERT_TRUE(m) << "payload " << i;
    ASSERT_EQ(natsMsg_GetDataLength(m.get()), 1 << 20);
    EXPECT_TRUE(std::string(natsMsg_GetData(m.get()), 1 << 20) == body) << "payload " << i << " corrupted";
  }
  // One byte over max_payload is refused exactly as over kernel sockets.
  const std::string too_big(1048577, 'x');
  const int fd = tcp_connect(5000);
  ASSERT_GE(fd, 0);
  read_until(fd, "\r\n");
  const std::string pub = "CONNECT {\"verbose\":false}\r\nPUB big 1048577\r\n";
  ::send(fd, pub.data(), pub.size(), MSG_NOSIGNAL);
  EXPECT_EQ(read_until(fd, "\r\n\r\n"), "-ERR 'Maximum Payload Violation'\r\n");
  ::close(fd);
}

TEST(DpdkTransport, ManyConnectionsOpenAndClose) {
  for (int round = 0; round < 3; ++round) {
    std::vector<nc_ptr> ncs;
    for (int i = 0; i < 16; ++i) {
      ncs.push_back(connect(url()));
      ASSERT_TRUE(ncs.back()) << "connection " << i << " round " << round;
    }
    for (auto& nc : ncs) EXPECT_EQ(natsConnection_FlushTimeout(nc.get(), 5000), NATS_OK);  // PING/PONG each
    EXPECT_TRUE(healthy_client_works(url()));
  }
}

TEST(DpdkTransport, RunsEveryShardOnItsQueuesOrBySteering) {
  const std::string log = slurp(g_log_path);
  const std::string want = std::to_string(g_shards) + (g_shards == 1 ? " shard," : " shards,");
  EXPECT_NE(log.find(want + " dpdk transport"), std::string::npos) << log;
  const std::string pairs = std::to_string(g_queues) + " queue pair(s) for " + std::to_string(g_shards) + " shard(s)";
  EXPECT_NE(log.find(pairs), std::string::npos) << log;
  EXPECT_EQ(log.find(pairs + " (software steering)") != std::string::npos, g_queues < g_shards) << log;
}

namespace {
// The shard a connection landed on, in the server's own words: its debug line
// "<ip>:<port> - cid:<id> - Client connection created" carries the shard in bits 48 and up
// of the id (INFO's client_id leaves them out). -1 when the line does not show up.
int shard_of(natsConnection* nc, int& local_port) {
  char* ip = nullptr;
  if (natsConnection_GetLocalIPAndPort(nc, &ip, &local_port) != NATS_OK) return -1;
  const std::string needle = std::string(ip) + ":" + std::to_string(local_port) + " - cid:";
  std::free(ip);
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string log = slurp(g_log_path);
    if (const auto at = log.find(needle); at != std::string::npos)
      return int(std::strtoull(log.c_str() + at + needle.size(), nullptr, 10) >> 48);
    std::this_thread::sleep_for(20ms);
  }
  return -1;
}
}  // namespace

// Connections spread over every shard (by the port's queues, or by software steering when
// the port has fewer queues than shards), and pub/sub and request/reply work between
// clients on different shards, both ways.
TEST(DpdkTransport, ClientsOnEveryShardTalkAcrossShards) {
  if (g_shards < 2) GTEST_SKIP() << "one shard";
  std::vector<std::vector<nc_ptr>> by_shard{std::size_t(g_shards)};
  std::vector<nc_ptr> all;
  for (int i = 0; i < 32; ++i) {
    auto nc = connect(url());
    ASSERT_TRUE(nc) << "connection " << i;
    int local_port = 0;
    const int s = shard_of(nc.get(), local_port);
    ASSERT_GE(s, 0) << "no debug line for the connection from port " << local_port;
    ASSERT_LT(s, g_shards);
    if (g_queues == 1) {  // one queue: software steering placed it, by the 4-tuple hash
      in_addr client{}, server{};
      inet_pton(AF_INET, "10.211.0.1", &client);
      inet_pton(AF_INET, kServerIp, &server);
      EXPECT_EQ(std::uint32_t(s), net::dpdk::connection_shard(ntohl(client.s_addr), std::uint16_t(local_port),
                                                              ntohl(server.s_addr), kPort, std::uint32_t(g_shards)))
          << "port " << local_port;
    }
    if (by_shard[std::size_t(s)].size() < 2) {
      by_shard[std::size_t(s)].push_back(std::move(nc));
    } else {
      all.push_back(std::move(nc));  // kept open: more connections, more traffic on the stack
    }
  }
  for (int s = 0; s < g_shards; ++s) ASSERT_FALSE(by_shard[std::size_t(s)].empty()) << "no connection on shard " << s << " of 32";
  for (int a = 0; a < g_shards; ++a) {
    for (int b = 0; b < g_shards; ++b) {
      if (a == b) continue;
      natsConnection* sub_nc = by_shard[std::size_t(a)][0].get();
      natsConnection* pub_nc = by_shard[std::size_t(b)][0].get();
      const std::string subj = "x." + std::to_string(a) + "." + std::to_string(b);
      auto sub = subscribe_sync(sub_nc, subj.c_str());
      ASSERT_EQ(natsConnection_Flush(sub_nc), NATS_OK);
      constexpr int kMsgs = 500;
      for (int i = 0; i < kMsgs; ++i) {
        const std::string p = random_bytes(std::size_t(1 + i * 7 % 3000), std::uint64_t(i));
        ASSERT_EQ(natsConnection_Publish(pub_nc, subj.c_str(), p.data(), int(p.size())), NATS_OK);
      }
      ASSERT_EQ(natsConnection_Flush(pub_nc), NATS_OK);
      for (int i = 0; i < kMsgs; ++i) {
        auto m = next_msg(sub.get(), 5s);
        ASSERT_TRUE(m) << "message " << i << " shard " << b << " -> " << a;
        ASSERT_TRUE(std::string(natsMsg_GetData(m.get()), std::size_t(natsMsg_GetDataLength(m.get()))) ==
                    random_bytes(std::size_t(1 + i * 7 % 3000), std::uint64_t(i)))
            << "message " << i << " shard " << b << " -> " << a;
      }
      // Request/reply: the responder on shard a, the requester on shard b.
      const std::string svc_subj = "svc." + subj;
      auto svc = subscribe_sync(sub_nc, svc_subj.c_str());
      ASSERT_EQ(natsConnection_Flush(sub_nc), NATS_OK);
      std::thread responder([&] {
        for (int i = 0; i < 100; ++i) {
          auto m = next_msg(svc.get(), 5s);
          if (!m) return;
          std::string body = "re:" + std::string(natsMsg_GetData(m.get()), std::size_t(natsMsg_GetDataLength(m.get())));
          natsConnection_Publish(sub_nc, natsMsg_GetReply(m.get()), body.data(), int(body.size()));
          natsConnection_Flush(sub_nc);
        }
      });
      for (int i = 0; i < 100; ++i) {
        natsMsg* reply = nullptr;
        const std::string q = "q" + std::to_string(i);
        ASSERT_EQ(natsConnection_Request(&reply, pub_nc, svc_subj.c_str(), q.data(), int(q.size()), 5000), NATS_OK)
            << "request " << i << " shard " << b << " -> " << a;
        msg_ptr r(reply);
        EXPECT_EQ(std::string(natsMsg_GetData(reply), std::size_t(natsMsg_GetDataLength(reply))), "re:" + q);
      }
      responder.join();
    }
  }
  for (auto& v : by_shard)
    for (auto& nc : v) EXPECT_EQ(natsConnection_FlushTimeout(nc.get(), 5000), NATS_OK);
  for (auto& nc : all) EXPECT_EQ(natsConnection_FlushTimeout(nc.get(), 5000), NATS_OK);
}

// Last (it stops the server): a stop resets the open connections. After exit nothing
// answers for the user-space stack, so a peer left alone would wait for its own timeout.
TEST(DpdkTransport, StopResetsOpenConnections) {
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) {  // spread over the shards
    const int fd = tcp_connect(3000);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(read_until(fd, "\r\n").rfind("INFO {", 0), 0u);
    fds.push_back(fd);
  }
  stop_server();
  g_server = -1;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 3000), 1) << "no reset or FIN within 3 s of the stop";
    char b = 0;
    const ssize_t n = ::recv(fd, &b, 1, MSG_DONTWAIT);
    EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << "recv " << n << " errno " << errno;
    ::close(fd);
  }
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* have = std::getenv("PEREGRINE_HAVE_DPDK");
  if (have != nullptr && std::string(have) == "sanitized")
    return skip("not run in sanitizer builds (the EAL's memory setup is not validated under ASan)");
  if (have == nullptr || std::string(have) != "1") return skip("peregrine-server was built without DPDK");
  const char* bin = std::getenv("PEREGRINE_SERVER_BIN");
  if (bin == nullptr || ::access(bin, X_OK) != 0) return skip("PEREGRINE_SERVER_BIN is not set");
  if (::access("/dev/net/tun", R_OK | W_OK) != 0) return skip("/dev/net/tun is missing or not accessible");
  // A namespace of our own: the tap, its address and port 4222 cannot clash with anything.
  if (::unshare(CLONE_NEWNET) != 0)
    return skip(std::string("cannot create a network namespace (unshare: ") + std::strerror(errno) +
                "); needs root/CAP_SYS_ADMIN");
  if (!run("ip link set lo up")) return skip("the `ip` tool (iproute2) is missing");
  if (const char* n = std::getenv("PEREGRINE_DPDK_SHARDS")) g_shards = std::max(1, std::atoi(n));
  if (const char* v = std::getenv("PEREGRINE_DPDK_VDEV"); v != nullptr && std::string(v) == "af_packet") {
    g_af_packet = true;
    // af_packet cannot see GSO frames or partial checksums: the kernel end must not send them.
    if (!run(std::string("ip link add ") + kIface + " type veth peer name " + kVethServerEnd + " && ethtool -K " +
             kIface + " tx off tso off gso off sg off >/dev/null && ip link set " + kVethServerEnd + " up"))
      return skip("cannot create a veth pair or turn its offloads off (ip/ethtool)");
  }
  g_queues = g_shards;
  if (const char* n = std::getenv("PEREGRINE_DPDK_QUEUES"); n != nullptr && std::atoi(n) > 0)
    g_queues = std::min(g_shards, std::atoi(n));
  std::string why;
  if (!start_server(bin, why)) {
    stop_server();
    std::fprintf(stderr, "FAIL: %s\n", why.c_str());
    return 1;
  }
  const int rc = RUN_ALL_TESTS();
  stop_server();
  if (rc != 0) std::fprintf(stderr, "server log:\n%s\n", slurp(g_log_path).c_str());
  return rc;
}
