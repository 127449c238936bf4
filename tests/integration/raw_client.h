// Raw TCP client for byte-exact protocol tests: sends arbitrary bytes and reads exactly what the
// server writes. Every read is bounded by a timeout.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace peregrine::test {

using namespace std::chrono_literals;

// Mainstream-client style CONNECT (explicit verbose/pedantic false, headers + no_responders).
inline constexpr std::string_view default_connect =
    "CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1,\"headers\":true,"
    "\"no_responders\":true,\"name\":\"raw\",\"lang\":\"raw\",\"version\":\"0\"}\r\n";

class raw_client {
 public:
  raw_client() = default;
  ~raw_client();
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  // rcvbuf > 0 shrinks SO_RCVBUF before connecting (slow-consumer tests).
  bool connect(int port, int rcvbuf = 0);
  // Reads the INFO line; returns it (with CRLF) or empty on timeout/close.
  std::string read_info(std::chrono::milliseconds timeout = 2s);
  // connect + read INFO + optional CONNECT/PING/PONG handshake.
  bool open(int port, std::string_view connect_line = default_connect);

  bool send(std::string_view bytes);
  // Next line including its terminator. Async INFO lines are skipped. When answer_pings, server
  // PINGs are answered with PONG and skipped (servers send a first PING ~1-2 s after connect).
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = 2s,
                                       bool answer_pings = true);
  // Exactly n bytes (e.g. a payload after a MSG line).
  std::optional<std::string> read_bytes(size_t n, std::chrono::milliseconds timeout = 2s);
  // Reads and collects everything until the peer closes; nullopt if still open at timeout.
  std::optional<std::string> read_until_closed(std::chrono::milliseconds timeout = 5s);
  // Round trip PING -> PONG, skipping nothing else: true only if the very next line is PONG.
  bool ping_pong(std::chrono::milliseconds timeout = 2s);
  // True if nothing arrives and the connection stays open for `quiet`.
  bool quiet_for(std::chrono::milliseconds quiet);

  bool closed() const { return closed_; }
  int fd() const { return fd_; }

 private:
  std::optional<std::string> read_raw_line(std::chrono::milliseconds timeout);
  // Pulls more bytes into buf_; false on timeout or close.
  bool fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  bool closed_ = false;
  std::string buf_;
};

}  // namespace peregrine::test
