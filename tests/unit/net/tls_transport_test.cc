// tls_transport over a fake inner transport: the test plays the kernel (moving bytes between
// the fake's outbound buffers and a client tls_session) and the dispatcher (a recording
// handler). No sockets, no threads, no sleeps: deadlines are driven through poll(now).
#include "net/tls/tls_transport.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "src/base/clock.h"

namespace {

const std::string kDir = PG_TLS_TEST_DIR;

class fake_inner final : public net::transport {
 public:
  std::string_view name() const override { return "fake"; }
  void set_handler(net::transport_handler* h) override { handler = h; }
  base::status listen(const std::string&, int) override { return {}; }
  void set_accept_sink(std::function<void(int)>) override {}
  void stop_listening() override {}
  int bound_port() const override { return 0; }
  void adopt(int fd) override {  // the fd is the handle; adopted sockets open at once
    if (handler) handler->on_open(net::conn_handle(fd), "127.0.0.1", 6222);
  }
  std::string& outbuf(net::conn_handle h) override { return out[h]; }
  std::size_t pending_bytes(net::conn_handle h) const override {
    auto it = out.find(h);
    return it == out.end() ? 0 : it->second.size();
  }
  void pause_reading(net::conn_handle) override {}
  void resume_reading(net::conn_handle) override {}
  void flush_now(net::conn_handle) override {}  // the kernel takes nothing: a stuck reader
  std::size_t flush() override { return 0; }
  void close(net::conn_handle h, bool) override {
    closed[h] = true;
    handler->on_close(h);
  }
  std::size_t poll(base::nanos) override { return 0; }
  void wait(base::nanos, int) override {}

  net::transport_handler* handler = nullptr;
  std::map<net::conn_handle, std::string> out;
  std::map<net::conn_handle, bool> closed;
};

struct recorder final : public net::transport_handler {
  net::transport* t = nullptr;
  std::map<net::conn_handle, std::string> got;
  std::map<net::conn_handle, bool> gone;
  void on_open(net::conn_handle h, std::string_view, int) override { t->outbuf(h) += "INFO {}\r\n"; }
  void on_data(net::conn_handle h, std::string_view b) override { got[h].append(b); }
  void on_close(net::conn_handle h) override { gone[h] = true; }
};

net::tls_options server_opts() {
  net::tls_options o;
  o.enabled = true;
  o.cert_file = kDir + "/server.pem";
  o.key_file = kDir + "/server-key.pem";
  o.timeout_ms = 2000;
  return o;
}

struct rig {
  fake_inner* inner;
  std::unique_ptr<net::tls_transport> tls;
  recorder up;
  std::shared_ptr<net::tls_context> client_ctx;
  explicit rig(const net::tls_options& o) {
    std::string err;
    auto ctx = net::tls_context::create_server(o, err);
    EXPECT_TRUE(ctx) << err;
    auto f = std::make_unique<fake_inner>();
    inner = f.get();
    tls = std::make_unique<net::tls_transport>(std::move(f), ctx, o);
    tls->set_handler(&up);
    up.t = tls.get();
    client_ctx = net::tls_context::create_client(kDir + "/ca.pem", "", "", err);
    EXPECT_TRUE(client_ctx) << err;
  }
  void open(net::conn_handle h) { inner->handler->on_open(h, "127.0.0.1", 5000); }
  // Takes what the server wrote to the wire.
  std::string wire(net::conn_handle h) {
    tls->flush();
    std::string w;
    w.swap(inner->out[h]);
    return w;
  }
  // Runs a client handshake against connection h; returns the client session.
  std::unique_ptr<net::tls_session> handshake(net::conn_handle h, std::string& client_plain) {
    auto c = std::make_unique<net::tls_session>(client_ctx, "localhost");
    std::string to_server;
    c->start(to_server);
    for (int i = 0; i < 10 && !to_server.empty(); ++i) {
      inner->handler->on_data(h, to_server);
      to_server.clear();
      c->feed(wire(h), client_plain, to_server);
    }
    return c;
  }
};

TEST(tls_transport, info_leaves_in_plaintext_then_everything_is_encrypted) {
  rig r(server_opts());
  r.open(1);
  EXPECT_EQ(r.wire(1), "INFO {}\r\n");
  std::string client_plain;
  auto c = r.handshake(1, client_plain);
  ASSERT_TRUE(c->established()) << c->error();
  std::string rec;
  ASSERT_TRUE(c->write("PING\r\n", rec));
  r.inner->handler->on_data(1, rec);
  EXPECT_EQ(r.up.got[1], "PING\r\n");
  r.tls->outbuf(1) += "PONG\r\n";
  std::string to_server;
  const std::string w = r.wire(1);
  EXPECT_EQ(w.find("PONG"), std::string::npos);
  c->feed(w, client_plain, to_server);
  EXPECT_EQ(client_plain, "PONG\r\n");
}

TEST(tls_transport, handshake_first_holds_the_info_until_the_handshake_is_done) {
  net::tls_options o = server_opts();
  o.handshake_first = true;
  rig r(o);
  r.open(1);
  EXPECT_EQ(r.wire(1), "");
  std::string client_plain;
  auto c = r.handshake(1, client_plain);
  ASSERT_TRUE(c->established()) << c->error();
  EXPECT_EQ(client_plain, "INFO {}\r\n");
}

TEST(tls_transport, a_backlog_pushed_per_message_is_still_encrypted_in_batches) {
  rig r(server_opts());
  r.open(1);
  r.wire(1);
  std::string client_plain;
  auto c = r.handshake(1, client_plain);
  ASSERT_TRUE(c->established());
  // The dispatcher's slow-reader path: flush_now after every delivery (the kernel takes none).
  const std::string msg(100, 'm');
  for (int i = 0; i < 1000; ++i) {
    r.tls->outbuf(1) += msg;
    r.tls->flush_now(1);
  }
  const std::string w = r.wire(1);
  std::string to_server;
  c->feed(w, client_plain, to_server);
  ASSERT_EQ(client_plain.size(), 100'000u);
  // Full 16 KiB records (about 22 bytes of framing and tag each), not one record per message.
  EXPECT_LT(w.size(), 100'000u + 20 * 30) << "records: many small ones";
  EXPECT_EQ(r.tls->pending_bytes(1), 0u);
}

TEST(tls_transport, a_stalled_handshake_is_closed_at_the_deadline_and_others_are_not) {
  rig r(server_opts());
  r.open(1);
  r.open(2);
  r.wire(1);
  r.wire(2);
  std::string client_plain;
  auto c = r.handshake(2, client_plain);
  ASSERT_TRUE(c->established());
  r.inner->handler->on_data(1, std::string("\x16\x03\x01", 3));  // half a record header
  const base::nanos now = base::read_clock(CLOCK_MONOTONIC);
  r.tls->poll(now + 1000 * base::kMilli);
  EXPECT_FALSE(r.up.gone[1]);
  const base::nanos limit = r.tls->idle_limit(now + 1000 * base::kMilli);
  EXPECT_GT(limit, 0);
  EXPECT_LE(limit, 1000 * base::kMilli);  // the loop wakes up for the deadline
  r.tls->poll(now + 2100 * base::kMilli);
  EXPECT_TRUE(r.up.gone[1]);
  EXPECT_FALSE(r.up.gone[2]);  // established: no deadline
  EXPECT_EQ(r.tls->idle_limit(now + 2100 * base::kMilli), 0);
}

TEST(tls_transport, plaintext_where_the_client_hello_belongs_is_refused) {
  rig r(server_opts());
  r.open(1);
  r.wire(1);
  r.inner->handler->on_data(1, "CONNECT {}\r\n");
  EXPECT_TRUE(r.inner->closed[1]);
  EXPECT_TRUE(r.up.got[1].empty());
}

TEST(tls_transport, allow_non_tls_lets_a_plaintext_client_through_unchanged) {
  net::tls_options o = server_opts();
  o.allow_non_tls = true;
  rig r(o);
  r.open(1);
  r.open(2);
  EXPECT_EQ(r.wire(1), "INFO {}\r\n");
  r.inner->handler->on_data(1, "CONNECT {}\r\nPING\r\n");
  EXPECT_EQ(r.up.got[1], "CONNECT {}\r\nPING\r\n");
  r.tls->outbuf(1) += "PONG\r\n";
  EXPECT_EQ(r.wire(1), "PONG\r\n");
  r.wire(2);
  std::string client_plain;
  auto c = r.handshake(2, client_plain);  // and a TLS client on the same listener
  EXPECT_TRUE(c->established()) << c->error();
}

// Route TLS (cluster tls) on a layer without client TLS: one transport accepts, the other
// dials, the handshake comes first and what the dispatchers wrote at open waits for it.
struct route_end {
  fake_inner* inner;
  std::unique_ptr<net::tls_transport> tls;
  recorder up;
  route_end() {
    net::tls_options o = server_opts();
    o.cert_file = kDir + "/route.pem";
    o.key_file = kDir + "/route-key.pem";
    o.ca_file = kDir + "/ca.pem";
    o.verify = true;
    std::string err;
    auto server = net::tls_context::create_server(o, err);
    EXPECT_TRUE(server) << err;
    auto client = net::tls_context::create_client(o.ca_file, o.cert_file, o.key_file, err);
    EXPECT_TRUE(client) << err;
    auto f = std::make_unique<fake_inner>();
    inner = f.get();
    tls = std::make_unique<net::tls_transport>(std::move(f), nullptr, net::tls_options{});
    tls->set_route_tls(server, client, 2000);
    tls->set_handler(&up);
    up.t = tls.get();
  }
  std::string wire(net::conn_handle h) {
    tls->flush();
    std::string w;
    w.swap(inner->out[h]);
    return w;
  }
};

TEST(tls_transport, a_route_handshakes_first_both_roles_then_carries_the_protocol) {
  route_end acc, dial;
  ASSERT_TRUE(acc.tls->adopt_route_tls(7, false, ""));
  ASSERT_TRUE(dial.tls->adopt_route_tls(9, true, "127.0.0.1"));
  EXPECT_EQ(acc.wire(7), "");  // the acceptor waits for the ClientHello, its INFO held back
  std::string to_acc = dial.wire(9);
  ASSERT_FALSE(to_acc.empty());
  EXPECT_EQ(to_acc.find("INFO"), std::string::npos);
  for (int i = 0; i < 10 && !to_acc.empty(); ++i) {
    acc.inner->handler->on_data(7, to_acc);
    const std::string to_dial = acc.wire(7);
    if (!to_dial.empty()) dial.inner->handler->on_data(9, to_dial);
    to_acc = dial.wire(9);
  }
  EXPECT_EQ(acc.up.got[7], "INFO {}\r\n");  // each side's open-time bytes, decrypted
  EXPECT_EQ(dial.up.got[9], "INFO {}\r\n");
  std::string version, cipher;
  EXPECT_TRUE(acc.tls->tls_info(7, version, cipher));
  EXPECT_FALSE(acc.inner->closed[7]);
  // A client connection on this layer (no client TLS) passes through in plaintext.
  acc.tls->adopt(3);
  EXPECT_EQ(acc.wire(3), "INFO {}\r\n");
  acc.inner->handler->on_data(3, "PING\r\n");
  EXPECT_EQ(acc.up.got[3], "PING\r\n");
}

TEST(tls_transport, a_plaintext_route_is_refused_and_no_route_tls_takes_nothing) {
  route_end acc;
  ASSERT_TRUE(acc.tls->adopt_route_tls(7, false, ""));
  acc.inner->handler->on_data(7, "CONNECT {}\r\nINFO {}\r\n");
  EXPECT_TRUE(acc.inner->closed[7]);
  EXPECT_TRUE(acc.up.got[7].empty());
  EXPECT_FALSE(net::tls_transport(std::make_unique<fake_inner>(), nullptr, net::tls_options{})
                   .adopt_route_tls(8, true, "h"));  // no route TLS set up: not taken
}

}  // namespace
