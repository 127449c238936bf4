// Raw-socket throughput: publishers write pre-encoded PUB batches and the subscriber only
// counts bytes, so the figure measures the server rather than a client library's parsing.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/e2e/modes.h"
#include "bench/e2e/raw_socket.h"

namespace peregrine::bench {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* kConnect = "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n";

}  // namespace

result run_raw_throughput(const config& cfg, progress& prog) {
  result r;
  std::string host;
  int port = 0;
  if (!parse_url(cfg.url, host, port)) {
    r.error = "cannot parse url " + cfg.url;
    return r;
  }
  const std::string subject = cfg.subject + ".raw";
  const int sub = dial(host, port);
  if (sub < 0) {
    r.error = "cannot connect";
    return r;
  }
  const std::string hello = std::string(kConnect) + "SUB " + subject + " 1\r\nPING\r\n";
  if (!write_all(sub, hello.data(), hello.size()) || !read_until(sub, "PONG\r\n")) {
    r.error = "subscriber handshake failed";
    ::close(sub);
    return r;
  }
  // Every delivery is exactly this many bytes, so the count is bytes / per_msg.
  const std::string msg_head = "MSG " + subject + " 1 " + std::to_string(cfg.size) + "\r\n";
  const uint64_t per_msg = msg_head.size() + cfg.size + 2;
  const uint64_t total = cfg.count;
  prog.total = total;

  std::vector<std::thread> pubs;
  std::atomic<bool> pub_failed{false};
  const int npub = std::max(1, cfg.publishers);
  for (int i = 0; i < npub; ++i) {
    const uint64_t mine = total / npub + (static_cast<uint64_t>(i) < total % npub ? 1 : 0);
    pubs.emplace_back([&, mine] {
      const int fd = dial(host, port);
      if (fd < 0 || !write_all(fd, kConnect, std::strlen(kConnect))) {
        pub_failed = true;
        return;
      }
      const std::string one = "PUB " + subject + " " + std::to_string(cfg.size) + "\r\n" +
                              std::string(cfg.size, 'x') + "\r\n";
      const uint64_t per_batch = std::max<uint64_t>(1, (64 * 1024) / one.size());
      std::string batch;
      for (uint64_t k = 0; k < per_batch; ++k) batch += one;
      uint64_t left = mine;
      while (left > 0) {
        const uint64_t n = std::min(left, per_batch);
        if (!write_all(fd, batch.data(), n * one.size())) {
          pub_failed = true;
          break;
        }
        left -= n;
      }
      const std::string ping = "PING\r\n";
      write_all(fd, ping.data(), ping.size());
      read_until(fd, "PONG\r\n");
      ::close(fd);
    });
  }

  std::vector<char> buf(1 << 20);
  uint64_t bytes = 0;
  const uint64_t want = total * per_msg;
  timeval tv{1, 0};
  setsockopt(sub, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  clock_type::time_point first{};
  const auto deadline = clock_type::now() + std::chrono::duration<double>(cfg.duration_s);
  while (bytes < want && clock_type::now() < deadline) {
    const ssize_t n = ::recv(sub, buf.data(), buf.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (pub_failed) break;
      continue;
    }
    if (n <= 0) break;
    if (bytes == 0) first = clock_type::now();
    bytes += static_cast<uint64_t>(n);
    prog.done = bytes / per_msg;
  }
  const auto end = clock_type::now();
  for (auto& t : pubs) t.join();
  ::close(sub);
  r.sent = total;
  r.received = bytes / per_msg;
  r.elapsed_s = std::chrono::duration<double>(end - first).count();
  if (r.received < total) r.error = pub_failed ? "a publisher failed" : "subscriber did not get every message";
  return r;
}

}  // namespace peregrine::bench
