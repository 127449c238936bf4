// TLS on the client listener, with libnats (natsOptions_SetSecure and friends) and with a
// raw TLS client built on net::tls_session for what libnats cannot do here (handshake_first,
// stalling mid-handshake). Certificates: tests/data/tls (regenerate.sh).
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "net/tls/tls_context.h"
#include "net/tls/tls_session.h"
#include "tests/integration/ops_harness.h"
#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;
const std::string kDir = PG_TLS_TEST_DIR;

std::string tls_block(const std::string& extra = "") {
  return "tls {\n  cert_file: \"" + kDir + "/server.pem\"\n  key_file: \"" + kDir + "/server-key.pem\"\n  ca_file: \"" +
         kDir + "/ca.pem\"\n" + extra + "}\n";
}

opts_ptr secure_opts(const std::string& url, const std::string& ca = "ca.pem", const std::string& cert = "",
                     const std::string& key = "") {
  auto o = make_opts(url);
  natsOptions_SetSecure(o.get(), true);
  if (!ca.empty()) natsOptions_LoadCATrustedCertificates(o.get(), (kDir + "/" + ca).c_str());
  if (!cert.empty()) natsOptions_LoadCertificatesChain(o.get(), (kDir + "/" + cert).c_str(), (kDir + "/" + key).c_str());
  natsOptions_SetExpectedHostname(o.get(), "localhost");
  return o;
}

// Publishes `n` messages of `size` bytes through the connection to itself and checks each.
void round_trip(natsConnection* nc, int n, int size) {
  auto sub = subscribe_sync(nc, "tls.rt");
  ASSERT_TRUE(sub);
  std::string payload(std::size_t(size), 'p');
  for (int i = 0; i < n; ++i) {
    payload[0] = char('a' + i % 26);
    ASSERT_EQ(natsConnection_Publish(nc, "tls.rt", payload.data(), size), NATS_OK);
  }
  ASSERT_EQ(natsConnection_FlushTimeout(nc, 5000), NATS_OK);
  for (int i = 0; i < n; ++i) {
    auto m = next_msg(sub.get(), 5s);
    ASSERT_TRUE(m) << "message " << i;
    ASSERT_EQ(natsMsg_GetDataLength(m.get()), size);
    EXPECT_EQ(natsMsg_GetData(m.get())[0], char('a' + i % 26));
  }
}

// A TLS client over a plain socket and net::tls_session: every step bounded by a timeout.
class tls_raw {
 public:
  explicit tls_raw(std::shared_ptr<net::tls_context> ctx) : session_(std::move(ctx), "localhost") {}
  raw_client tcp;
  net::tls_session session_;
  std::string plain;

  bool send_cipher(const std::string& bytes) {
    return bytes.empty() || ::send(tcp.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
  }
  // Reads ciphertext once (up to `timeout`) and feeds it; false on close or timeout.
  bool pump(std::chrono::milliseconds timeout) {
    pollfd p{tcp.fd(), POLLIN, 0};
    if (::poll(&p, 1, int(timeout.count())) <= 0) return false;
    char buf[16384];
    const ssize_t n = ::recv(tcp.fd(), buf, sizeof buf, 0);
    if (n <= 0) return false;
    std::string out;
    session_.feed(std::string_view(buf, std::size_t(n)), plain, out);
    return send_cipher(out);
  }
  bool handshake(std::chrono::milliseconds timeout = 3s) {
    std::string hello;
    session_.start(hello);
    if (!send_cipher(hello)) return false;
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!session_.established() && session_.current() == net::tls_session::state::handshaking)
      if (std::chrono::steady_clock::now() > end || !pump(100ms)) {
        if (std::chrono::steady_clock::now() > end) return false;
      }
    return session_.established();
  }
  bool write(const std::string& s) {
    std::string out;
    return session_.write(s, out) && send_cipher(out);
  }
  // Plaintext up to and including `needle`, or empty.
  std::string read_until(const std::string& needle, std::chrono::milliseconds timeout = 3s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (plain.find(needle) == std::string::npos && std::chrono::steady_clock::now() < end) pump(100ms);
    const auto at = plain.find(needle);
    if (at == std::string::npos) return "";
    std::string line = plain.substr(0, at + needle.size());
    plain.erase(0, at + needle.size());
    return line;
  }
};

std::shared_ptr<net::tls_context> client_ctx(const std::string& cert = "", const std::string& key = "") {
  std::string err;
  auto ctx = net::tls_context::create_client(kDir + "/ca.pem", cert.empty() ? "" : kDir + "/" + cert,
                                             key.empty() ? "" : kDir + "/" + key, err);
  EXPECT_TRUE(ctx) << err;
  return ctx;
}

class tls_server : public server_test {
 protected:
  std::string extra_conf() const override { return tls_block("  timeout: 1\n"); }
};

TEST_F(tls_server, info_is_plaintext_and_requires_tls_in_nats_server_order) {
  raw_client c;
  ASSERT_TRUE(c.connect(port()));
  const std::string info = c.read_info();
  ASSERT_EQ(info.rfind("INFO {", 0), 0u) << info;
  const auto headers = info.find("\"headers\":true,");
  const auto tls = info.find("\"tls_required\":true,");
  const auto max_payload = info.find("\"max_payload\":");
  ASSERT_NE(tls, std::string::npos) << info;
  EXPECT_LT(headers, tls) << info;
  EXPECT_LT(tls, max_payload) << info;
  EXPECT_EQ(info.find("tls_verify"), std::string::npos) << info;
}

TEST_F(tls_server, libnats_secure_client_publishes_and_receives) {
  std::string err;
  auto opts = secure_opts(url());
  auto nc = connect(opts.get(), &err);
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 200, 100);
  round_trip(nc.get(), 20, 300'000);  // many TLS records per message
}

TEST_F(tls_server, libnats_client_without_tls_settings_fails_and_the_server_carries_on) {
  std::string err;
  // INFO says tls_required: libnats either stops ("secure connection required") or tries TLS
  // without a CA that trusts the server; either way no connection.
  EXPECT_FALSE(connect(url(), &err));
  auto opts = secure_opts(url());
  auto nc = connect(opts.get(), &err);
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 5, 10);
}

TEST_F(tls_server, client_that_distrusts_the_server_fails) {
  std::string err;
  auto opts = secure_opts(url(), "wrong-ca.pem");
  EXPECT_FALSE(connect(opts.get(), &err));
  // The server is unharmed.
  auto good = secure_opts(url());
  auto nc = connect(good.get(), &err);
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 5, 10);
}

TEST_F(tls_server, plaintext_after_info_is_closed) {
  raw_client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_FALSE(c.read_info().empty());
  ASSERT_TRUE(c.send("CONNECT {}\r\nPING\r\n"));
  const auto rest = c.read_until_closed(3s);
  ASSERT_TRUE(rest) << "still open";
  EXPECT_EQ(rest->find("PONG"), std::string::npos);
  EXPECT_NE(server_->log().find("TLS handshake error: tls: first record does not look like a TLS handshake"),
            std::string::npos)
      << server_->log();
}

TEST_F(tls_server, client_stalled_mid_handshake_is_cut_at_the_timeout_without_disturbing_others) {
  raw_client stalled;
  ASSERT_TRUE(stalled.connect(port()));
  ASSERT_FALSE(stalled.read_info().empty());
  ASSERT_TRUE(stalled.send(std::string("\x16\x03\x01\x02", 4)));  // a ClientHello that never ends
  const auto start = std::chrono::steady_clock::now();
  // Twenty more that never start the handshake at all.
  std::vector<std::unique_ptr<raw_client>> silent;
  for (int i = 0; i < 20; ++i) {
    silent.push_back(std::make_unique<raw_client>());
    ASSERT_TRUE(silent.back()->connect(port()));
  }

  // Meanwhile a TLS client works normally.
  std::string err;
  auto opts = secure_opts(url());
  auto nc = connect(opts.get(), &err);
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 50, 64);

  // timeout: 1 -> cut after about a second (generous upper bound for a loaded machine).
  const auto rest = stalled.read_until_closed(10s);
  ASSERT_TRUE(rest) << "the stalled client was never cut";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);
  // nats-server: "TLS handshake error: read tcp <local>-><peer>: i/o timeout"
  EXPECT_NE(server_->log().find("TLS handshake error: "), std::string::npos) << server_->log();
  EXPECT_NE(server_->log().find("i/o timeout"), std::string::npos) << server_->log();
  for (auto& c : silent) EXPECT_TRUE(c->read_until_closed(10s)) << "a silent client was never cut";
  round_trip(nc.get(), 5, 64);  // still fine after the cuts
}

TEST_F(tls_server, raw_tls_client_speaks_the_protocol) {
  tls_raw c(client_ctx());
  ASSERT_TRUE(c.tcp.connect(port()));
  ASSERT_FALSE(c.tcp.read_info().empty());
  ASSERT_TRUE(c.handshake()) << c.session_.error();
  ASSERT_TRUE(c.write("CONNECT {\"verbose\":false}\r\nSUB t 1\r\nPUB t 2\r\nhi\r\nPING\r\n"));
  EXPECT_EQ(c.read_until("PONG\r\n"), "MSG t 1 2\r\nhi\r\nPONG\r\n");
}

TEST(tls_start, dpdk_transport_refuses_tls_with_a_clear_error) {
  if (server_binary().empty()) GTEST_SKIP() << "no server binary";
  if (server_binary().find("nats-server") != std::string::npos) GTEST_SKIP() << "Peregrine's --transport only";
  const auto dir = make_test_dir("tls_dpdk");
  ops_server srv(dir, server_binary());
  srv.write_config("listen: \"127.0.0.1:" + std::to_string(pick_free_port()) + "\"\n" + tls_block());
  srv.start({"--transport", "dpdk"});  // a flag: it overrides PEREGRINE_EXTRA_CONF's transport too
  EXPECT_NE(srv.wait_exit(5s), -1) << "still running";
  EXPECT_TRUE(srv.log_has("TLS is not supported with --transport dpdk")) << srv.log();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST(tls_start, a_missing_key_file_stops_the_start_with_nats_server_text) {
  if (server_binary().empty()) GTEST_SKIP() << "no server binary";
  const auto dir = make_test_dir("tls_bad_key");
  ops_server srv(dir, server_binary());
  srv.write_config("listen: \"127.0.0.1:" + std::to_string(pick_free_port()) + "\"\ntls {\n  cert_file: \"" + kDir +
                   "/server.pem\"\n  key_file: \"" + kDir + "/nope.pem\"\n}\n");
  srv.start();
  EXPECT_NE(srv.wait_exit(5s), -1) << "still running";
  EXPECT_TRUE(srv.log_has("error parsing X509 certificate/key pair: open " + kDir + "/nope.pem: no such file or directory"))
      << srv.log();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

class tls_verify_server : public server_test {
 protected:
  std::string extra_conf() const override { return tls_block("  verify: true\n"); }
};

TEST_F(tls_verify_server, info_says_tls_verify) {
  raw_client c;
  ASSERT_TRUE(c.connect(port()));
  const std::string info = c.read_info();
  EXPECT_NE(info.find("\"tls_required\":true,\"tls_verify\":true,\"max_payload\""), std::string::npos) << info;
}

TEST_F(tls_verify_server, client_certificate_from_the_ca_is_accepted) {
  std::string err;
  auto opts = secure_opts(url(), "ca.pem", "client.pem", "client-key.pem");
  auto nc = connect(opts.get(), &err);
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 20, 100);
}

TEST_F(tls_verify_server, no_client_certificate_is_refused) {
  std::string err;
  auto opts = secure_opts(url());
  EXPECT_FALSE(connect(opts.get(), &err));
}

TEST_F(tls_verify_server, certificate_of_another_ca_is_refused) {
  std::string err;
  auto opts = secure_opts(url(), "ca.pem", "rogue.pem", "rogue-key.pem");
  EXPECT_FALSE(connect(opts.get(), &err));
  EXPECT_NE(server_->log().find("TLS handshake error"), std::string::npos) << server_->log();
}

// verify_and_map with the single user: the certificate's subject or one of its e-mail / DNS
// names (a users list: tls_verify_and_map_users below).
class tls_verify_and_map : public server_test {
 protected:
  std::string extra_conf() const override {
    return tls_block("  verify_and_map: true\n") + "authorization {\n  user: \"CN=alice,O=Peregrine\"\n}\n";
  }
};

TEST_F(tls_verify_and_map, the_certificate_subject_is_the_user) {
  std::string err;
  auto opts = secure_opts(url(), "ca.pem", "client.pem", "client-key.pem");
  auto nc = connect(opts.get(), &err);  // no user or password in CONNECT
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 5, 10);
}

class tls_verify_and_map_email : public server_test {
 protected:
  std::string extra_conf() const override {
    return tls_block("  verify_and_map: true\n") + "authorization {\n  user: \"alice@example.com\"\n}\n";
  }
};

TEST_F(tls_verify_and_map_email, an_email_name_of_the_certificate_is_the_user) {
  std::string err;
  auto opts = secure_opts(url(), "ca.pem", "client.pem", "client-key.pem");
  auto nc = connect(opts.get(), &err);
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 5, 10);
}

class tls_verify_and_map_other_user : public server_test {
 protected:
  std::string extra_conf() const override {
    return tls_block("  verify_and_map: true\n") + "authorization {\n  user: \"CN=bob\"\n  password: x\n}\n";
  }
};

TEST_F(tls_verify_and_map_other_user, a_certificate_of_someone_else_is_an_authorization_violation) {
  std::string err;
  auto opts = secure_opts(url(), "ca.pem", "client.pem", "client-key.pem");
  natsOptions_SetUserInfo(opts.get(), "CN=bob", "x");  // the password does not stand in for the certificate
  EXPECT_FALSE(connect(opts.get(), &err));
  EXPECT_NE(err.find("Authorization Violation"), std::string::npos) << err;
}

// verify_and_map with a users list: the certificate names the user, who has its permissions.
class tls_verify_and_map_users : public server_test {
 protected:
  std::string extra_conf() const override {
    return tls_block("  verify_and_map: true\n") +
           "authorization {\n  users: [\n    { user: \"CN=bob\" }\n"
           "    { user: \"CN=alice,O=Peregrine\", permissions: { publish: \"tls.rt\", subscribe: \"tls.rt\" } }\n  ]\n}\n";
  }
};

TEST_F(tls_verify_and_map_users, the_mapped_user_gets_its_permissions) {
  std::string err;
  auto opts = secure_opts(url(), "ca.pem", "client.pem", "client-key.pem");
  auto nc = connect(opts.get(), &err);
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 3, 10);
  ASSERT_EQ(natsConnection_PublishString(nc.get(), "elsewhere", "x"), NATS_OK);
  ASSERT_EQ(natsConnection_FlushTimeout(nc.get(), 5000), NATS_OK);
  const char* text = nullptr;
  EXPECT_EQ(natsConnection_GetLastError(nc.get(), &text), NATS_NOT_PERMITTED);
  EXPECT_NE(std::string(text ? text : "").find("Permissions Violation for Publish to \"elsewhere\""), std::string::npos)
      << (text ? text : "");
}

// handshake_first came with nats-server 2.10: 2.9.10 refuses the key (this fixture fails there).
class tls_handshake_first : public server_test {
 protected:
  std::string extra_conf() const override { return tls_block("  handshake_first: true\n"); }
};

TEST_F(tls_handshake_first, handshake_comes_before_the_encrypted_info) {
  tls_raw c(client_ctx());
  ASSERT_TRUE(c.tcp.connect(port()));
  // Nothing in plaintext: the server waits for our ClientHello.
  ASSERT_TRUE(c.tcp.quiet_for(300ms));
  ASSERT_TRUE(c.handshake()) << c.session_.error();
  const std::string info = c.read_until("\r\n");
  ASSERT_EQ(info.rfind("INFO {", 0), 0u) << info;
  EXPECT_NE(info.find("\"tls_required\":true"), std::string::npos) << info;
  ASSERT_TRUE(c.write("CONNECT {\"verbose\":false}\r\nPING\r\n"));
  EXPECT_EQ(c.read_until("PONG\r\n"), "PONG\r\n");
}

class tls_allow_non_tls : public server_test {
 protected:
  std::string extra_conf() const override { return tls_block() + "allow_non_tls: true\n"; }
};

TEST_F(tls_allow_non_tls, plain_and_tls_clients_both_work) {
  raw_client c;
  ASSERT_TRUE(c.connect(port()));
  const std::string info = c.read_info();
  EXPECT_NE(info.find("\"tls_available\":true"), std::string::npos) << info;
  EXPECT_EQ(info.find("tls_required"), std::string::npos) << info;

  // A plaintext libnats subscriber gets what a TLS client publishes (this libnats predates
  // tls_available, so the TLS side is the raw client).
  std::string err;
  auto plain = connect(url(), &err);
  ASSERT_TRUE(plain) << err;
  auto sub = subscribe_sync(plain.get(), "mix");
  ASSERT_EQ(natsConnection_FlushTimeout(plain.get(), 5000), NATS_OK);
  tls_raw t(client_ctx());
  ASSERT_TRUE(t.tcp.connect(port()));
  ASSERT_FALSE(t.tcp.read_info().empty());
  ASSERT_TRUE(t.handshake()) << t.session_.error();
  ASSERT_TRUE(t.write("CONNECT {\"verbose\":false}\r\nSUB mix 1\r\nPUB mix 8\r\nfrom-tls\r\nPING\r\n"));
  EXPECT_EQ(t.read_until("PONG\r\n"), "MSG mix 1 8\r\nfrom-tls\r\nPONG\r\n");
  ASSERT_EQ(natsConnection_PublishString(plain.get(), "mix", "from-plain"), NATS_OK);
  ASSERT_EQ(natsConnection_FlushTimeout(plain.get(), 5000), NATS_OK);
  EXPECT_EQ(pending_msgs(sub.get()), 2);
  EXPECT_EQ(t.read_until("from-plain\r\n"), "MSG mix 1 10\r\nfrom-plain\r\n");
}

// With PEREGRINE_EXTRA_CONF "shards: 2" (the tls_shards2 test) these land on both shards.
TEST_F(tls_server, several_clients_exchange_messages) {
  std::string err;
  std::vector<nc_ptr> conns;
  for (int i = 0; i < 4; ++i) {  // round-robin: two per shard
    auto opts = secure_opts(url());
    conns.push_back(connect(opts.get(), &err));
    ASSERT_TRUE(conns.back()) << err;
  }
  auto sub = subscribe_sync(conns[0].get(), "shards");
  ASSERT_EQ(natsConnection_FlushTimeout(conns[0].get(), 5000), NATS_OK);
  for (int i = 1; i < 4; ++i) {
    ASSERT_EQ(natsConnection_PublishString(conns[i].get(), "shards", "x"), NATS_OK);
    ASSERT_EQ(natsConnection_FlushTimeout(conns[i].get(), 5000), NATS_OK);
  }
  ASSERT_EQ(natsConnection_FlushTimeout(conns[0].get(), 5000), NATS_OK);
  EXPECT_EQ(pending_msgs(sub.get()), 3);
}

// SIGHUP with a new certificate: new connections get it, open ones keep working; a broken
// certificate refuses the reload and the old one stays. nats-server 2.9.10 passes this too.
TEST(tls_reload, sighup_swaps_the_server_certificate_for_new_connections) {
  if (server_binary().empty()) GTEST_SKIP() << "no server binary";
  const auto dir = make_test_dir("tls_reload");
  ops_server srv(dir, server_binary());
  const int port = pick_free_port();
  const std::string url = "nats://127.0.0.1:" + std::to_string(port);
  auto conf = [&](const std::string& cert, const std::string& key) {
    return "listen: \"127.0.0.1:" + std::to_string(port) + "\"\ntls {\n  cert_file: \"" + kDir + "/" + cert +
           "\"\n  key_file: \"" + kDir + "/" + key + "\"\n}\n";
  };
  srv.write_config(conf("server.pem", "server-key.pem"));
  ASSERT_TRUE(srv.start());
  std::string err;
  nc_ptr before;
  ASSERT_TRUE(eventually([&] {
    auto o = secure_opts(url);
    before = connect(o.get(), &err);
    return before != nullptr;
  }, 5s)) << err << srv.log();

  srv.write_config(conf("server-other.pem", "server-other-key.pem"));
  srv.signal(SIGHUP);
  // The new certificate is signed by wrong-ca.pem: clients trusting it now connect.
  ASSERT_TRUE(eventually([&] {
    auto o = secure_opts(url, "wrong-ca.pem");
    return connect(o.get(), &err) != nullptr;
  }, 5s)) << err << srv.log();
  auto o = secure_opts(url);
  EXPECT_FALSE(connect(o.get(), &err));  // ca.pem no longer vouches for the server
  round_trip(before.get(), 5, 10);        // the connection from before the reload is untouched

  srv.write_config(conf("server-other.pem", "missing-key.pem"));
  srv.signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return srv.log_has("missing-key.pem"); }, 5s)) << srv.log();
  EXPECT_TRUE(srv.running());
  auto still = secure_opts(url, "wrong-ca.pem");
  auto nc = connect(still.get(), &err);
  ASSERT_TRUE(nc) << err;
  round_trip(nc.get(), 5, 10);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Monitoring of a TLS listener: /varz's tls_* fields and the auth timeout TLS implies, and
// /connz's tls_version and tls_cipher_suite after the client's version. Also on 2.9.10.
TEST(tls_monitor, varz_and_connz_show_tls) {
  if (server_binary().empty()) GTEST_SKIP() << "no server binary";
  const auto dir = make_test_dir("tls_monitor");
  ops_server srv(dir, server_binary());
  const int port = pick_free_port();
  const int http = pick_free_port();
  srv.write_config("listen: \"127.0.0.1:" + std::to_string(port) + "\"\nhttp: \"127.0.0.1:" + std::to_string(http) +
                   "\"\n" + tls_block("  verify: true\n  timeout: 0.5\n"));
  ASSERT_TRUE(srv.start());
  std::string err;
  nc_ptr nc;
  ASSERT_TRUE(eventually([&] {
    auto o = secure_opts("nats://127.0.0.1:" + std::to_string(port), "ca.pem", "client.pem", "client-key.pem");
    nc = connect(o.get(), &err);
    return nc != nullptr;
  }, 5s)) << err << srv.log();
  http_result varz;
  ASSERT_TRUE(eventually([&] { return (varz = http_get(http, "/varz")).status == 200; }, 5s));
  const auto at = [&](const std::string& body, const std::string& field) { return body.find("\"" + field + "\""); };
  EXPECT_NE(varz.body.find("\"tls_required\": true"), std::string::npos) << varz.body;
  EXPECT_NE(varz.body.find("\"tls_verify\": true"), std::string::npos) << varz.body;
  EXPECT_NE(varz.body.find("\"tls_timeout\": 0.5"), std::string::npos) << varz.body;
  EXPECT_NE(varz.body.find("\"auth_timeout\": 1.5"), std::string::npos) << varz.body;
  EXPECT_LT(at(varz.body, "port"), at(varz.body, "tls_required"));
  EXPECT_LT(at(varz.body, "tls_verify"), at(varz.body, "max_connections"));
  const http_result connz = http_get(http, "/connz");
  ASSERT_EQ(connz.status, 200);
  EXPECT_NE(connz.body.find("\"tls_version\": \"1.3\""), std::string::npos) << connz.body;
  EXPECT_NE(connz.body.find("\"tls_cipher_suite\": \"TLS_"), std::string::npos) << connz.body;
  EXPECT_LT(at(connz.body, "version"), at(connz.body, "tls_version")) << connz.body;
  EXPECT_LT(at(connz.body, "tls_version"), at(connz.body, "tls_cipher_suite")) << connz.body;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace peregrine::test
