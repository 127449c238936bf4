#include "net/tls/tls_transport.h"

#include <vector>

#include "src/base/clock.h"
#include "src/base/log.h"

namespace net {
namespace {
constexpr char kHandshakeRecord = 0x16;            // the first byte of a ClientHello
constexpr std::size_t kFullRecord = 16 * 1024;       // TLS's largest record payload
constexpr std::size_t kKeepPlainCapacity = 8 << 20;  // a bigger burst's buffer is released
}  // namespace

tls_transport::tls_transport(std::unique_ptr<transport> inner, std::shared_ptr<tls_context> ctx,
                             const tls_options& o)
    : _inner(std::move(inner)), _ctx(std::move(ctx)), _opts(o) {
  _inner->set_handler(this);
}

tls_transport::~tls_transport() = default;

void tls_transport::set_route_tls(std::shared_ptr<tls_context> server, std::shared_ptr<tls_context> client,
                                  std::int64_t timeout_ms) {
  _route_server = std::move(server);
  _route_client = std::move(client);
  _route_timeout_ms = timeout_ms;
}

bool tls_transport::adopt_route_tls(int fd, bool dialed, const std::string& server_name) {
  if (!(dialed ? _route_client : _route_server)) return false;
  _adopting_route = route_adoption{dialed, server_name};
  _inner->adopt(fd);
  _adopting_route.reset();
  return true;
}

void tls_transport::on_open(conn_handle h, std::string_view peer_ip, int peer_port) {
  conn& c = _conns[h];
  c.peer = std::string(peer_ip) + ":" + std::to_string(peer_port);
  if (_adopting_plain || (!_ctx && !_adopting_route)) {
    c.m = mode::plain;
    if (_handler) _handler->on_open(h, peer_ip, peer_port);
    return;
  }
  if (_adopting_route) {  // the handshake first; what the dispatcher writes waits for it
    const bool dialed = _adopting_route->dialed;
    c.deadline = base::read_clock(CLOCK_MONOTONIC) + _route_timeout_ms * base::kMilli;
    c.m = mode::handshaking;
    c.route = true;
    c.session = std::make_unique<tls_session>(dialed ? _route_client : _route_server,
                                              dialed ? _adopting_route->server_name : std::string());
    if (dialed) c.session->start(_inner->outbuf(h));  // the ClientHello
    _handshaking.insert(h);
    if (_next_deadline == 0 || c.deadline < _next_deadline) _next_deadline = c.deadline;
    if (_handler) _handler->on_open(h, peer_ip, peer_port);
    return;
  }
  c.deadline = base::read_clock(CLOCK_MONOTONIC) + _opts.timeout_ms * base::kMilli;
  if (_opts.allow_non_tls && !_opts.handshake_first) {
    c.m = mode::sniffing;
  } else {
    c.m = mode::handshaking;
    c.session = std::make_unique<tls_session>(_ctx);
  }
  _handshaking.insert(h);
  if (_next_deadline == 0 || c.deadline < _next_deadline) _next_deadline = c.deadline;
  // Without handshake_first the INFO written now leaves in plaintext; with it, the INFO
  // waits in plain_out until the handshake is done.
  c.raw_out = !_opts.handshake_first;
  if (_handler) _handler->on_open(h, peer_ip, peer_port);
  if (auto it = _conns.find(h); it != _conns.end()) it->second.raw_out = false;
}

void tls_transport::on_data(conn_handle h, std::string_view bytes) {
  auto it = _conns.find(h);
  if (it == _conns.end() || bytes.empty()) return;
  conn& c = it->second;
  switch (c.m) {
    case mode::plain:
      if (_handler) _handler->on_data(h, bytes);
      return;
    case mode::failed:
      return;
    case mode::sniffing:
      _handshaking.erase(h);
      if (bytes.front() != kHandshakeRecord) {
        c.m = mode::plain;
        if (!c.plain_out.empty()) {
          _inner->outbuf(h).append(c.plain_out);
          c.plain_out.clear();
        }
        if (_handler) _handler->on_data(h, bytes);
        return;
      }
      c.m = mode::handshaking;
      c.session = std::make_unique<tls_session>(_ctx);
      _handshaking.insert(h);
      [[fallthrough]];
    case mode::handshaking:
      // Go's words for plaintext where a ClientHello belongs (OpenSSL's guess is "http request").
      if (!c.session_started && bytes.front() != kHandshakeRecord) {
        fail(h, c, handshake_error(c) + "tls: first record does not look like a TLS handshake");
        return;
      }
      c.session_started = true;
      session_bytes(h, c, bytes);
      return;
    case mode::established:
      session_bytes(h, c, bytes);
      return;
  }
}

void tls_transport::session_bytes(conn_handle h, conn& c, std::string_view bytes) {
  _plain_in.clear();
  const bool was_established = c.m == mode::established;
  const auto st = c.session->feed(bytes, _plain_in, _inner->outbuf(h));
  if (st == tls_session::state::failed) {
    fail(h, c, (was_established ? std::string("TLS error: ") : handshake_error(c)) + c.session->error());
    return;
  }
  if (!was_established && st != tls_session::state::handshaking) {
    c.m = mode::established;
    _handshaking.erase(h);
    PG_DEBUG("{} - TLS handshake complete ({} {})", c.peer, c.session->protocol(), c.session->cipher());
    if (!c.plain_out.empty()) _dirty.insert(h);  // the INFO of handshake_first, or anything early
  }
  const bool peer_closed = st == tls_session::state::closed;
  // The handler may close `h` (and so erase `c`): nothing below touches `c`.
  if (!_plain_in.empty() && _handler) _handler->on_data(h, _plain_in);
  if (peer_closed) _inner->close(h, true);
}

void tls_transport::fail(conn_handle h, conn& c, const std::string& why) {
  PG_ERROR("{} - {}", c.peer, why);
  c.m = mode::failed;
  c.plain_out.clear();
  _handshaking.erase(h);
  _dirty.erase(h);
  _inner->close(h, true);  // the alert the session produced leaves first
}

std::string& tls_transport::outbuf(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end()) return _inner->outbuf(h);
  conn& c = it->second;
  if (c.raw_out || c.m == mode::plain) return _inner->outbuf(h);
  if (c.m == mode::failed) {
    static thread_local std::string sink;  // a failed connection's bytes go nowhere
    sink.clear();
    return sink;
  }
  _dirty.insert(h);
  return c.plain_out;
}

std::size_t tls_transport::pending_bytes(conn_handle h) const {
  auto it = _conns.find(h);
  const std::size_t mine = it == _conns.end() ? 0 : it->second.plain_out.size();
  return mine + _inner->pending_bytes(h);
}

void tls_transport::encrypt_pending(conn_handle h, conn& c) {
  if (c.m != mode::established || c.plain_out.empty()) return;
  if (!c.session->write(c.plain_out, _inner->outbuf(h))) {
    fail(h, c, "TLS error: " + c.session->error());
    return;
  }
  c.plain_out.clear();
  if (c.plain_out.capacity() > kKeepPlainCapacity) std::string().swap(c.plain_out);
}

void tls_transport::flush_now(conn_handle h) {
  // The dispatcher asks for this on every delivery while a backlog stays above its mark, so
  // encrypting here each time would make a record per message (perf: 70% of a TLS throughput
  // run). Only a full record's worth is encrypted early; the rest waits for the turn's flush.
  if (auto it = _conns.find(h); it != _conns.end() && it->second.plain_out.size() >= kFullRecord)
    encrypt_pending(h, it->second);
  _inner->flush_now(h);
}

std::size_t tls_transport::flush() {
  // A failed encryption closes its connection, which edits _dirty: walk a copy.
  _flushing.assign(_dirty.begin(), _dirty.end());
  _dirty.clear();
  for (conn_handle h : _flushing)
    if (auto it = _conns.find(h); it != _conns.end()) encrypt_pending(h, it->second);
  return _inner->flush();
}

void tls_transport::close(conn_handle h, bool after_flush) {
  if (auto it = _conns.find(h); it != _conns.end() && after_flush && it->second.m == mode::established)
    encrypt_pending(h, it->second);  // on failure this closes `h` itself
  if (auto it = _conns.find(h); it != _conns.end()) {
    conn& c = it->second;
    if (after_flush && c.m == mode::established) c.session->close(_inner->outbuf(h));  // close_notify
    c.plain_out.clear();
    _dirty.erase(h);
  }
  _inner->close(h, after_flush);  // may call on_close at once
}

void tls_transport::on_close(conn_handle h) {
  // nats-server logs a client that left mid-handshake the same way.
  if (auto it = _conns.find(h); it != _conns.end() && it->second.m == mode::handshaking)
    PG_ERROR("{} - TLS handshake error: EOF", it->second.peer);
  _conns.erase(h);
  _dirty.erase(h);
  _handshaking.erase(h);
  if (_handler) _handler->on_close(h);
}

void tls_transport::shutdown() {
  _handler = nullptr;
  _inner->shutdown();
  _conns.clear();
  _dirty.clear();
  _handshaking.clear();
}

std::vector<std::string> tls_transport::tls_peer_names(conn_handle h) const {
  auto it = _conns.find(h);
  if (it == _conns.end() || !it->second.session || it->second.m != mode::established) return {};
  return it->second.session->peer_names();
}

bool tls_transport::tls_info(conn_handle h, std::string& version, std::string& cipher) const {
  auto it = _conns.find(h);
  if (it == _conns.end() || it->second.m != mode::established) return false;
  version = it->second.session->protocol();  // "TLSv1.3" -> "1.3", as Go prints it
  if (version.rfind("TLSv", 0) == 0) version.erase(0, 4);
  cipher = go_cipher_name(it->second.session->cipher());
  return true;
}

void tls_transport::expire_handshakes(base::nanos now) {
  if (_handshaking.empty() || now < _next_deadline) return;
  std::vector<conn_handle> expired;
  base::nanos next = 0;
  for (conn_handle h : _handshaking) {
    auto it = _conns.find(h);
    if (it == _conns.end()) continue;
    if (it->second.deadline <= now) {
      expired.push_back(h);
    } else if (next == 0 || it->second.deadline < next) {
      next = it->second.deadline;
    }
  }
  _next_deadline = next;
  for (conn_handle h : expired)
    if (auto it = _conns.find(h); it != _conns.end()) fail(h, it->second, handshake_error(it->second) + "i/o timeout");
}

std::size_t tls_transport::poll(base::nanos now) {
  const std::size_t n = _inner->poll(now);
  expire_handshakes(now);
  return n;
}

base::nanos tls_transport::idle_limit(base::nanos now) {
  base::nanos limit = _inner->idle_limit(now);
  if (!_handshaking.empty() && _next_deadline > 0) {
    const base::nanos mine = std::max<base::nanos>(_next_deadline - now, base::kMilli);
    if (limit == 0 || mine < limit) limit = mine;
  }
  return limit;
}

}  // namespace net
