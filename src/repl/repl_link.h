#pragma once
// One replication connection's socket and buffers (owned by repl_host's thread): bytes in,
// parsed as link_codec (hello first, then messages), and bytes out, queued during a turn and
// written at its end with one write() per connection, so every group's frames to one peer
// share a syscall and a TCP segment train.
//
// TLS (cluster.tls): the dialer's hello line goes in plaintext (the cluster port's listener
// tells replication from routes by it), then the dialer starts the handshake; everything
// after it, both ways, is TLS records: the acceptor's hello and every message.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "net/tls_stream.h"
#include "src/repl/link_codec.h"

namespace repl {

class repl_link {
 public:
  // `expected` is the peer dialed (empty for an accepted connection).
  repl_link(int fd, bool dialed, bool connecting, std::string expected);
  ~repl_link();
  // TLS on this link: a client session (dialed: started right after the hello line queued
  // before this call) or a server session (accepted: takes over after the peer's hello line).
  void use_tls(std::unique_ptr<net::tls_stream> session);
  // Why the TLS handshake or session failed (empty otherwise).
  const std::string& tls_error() const { return _tls_error; }
  std::uint64_t opened_ms() const { return _opened_ms; }
  void set_opened_ms(std::uint64_t ms) { _opened_ms = ms; }
  repl_link(const repl_link&) = delete;
  repl_link& operator=(const repl_link&) = delete;

  int fd() const { return _fd; }  // -1 once closed
  void close();
  bool dialed() const { return _dialed; }
  bool connecting() const { return _connecting; }
  // A non-blocking connect finished; false when it failed.
  bool finish_connect();
  bool up() const { return _up; }
  const std::string& peer() const { return _peer; }
  std::uint64_t last_rx_ms() const { return _last_rx_ms; }

  // Reads what the socket has (up to a bound per call); false on EOF or an error.
  bool read_some(std::uint64_t now_ms);
  // Parses the hello (once) and then every complete message. False on a protocol error or a
  // hello that `accept_hello` refuses; on_hello runs when the hello arrives.
  bool parse(const std::function<bool(const link_hello&)>& accept_hello,
             const std::function<void(const link_message&)>& on_message);

  void queue_raw(std::string_view bytes);
  void queue(link_kind kind, std::span<const std::uint8_t> payload);
  bool wants_write() const;
  std::size_t queued_bytes() const { return _out.size() - _out_off + _plain_out.size(); }
  // Writes what is queued (one write(); the rest waits for POLLOUT); false on an error.
  bool write_some();

 private:
  int _fd;
  bool _dialed;
  bool _connecting;
  bool _up = false;
  std::string _peer;
  std::vector<std::uint8_t> _in;
  std::size_t _in_off = 0;
  std::vector<std::uint8_t> _out;
  std::size_t _out_off = 0;
  std::uint64_t _last_rx_ms = 0;
  std::uint64_t _opened_ms = 0;
  // TLS: the session, whether bytes from the socket go through it yet (an acceptor's start
  // only after the peer's hello line), and what waits for the handshake to be encrypted.
  bool take_ciphertext(std::string_view cipher);
  bool encrypt_pending();
  std::unique_ptr<net::tls_stream> _tls;
  bool _tls_active = false;
  std::string _plain_out;
  std::string _tls_error;
};

}  // namespace repl
