#pragma once
// TLS over a kernel transport (io_uring or epoll), as a decorator: the inner transport moves
// ciphertext, the dispatcher above keeps seeing plaintext. The NATS flow: the INFO the
// dispatcher writes when a connection opens leaves in plaintext, then the client starts the
// handshake (with handshake_first the handshake comes first and the INFO leaves encrypted
// after it). Outbound plaintext collects per connection during the turn and is encrypted in
// one batch at flush(), so a busy connection costs one SSL_write per turn, not one per
// message. A connection still handshaking when `timeout_ms` passes is closed.
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "net/tls/tls_context.h"
#include "net/tls/tls_session.h"
#include "net/transport.h"

namespace net {

class tls_transport final : public transport, private transport_handler {
 public:
  // `ctx` null: client connections stay plaintext (the layer is there for route TLS only).
  tls_transport(std::unique_ptr<transport> inner, std::shared_ptr<tls_context> ctx, const tls_options& o);
  // Route TLS (cluster tls): `server` for accepted routes, `client` for dialed ones.
  void set_route_tls(std::shared_ptr<tls_context> server, std::shared_ptr<tls_context> client, std::int64_t timeout_ms);
  ~tls_transport() override;

  std::string_view name() const override { return _inner->name(); }
  transport_counters counters() const override { return _inner->counters(); }
  void set_handler(transport_handler* h) override { _handler = h; }
  base::status listen(const std::string& host, int port) override { return _inner->listen(host, port); }
  void set_accept_sink(std::function<void(int)> sink) override { _inner->set_accept_sink(std::move(sink)); }
  void stop_listening() override { _inner->stop_listening(); }
  int bound_port() const override { return _inner->bound_port(); }
  void adopt(int fd) override {
    if (_ctx) {
      _inner->adopt(fd);
    } else {
      adopt_plain(fd);
    }
  }
  void adopt_plain(int fd) override {
    _adopting_plain = true;
    _inner->adopt(fd);
    _adopting_plain = false;
  }
  bool adopt_route_tls(int fd, bool dialed, const std::string& server_name) override;
  std::string& outbuf(conn_handle h) override;
  std::size_t pending_bytes(conn_handle h) const override;
  void pause_reading(conn_handle h) override { _inner->pause_reading(h); }
  void resume_reading(conn_handle h) override { _inner->resume_reading(h); }
  void flush_now(conn_handle h) override;
  std::size_t flush() override;
  void close(conn_handle h, bool after_flush) override;
  void shutdown() override;
  std::vector<std::string> tls_peer_names(conn_handle h) const override;
  bool tls_info(conn_handle h, std::string& version, std::string& cipher) const override;

  std::size_t poll(base::nanos now) override;
  base::nanos idle_limit(base::nanos now) override;
  void wait(base::nanos timeout, int doorbell_fd) override { _inner->wait(timeout, doorbell_fd); }
  bool watch_fd(int fd) override { return _inner->watch_fd(fd); }

 private:
  enum class mode {
    sniffing,     // allow_non_tls: the first byte tells a ClientHello (0x16) from plaintext
    handshaking,
    established,
    plain,        // allow_non_tls and the client stayed plaintext: bytes pass through
    failed,       // closing after a handshake error or timeout
  };
  struct conn {
    mode m = mode::handshaking;
    bool raw_out = false;  // during on_open: the INFO goes out in plaintext
    bool session_started = false;  // the session has seen the peer's first bytes
    std::unique_ptr<tls_session> session;
    std::string plain_out;  // written by the dispatcher this turn, encrypted at flush
    base::nanos deadline = 0;
    std::string peer;       // "ip:port" for the log
    bool route = false;     // a cluster route (nats-server logs its errors as such)
  };
  static std::string handshake_error(const conn& c) {
    return c.route ? "TLS route handshake error: " : "TLS handshake error: ";
  }

  void on_open(conn_handle h, std::string_view peer_ip, int peer_port) override;
  void on_data(conn_handle h, std::string_view bytes) override;
  void on_close(conn_handle h) override;
  void session_bytes(conn_handle h, conn& c, std::string_view bytes);
  void encrypt_pending(conn_handle h, conn& c);
  void expire_handshakes(base::nanos now);
  void fail(conn_handle h, conn& c, const std::string& why);

  std::unique_ptr<transport> _inner;
  std::shared_ptr<tls_context> _ctx;
  const tls_options _opts;
  transport_handler* _handler = nullptr;
  bool _adopting_plain = false;  // adopt_plain -> on_open: the connection passes through
  struct route_adoption {
    bool dialed = false;
    std::string server_name;
  };
  std::optional<route_adoption> _adopting_route;  // adopt_route_tls -> on_open
  std::shared_ptr<tls_context> _route_server, _route_client;
  std::int64_t _route_timeout_ms = 2000;
  base::nanos _next_deadline = 0;  // earliest handshake deadline (0: none)
  std::unordered_map<conn_handle, conn> _conns;
  std::unordered_set<conn_handle> _dirty;        // plaintext waiting for flush()
  std::vector<conn_handle> _flushing;            // flush()'s copy of _dirty
  std::unordered_set<conn_handle> _handshaking;  // deadlines to check (sniffing too)
  std::string _plain_in;                         // decrypted bytes of one on_data
};

}  // namespace net
