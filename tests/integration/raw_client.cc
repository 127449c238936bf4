#include "tests/integration/raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace peregrine::test {

using clock_type = std::chrono::steady_clock;

raw_client::~raw_client() {
  if (fd_ >= 0) ::close(fd_);
}

bool raw_client::connect(int port, int rcvbuf) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return true;
  ::close(fd_);  // a caller may retry
  fd_ = -1;
  return false;
}

std::string raw_client::read_info(std::chrono::milliseconds timeout) {
  auto line = read_raw_line(timeout);
  return line ? *line : std::string{};
}

bool raw_client::open(int port, std::string_view connect_line) {
  if (!connect(port)) return false;
  if (read_info().rfind("INFO {", 0) != 0) return false;
  if (connect_line.empty()) return true;
  return send(connect_line) && ping_pong();
}

bool raw_client::send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool raw_client::fill(clock_type::time_point deadline) {
  if (closed_) return false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    if (left.count() < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // EOF or reset: both mean the server closed us
      closed_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
}

std::optional<std::string> raw_client::read_raw_line(std::chrono::milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  size_t nl = buf_.find('\n');
  while (nl == std::string::npos) {
    if (!fill(deadline)) return std::nullopt;
    nl = buf_.find('\n');
  }
  std::string line = buf_.substr(0, nl + 1);
  buf_.erase(0, nl + 1);
  return line;
}

std::optional<std::string> raw_client::read_line(std::chrono::milliseconds timeout,
                                                 bool answer_pings) {
  const auto deadline = clock_type::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    auto line = read_raw_line(std::max(left, std::chrono::milliseconds(0)));
    if (!line) return line;
    // Servers may send async INFO at any time (2.12+ does after the first PONG): clients ignore it.
    if (line->rfind("INFO ", 0) == 0) continue;
    if (answer_pings && *line == "PING\r\n") {
      send("PONG\r\n");
      continue;
    }
    return line;
  }
}

std::optional<std::string> raw_client::read_bytes(size_t n, std::chrono::milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  while (buf_.size() < n)
    if (!fill(deadline)) return std::nullopt;
  std::string out = buf_.substr(0, n);
  buf_.erase(0, n);
  return out;
}

std::optional<std::string> raw_client::read_until_closed(std::chrono::milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  while (!closed_)
    if (!fill(deadline) && !closed_) return std::nullopt;
  std::string out;
  out.swap(buf_);
  return out;
}

bool raw_client::ping_pong(std::chrono::milliseconds timeout) {
  if (!send("PING\r\n")) return false;
  auto line = read_line(timeout);
  return line && *line == "PONG\r\n";
}

bool raw_client::quiet_for(std::chrono::milliseconds quiet) {
  // read_line answers and skips server PINGs, so only real traffic breaks the silence.
  auto line = read_line(quiet, true);
  return !line && !closed_;
}

}  // namespace peregrine::test
