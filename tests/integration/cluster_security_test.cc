// Route authorization (cluster.authorization, credentials in route URLs) and TLS on routes
// (cluster.tls), each with the accepting and the dialing server being peregrine-server or
// nats-server 2.9.10 (where /usr/sbin/nats-server exists): the refusals, their -ERR and log
// texts are nats-server's.
#include <poll.h>
#include <sys/socket.h>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/raw_client.h"

namespace peregrine::test {
namespace {

const std::string kReference = "/usr/sbin/nats-server";

// The handshake timeout is generous: the suite also runs under ASan on a loaded 2-core box.
std::string tls_block(bool verify) {
  const std::string dir = PG_TLS_TEST_DIR;
  return "  tls {\n    cert_file: \"" + dir + "/route.pem\"\n    key_file: \"" + dir + "/route-key.pem\"\n    ca_file: \"" +
         dir + "/ca.pem\"\n" + (verify ? "    verify: true\n" : "") + "    timeout: 5\n  }\n";
}

// Which binary accepts and which dials: 'P' peregrine-server, 'N' nats-server.
struct pairing {
  char acceptor;
  char dialer;
};

void PrintTo(const pairing& p, std::ostream* os) { *os << p.acceptor << " accepts, " << p.dialer << " dials"; }

std::string pairing_name(const ::testing::TestParamInfo<pairing>& p) {
  return std::string(1, p.param.acceptor) + "_accepts_" + std::string(1, p.param.dialer) + "_dials";
}

class route_security : public ::testing::TestWithParam<pairing> {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set";
    if ((GetParam().acceptor == 'N' || GetParam().dialer == 'N') && ::access(kReference.c_str(), X_OK) != 0)
      GTEST_SKIP() << "no " << kReference;
    if (GetParam().acceptor == 'N' && GetParam().dialer == 'N') GTEST_SKIP() << "nats-server on both ends";
    acceptor_port_ = pick_free_port();
  }
  void TearDown() override {
    if (HasFailure())
      for (auto& s : servers_) std::cerr << "---- server log ----\n" << s->log();
    servers_.clear();
  }

  server_process& start(char kind, const std::string& name, int cport, const std::string& cluster_extra,
                        const std::vector<std::string>& routes = {}) {
    std::string c = "server_name: " + name + "\ncluster {\n  name: sec\n  listen: 127.0.0.1:" + std::to_string(cport) +
                    "\n" + cluster_extra;
    if (!routes.empty()) {
      c += "  routes: [\n";
      for (const auto& r : routes) c += "    \"" + r + "\"\n";
      c += "  ]\n";
    }
    c += "}\n";
    servers_.push_back(std::make_unique<server_process>(c));
    if (kind == 'N') servers_.back()->set_binary(kReference);
    EXPECT_TRUE(servers_.back()->start()) << servers_.back()->error();
    return *servers_.back();
  }
  server_process& acceptor(const std::string& cluster_extra) {
    return start(GetParam().acceptor, "ACC", acceptor_port_, cluster_extra);
  }
  server_process& dialer(const std::string& name, const std::string& route, const std::string& cluster_extra = {}) {
    return start(GetParam().dialer, name, pick_free_port(), cluster_extra, {route});
  }
  std::string route_url(const std::string& userinfo = {}) const {
    return "nats-route://" + (userinfo.empty() ? "" : userinfo + "@") + "127.0.0.1:" + std::to_string(acceptor_port_);
  }

  // Deadlines stretch by PEREGRINE_TIME_SCALE (5 under the sanitizers).
  static int time_scale() {
    const char* v = std::getenv("PEREGRINE_TIME_SCALE");
    const int n = v ? std::atoi(v) : 1;
    return n > 0 ? n : 1;
  }
  static std::size_t count_of(const std::string& hay, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
    return n;
  }
  static bool wait_log(const server_process& s, const std::string& text, std::chrono::milliseconds limit = 10s,
                       std::size_t times = 1) {
    const auto deadline = clock_type::now() + limit * time_scale();
    while (clock_type::now() < deadline) {
      if (count_of(s.log(), text) >= times) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  // A message from a client of `from` reaches a subscriber on `to`: there is a route.
  static bool routed(const server_process& from, const server_process& to) {
    auto pub = connect(from.url());
    auto sub_nc = connect(to.url());
    return pub && sub_nc && wait_interest(sub_nc.get(), pub.get(), 10s * time_scale());
  }

  // nats-server opens its route listener after its client port, so the server being up
  // does not yet mean the route port answers: retry for a while.
  bool connect_route(raw_client& r) const {
    const auto deadline = clock_type::now() + 5s * time_scale();
    while (!r.connect(acceptor_port_)) {
      if (clock_type::now() > deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  int acceptor_port_ = 0;
  std::vector<std::unique_ptr<server_process>> servers_;
};

TEST_P(route_security, route_credentials_are_checked) {
  server_process& acc = acceptor("  authorization {\n    user: ruser\n    password: rpw\n    timeout: 1\n  }\n");
  server_process& wrong = dialer("WRONG", route_url("ruser:nope"));
  EXPECT_TRUE(wait_log(acc, "authentication error")) << acc.log();
  EXPECT_TRUE(wait_log(wrong, "Route Error 'Authorization Violation'")) << wrong.log();
  auto on_acc = connect(acc.url());
  ASSERT_TRUE(on_acc);
  EXPECT_EQ(discovered(on_acc.get()), 0) << "the acceptor took a route with a wrong password";
  // A Peregrine dialer's client, through two more refusals, never hears of the acceptor (whose
  // INFO comes before it reads the CONNECT: its URLs wait for the first PONG). nats-server
  // 2.9.10 advertises them from that INFO until the -ERR, so its clients may see them briefly.
  if (GetParam().dialer == 'P') {
    auto nc = connect(wrong.url());
    ASSERT_TRUE(nc);
    EXPECT_EQ(discovered(nc.get()), 0) << "a route formed with a wrong password";
    raw_client watcher;
    ASSERT_TRUE(watcher.open(wrong.port()));
    const std::size_t refusals = count_of(acc.log(), "authentication error");
    EXPECT_TRUE(wait_log(acc, "authentication error", 10s, refusals + 2)) << acc.log();
    std::string heard;
    char buf[4096];
    pollfd p{watcher.fd(), POLLIN, 0};
    while (::poll(&p, 1, 100) > 0) {
      const ssize_t n = ::recv(watcher.fd(), buf, sizeof buf, 0);
      if (n <= 0) break;
      heard.append(buf, std::size_t(n));
    }
    EXPECT_EQ(heard.find("127.0.0.1:" + std::to_string(acc.port())), std::string::npos)
        << "the refused route's peer was advertised to clients: " << heard;
  }
  server_process& right = dialer("RIGHT", route_url("ruser:rpw"));
  EXPECT_TRUE(routed(right, acc));
  EXPECT_TRUE(routed(acc, right));
}

TEST_P(route_security, an_unauthenticated_route_gets_nats_servers_errors) {
  if (GetParam().dialer != 'P') GTEST_SKIP() << "one run per acceptor";
  acceptor("  authorization {\n    user: ruser\n    password: rpw\n    timeout: 1\n  }\n");
  {  // silent: the auth timeout
    raw_client r;
    ASSERT_TRUE(connect_route(r));
    EXPECT_NE(r.read_info().find("\"auth_required\":true"), std::string::npos);
    auto rest = r.read_until_closed(6s);
    ASSERT_TRUE(rest.has_value()) << "still open after the auth timeout";
    EXPECT_NE(rest->find("-ERR 'Authentication Timeout'"), std::string::npos) << *rest;
  }
  {  // interest before CONNECT
    raw_client r;
    ASSERT_TRUE(connect_route(r));
    r.read_info();
    ASSERT_TRUE(r.send("RS+ $G foo\r\n"));
    auto rest = r.read_until_closed(5s);
    ASSERT_TRUE(rest.has_value());
    EXPECT_NE(rest->find("-ERR 'Authorization Violation'"), std::string::npos) << *rest;
  }
}

TEST_P(route_security, tls_routes_carry_messages_and_refuse_plaintext) {
  server_process& acc = acceptor(tls_block(true));
  server_process& secure = dialer("SECURE", route_url(), tls_block(true));
  EXPECT_TRUE(routed(secure, acc));
  EXPECT_TRUE(routed(acc, secure));
  server_process& plain = dialer("PLAIN", route_url());
  EXPECT_TRUE(wait_log(acc, "TLS route handshake error: tls: first record does not look like a TLS handshake"))
      << acc.log();
  auto nc = connect(plain.url());
  ASSERT_TRUE(nc);
  EXPECT_EQ(discovered(nc.get()), 0) << "a plaintext route joined a TLS cluster";
}

// Publishes on `subject` from `pub` until `sub` gets it (interest has crossed), then drains.
bool reaches(natsConnection* pub, const char* subject, natsSubscription* sub) {
  const auto deadline = clock_type::now() + 10s;
  while (clock_type::now() < deadline) {
    natsConnection_PublishString(pub, subject, "probe");
    natsConnection_Flush(pub);
    if (next_msg(sub, 100ms)) {
      while (next_msg(sub, 50ms)) {
      }
      return true;
    }
  }
  return false;
}

// The dialing server's cluster.permissions: export filters the interest it takes from the
// route, import the interest it sends. A subject outside them never crosses, and a message
// published before an allowed one on the same connection would have arrived first.
TEST_P(route_security, cluster_permissions_filter_interest_on_a_dialed_route) {
  server_process& acc = acceptor({});
  server_process& dial = dialer("PERMS", route_url(),
                                "  permissions {\n    import: \"imp.>\"\n    export: \"exp.>\"\n  }\n");
  auto on_acc = connect(acc.url());
  auto on_dial = connect(dial.url());
  ASSERT_TRUE(on_acc && on_dial);
  auto exp_sub = subscribe_sync(on_acc.get(), "exp.x");
  auto other_sub = subscribe_sync(on_acc.get(), "other.x");
  auto imp_sub = subscribe_sync(on_dial.get(), "imp.y");
  auto nope_sub = subscribe_sync(on_dial.get(), "nope.y");
  ASSERT_TRUE(exp_sub && other_sub && imp_sub && nope_sub);
  ASSERT_TRUE(reaches(on_dial.get(), "exp.x", exp_sub.get()));
  ASSERT_TRUE(reaches(on_acc.get(), "imp.y", imp_sub.get()));
  ASSERT_EQ(natsConnection_PublishString(on_dial.get(), "other.x", "denied"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(on_dial.get(), "exp.x", "allowed"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(on_acc.get(), "nope.y", "denied"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(on_acc.get(), "imp.y", "allowed"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(on_dial.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(on_acc.get()), NATS_OK);
  auto until_allowed = [](natsSubscription* s) {  // late probes may come first
    for (;;) {
      auto m = next_msg(s, 5s);
      if (!m) return false;
      if (data_of(m.get()) == "allowed") return true;
    }
  };
  EXPECT_TRUE(until_allowed(exp_sub.get()));
  EXPECT_TRUE(until_allowed(imp_sub.get()));
  EXPECT_FALSE(next_msg(other_sub.get(), 100ms)) << "interest outside export crossed the route";
  EXPECT_FALSE(next_msg(nope_sub.get(), 50ms)) << "interest outside import crossed the route";
}

INSTANTIATE_TEST_SUITE_P(pairs, route_security,
                         ::testing::Values(pairing{'P', 'P'}, pairing{'P', 'N'}, pairing{'N', 'P'}), pairing_name);

}  // namespace
}  // namespace peregrine::test
