// tls_session pair-wise: a server and a client session over memory, bytes handed across by
// the test. Certificates come from tests/data/tls (regenerate.sh).
#include "net/tls/tls_session.h"

#include <gtest/gtest.h>

#include <openssl/ssl.h>

#include <string>

#include "net/tls/tls_context.h"

namespace {

const std::string kDir = PG_TLS_TEST_DIR;

net::tls_options server_opts(bool verify) {
  net::tls_options o;
  o.enabled = true;
  o.cert_file = kDir + "/server.pem";
  o.key_file = kDir + "/server-key.pem";
  o.ca_file = kDir + "/ca.pem";
  o.verify = verify;
  return o;
}

std::shared_ptr<net::tls_context> server_ctx(const net::tls_options& o) {
  std::string err;
  auto ctx = net::tls_context::create_server(o, err);
  EXPECT_TRUE(ctx) << err;
  return ctx;
}

std::shared_ptr<net::tls_context> client_ctx(const std::string& ca, const std::string& cert = "",
                                             const std::string& key = "") {
  std::string err;
  auto ctx = net::tls_context::create_client(ca.empty() ? "" : kDir + "/" + ca, cert.empty() ? "" : kDir + "/" + cert,
                                             key.empty() ? "" : kDir + "/" + key, err);
  EXPECT_TRUE(ctx) << err;
  return ctx;
}

// Hands bytes back and forth until neither side has anything more to say.
struct pair {
  net::tls_session server;
  net::tls_session client;
  std::string server_plain, client_plain;
  pair(std::shared_ptr<net::tls_context> s, std::shared_ptr<net::tls_context> c, const std::string& host = "localhost")
      : server(std::move(s)), client(std::move(c), host) {}

  void run(std::string to_server = {}) {
    if (to_server.empty()) client.start(to_server);
    for (int round = 0; round < 20; ++round) {
      std::string to_client;
      if (!to_server.empty()) server.feed(to_server, server_plain, to_client);
      to_server.clear();
      if (!to_client.empty()) client.feed(to_client, client_plain, to_server);
      if (to_server.empty()) return;
    }
  }
};

TEST(tls_session, handshake_then_data_both_ways) {
  pair p(server_ctx(server_opts(false)), client_ctx("ca.pem"));
  p.run();
  ASSERT_TRUE(p.server.established()) << p.server.error();
  ASSERT_TRUE(p.client.established()) << p.client.error();
  EXPECT_EQ(p.server.protocol(), "TLSv1.3");
  EXPECT_EQ(p.server.peer_subject(), "");  // no client certificate asked for

  std::string wire;
  ASSERT_TRUE(p.client.write("CONNECT {}\r\nPING\r\n", wire));
  EXPECT_EQ(wire.find("CONNECT"), std::string::npos);  // encrypted
  std::string reply;
  EXPECT_EQ(p.server.feed(wire, p.server_plain, reply), net::tls_session::state::established);
  EXPECT_EQ(p.server_plain, "CONNECT {}\r\nPING\r\n");

  // A 300 KB batch (many records) arrives whole, also when fed a few bytes at a time.
  std::string big(300'000, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = char('a' + i % 26);
  std::string big_wire;
  ASSERT_TRUE(p.server.write(big, big_wire));
  for (std::size_t i = 0; i < big_wire.size(); i += 7001) {
    std::string ignored;
    p.client.feed(std::string_view(big_wire).substr(i, 7001), p.client_plain, ignored);
  }
  EXPECT_EQ(p.client_plain, big);
}

TEST(tls_session, verify_requires_a_client_certificate) {
  pair p(server_ctx(server_opts(true)), client_ctx("ca.pem"));
  p.run();
  EXPECT_EQ(p.server.current(), net::tls_session::state::failed);
  EXPECT_NE(p.server.error().find("certificate"), std::string::npos) << p.server.error();
}

TEST(tls_session, verify_accepts_the_ca_signed_client_and_names_it) {
  pair p(server_ctx(server_opts(true)), client_ctx("ca.pem", "client.pem", "client-key.pem"));
  p.run();
  ASSERT_TRUE(p.server.established()) << p.server.error();
  EXPECT_EQ(p.server.peer_subject(), "CN=alice,O=Peregrine");
  EXPECT_EQ(p.server.peer_names(),
            (std::vector<std::string>{"alice@example.com", "alice.example.com", "CN=alice,O=Peregrine"}));
}

TEST(tls_session, verify_refuses_a_client_of_another_ca) {
  pair p(server_ctx(server_opts(true)), client_ctx("ca.pem", "rogue.pem", "rogue-key.pem"));
  p.run();
  EXPECT_EQ(p.server.current(), net::tls_session::state::failed);
  EXPECT_FALSE(p.server.error().empty());
}

TEST(tls_session, client_refuses_a_server_it_does_not_trust) {
  pair p(server_ctx(server_opts(false)), client_ctx("wrong-ca.pem"));
  p.run();
  EXPECT_EQ(p.client.current(), net::tls_session::state::failed);
  EXPECT_NE(p.client.error().find("certificate"), std::string::npos) << p.client.error();
  EXPECT_EQ(p.server.current(), net::tls_session::state::failed);  // it got the alert
}

TEST(tls_session, client_checks_the_host_name) {
  pair p(server_ctx(server_opts(false)), client_ctx("ca.pem"), "example.com");
  p.run();
  EXPECT_EQ(p.client.current(), net::tls_session::state::failed);
  pair by_ip(server_ctx(server_opts(false)), client_ctx("ca.pem"), "127.0.0.1");
  by_ip.run();
  EXPECT_TRUE(by_ip.client.established()) << by_ip.client.error();
}

TEST(tls_session, plaintext_instead_of_a_client_hello_fails_cleanly) {
  net::tls_session server(server_ctx(server_opts(false)));
  std::string plain, out;
  EXPECT_EQ(server.feed("CONNECT {\"verbose\":false}\r\nPING\r\n", plain, out), net::tls_session::state::failed);
  EXPECT_FALSE(server.error().empty());
  EXPECT_TRUE(plain.empty());
  // More bytes after the failure change nothing.
  EXPECT_EQ(server.feed("PING\r\n", plain, out), net::tls_session::state::failed);
}

TEST(tls_session, garbage_after_a_handshake_header_fails_without_crashing) {
  std::uint64_t seed = 12345;  // fixed: the same bytes every run
  for (int round = 0; round < 200; ++round) {
    net::tls_session server(server_ctx(server_opts(false)));
    std::string bytes("\x16\x03\x01", 3);
    for (int i = 0; i < 64 + round * 7; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      bytes.push_back(char(seed >> 56));
    }
    std::string plain, out;
    const auto st = server.feed(bytes, plain, out);
    EXPECT_NE(st, net::tls_session::state::established);
    EXPECT_TRUE(plain.empty());
  }
  // And garbage records after a good handshake end the session with an error.
  pair p(server_ctx(server_opts(false)), client_ctx("ca.pem"));
  p.run();
  ASSERT_TRUE(p.server.established());
  std::string out;
  EXPECT_EQ(p.server.feed(std::string("\x17\x03\x03\x00\x20") + std::string(32, 'z'), p.server_plain, out),
            net::tls_session::state::failed);
  EXPECT_FALSE(p.server.error().empty());
}

TEST(tls_session, close_notify_reaches_the_peer) {
  pair p(server_ctx(server_opts(false)), client_ctx(""));
  p.run();
  ASSERT_TRUE(p.server.established());
  std::string wire, ignored;
  p.client.close(wire);
  EXPECT_EQ(p.server.feed(wire, p.server_plain, ignored), net::tls_session::state::closed);
}

TEST(tls_context, configuration_errors_use_nats_server_texts) {
  std::string err;
  net::tls_options o = server_opts(false);
  o.key_file.clear();
  EXPECT_FALSE(net::tls_context::create_server(o, err));
  EXPECT_EQ(err, "missing 'key_file' in TLS configuration");
  o = server_opts(false);
  o.cert_file.clear();
  EXPECT_FALSE(net::tls_context::create_server(o, err));
  EXPECT_EQ(err, "missing 'cert_file' in TLS configuration");
  o = server_opts(false);
  o.key_file = kDir + "/missing.pem";
  EXPECT_FALSE(net::tls_context::create_server(o, err));
  EXPECT_EQ(err, "error parsing X509 certificate/key pair: open " + kDir + "/missing.pem: no such file or directory");
  o = server_opts(false);
  o.key_file = kDir + "/client-key.pem";  // not the certificate's key
  EXPECT_FALSE(net::tls_context::create_server(o, err));
  EXPECT_EQ(err.rfind("error parsing X509 certificate/key pair: ", 0), 0u) << err;
  o = server_opts(false);
  o.ca_file = kDir + "/server-key.pem";  // not a certificate
  EXPECT_FALSE(net::tls_context::create_server(o, err));
  EXPECT_EQ(err, "failed to parse root ca certificate");
  o = server_opts(false);
  o.min_version = "1.1";
  EXPECT_FALSE(net::tls_context::create_server(o, err));
  EXPECT_EQ(err, "unsupported minimum TLS version: 1.1");
  o = server_opts(false);
  o.cipher_suites = {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_NOPE"};
  EXPECT_FALSE(net::tls_context::create_server(o, err));
  EXPECT_EQ(err, "unrecognized cipher TLS_NOPE");
}

TEST(tls_context, cipher_suites_and_min_version_take_effect) {
  net::tls_options o = server_opts(false);
  o.cipher_suites = {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"};
  o.min_version = "1.2";
  auto ctx = server_ctx(o);
  ASSERT_TRUE(ctx);
  std::string err;
  auto c12 = net::tls_context::create_client(kDir + "/ca.pem", "", "", err);
  ASSERT_TRUE(c12);
  SSL_CTX_set_max_proto_version(c12->raw(), TLS1_2_VERSION);
  pair p(ctx, c12);
  p.run();
  ASSERT_TRUE(p.server.established()) << p.server.error();
  EXPECT_EQ(p.server.cipher(), "ECDHE-RSA-AES256-GCM-SHA384");

  o.cipher_suites.clear();
  o.min_version = "1.3";
  pair refused(server_ctx(o), c12);
  refused.run();
  EXPECT_EQ(refused.server.current(), net::tls_session::state::failed);
}

}  // namespace
