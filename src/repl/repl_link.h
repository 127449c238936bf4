#pragma once
// One replication connection's socket and buffers (owned by repl_host's thread): bytes in,
// parsed as link_codec (hello first, then messages), and bytes out, queued during a turn and
// written at its end with one write() per connection, so every group's frames to one peer
// share a syscall and a TCP segment train.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "src/repl/link_codec.h"

namespace repl {

class repl_link {
 public:
  // `expected` is the peer dialed (empty for an accepted connection).
  repl_link(int fd, bool dialed, bool connecting, std::string expected);
  ~repl_link();
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
  bool wants_write() const { return _connecting || _out_off < _out.size(); }
  std::size_t queued_bytes() const { return _out.size() - _out_off; }
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
};

}  // namespace repl
