#include "src/repl/repl_link.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace repl {

repl_link::repl_link(int fd, bool dialed, bool connecting, std::string expected)
    : _fd(fd), _dialed(dialed), _connecting(connecting), _peer(std::move(expected)) {}

repl_link::~repl_link() { close(); }

void repl_link::use_tls(std::unique_ptr<net::tls_stream> session) {
  _tls = std::move(session);
  if (_dialed) {  // our hello line is queued in plaintext; the ClientHello follows it
    std::string hello;
    _tls->start(hello);
    _out.insert(_out.end(), hello.begin(), hello.end());
    _tls_active = true;
  }
}

bool repl_link::take_ciphertext(std::string_view cipher) {
  std::string plain, reply;
  const auto st = _tls->feed(cipher, plain, reply);
  _out.insert(_out.end(), reply.begin(), reply.end());
  _in.insert(_in.end(), plain.begin(), plain.end());
  if (st == net::tls_stream::state::failed || st == net::tls_stream::state::closed) {
    _tls_error = _tls->error().empty() ? "closed" : _tls->error();
    return false;
  }
  return true;
}

bool repl_link::encrypt_pending() {
  if (!_tls || _plain_out.empty() || !_tls->established()) return true;
  std::string cipher;
  if (!_tls->write(_plain_out, cipher)) {
    _tls_error = _tls->error();
    return false;
  }
  _plain_out.clear();
  _out.insert(_out.end(), cipher.begin(), cipher.end());
  return true;
}

bool repl_link::wants_write() const {
  if (_connecting || _out_off < _out.size()) return true;
  return _tls && !_plain_out.empty() && _tls->established();
}

void repl_link::close() {
  if (_fd >= 0) ::close(_fd);
  _fd = -1;
}

bool repl_link::finish_connect() {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(_fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return false;
  _connecting = false;
  return true;
}

bool repl_link::read_some(std::uint64_t now_ms) {
  for (int round = 0; round < 16; ++round) {  // bounded: other links get their turn
    if (_in_off > 0 && _in_off == _in.size()) {
      _in.clear();
      _in_off = 0;
    }
    const std::size_t at = _in.size();
    _in.resize(at + 64 * 1024);
    const ssize_t n = ::recv(_fd, _in.data() + at, 64 * 1024, 0);
    if (n <= 0) {
      _in.resize(at);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
      return false;  // EOF or a reset
    }
    _in.resize(at + std::size_t(n));
    _last_rx_ms = now_ms;
    if (_tls_active) {  // what arrived is ciphertext: the plaintext replaces it in _in
      const std::string cipher(reinterpret_cast<const char*>(_in.data() + at), std::size_t(n));
      _in.resize(at);
      if (!take_ciphertext(cipher)) return false;
    }
    if (std::size_t(n) < 64 * 1024) return true;
  }
  return true;
}

bool repl_link::parse(const std::function<bool(const link_hello&)>& accept_hello,
                      const std::function<void(const link_message&)>& on_message) {
  while (_in_off < _in.size()) {
    const std::span<const std::uint8_t> rest(_in.data() + _in_off, _in.size() - _in_off);
    std::size_t used = 0;
    if (!_up) {
      link_hello h;
      const link_parse r = parse_hello(rest, h, used);
      if (r == link_parse::need_more) return true;
      if (r == link_parse::error) return false;
      if (!_peer.empty() && h.server_name != _peer) return false;  // dialed someone else
      _in_off += used;
      if (_tls && !_tls_active) {  // accepted: the rest is the peer's TLS handshake
        const std::string cipher(reinterpret_cast<const char*>(_in.data() + _in_off), _in.size() - _in_off);
        _in.clear();
        _in_off = 0;
        _tls_active = true;
        if (!cipher.empty() && !take_ciphertext(cipher)) return false;
      }
      if (!accept_hello(h)) return false;
      _peer = h.server_name;
      _up = true;
      continue;
    }
    link_message m;
    const link_parse r = parse_link_message(rest, m, used);
    if (r == link_parse::need_more) break;
    if (r == link_parse::error) return false;
    on_message(m);
    _in_off += used;
  }
  if (_in_off > 0 && _in_off == _in.size()) {
    _in.clear();
    _in_off = 0;
  }
  return true;
}

void repl_link::queue_raw(std::string_view bytes) {
  if (_tls_active) {
    _plain_out.append(bytes);
  } else {
    _out.insert(_out.end(), bytes.begin(), bytes.end());
  }
}

void repl_link::queue(link_kind kind, std::span<const std::uint8_t> payload) {
  if (!_tls_active) return append_link_message(_out, kind, payload);
  std::vector<std::uint8_t> framed;
  append_link_message(framed, kind, payload);
  _plain_out.append(reinterpret_cast<const char*>(framed.data()), framed.size());
}

bool repl_link::write_some() {
  if (!encrypt_pending()) return false;
  if (_connecting || _out_off == _out.size()) return true;
  const ssize_t n = ::send(_fd, _out.data() + _out_off, _out.size() - _out_off, MSG_NOSIGNAL);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  _out_off += std::size_t(n);
  if (_out_off == _out.size()) {
    _out.clear();
    _out_off = 0;
  }
  return true;
}

}  // namespace repl
