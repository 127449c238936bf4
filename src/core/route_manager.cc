#include "src/core/route_manager.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "src/base/clock.h"
#include "src/base/log.h"

namespace core {
namespace {
std::int64_t now_ms() { return base::system_clock::instance().monotonic_ns() / base::kMilli; }
// The URL for the log, its password as nats-server shows it ("user:xxxxx@").
std::string redacted(const std::string& url) {
  const auto scheme = url.find("://");
  const std::size_t from = scheme == std::string::npos ? 0 : scheme + 3;
  const auto at = url.rfind('@');
  if (at == std::string::npos || at < from) return url;
  const auto colon = url.find(':', from);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "xxxxx" + url.substr(at);
}
}  // namespace

route_manager::route_manager(const server_options& o, handoff_fn handoff)
    : _opts(o), _handoff(std::move(handoff)) {
  for (const auto& r : o.routes) _targets[r] = target{};
}

route_manager::~route_manager() {
  stop();
  if (_listen_fd >= 0) ::close(_listen_fd);
}

std::int64_t route_manager::backoff_ms(int failures) {
  std::int64_t ms = 100;
  for (int i = 0; i < failures && ms < 2000; ++i) ms *= 2;
  return std::min<std::int64_t>(ms, 2000);
}

base::status route_manager::listen() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(_opts.cluster_port < 0 ? 0 : _opts.cluster_port);
  const char* host = _opts.cluster_host.empty() ? nullptr : _opts.cluster_host.c_str();
  if (::getaddrinfo(host, port.c_str(), &hints, &res) != 0 || !res)
    return base::error{base::errc::invalid_argument, EINVAL};
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || ::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
    const int e = errno;
    ::freeaddrinfo(res);
    if (fd >= 0) ::close(fd);
    return base::error{base::errc::io_error, e};
  }
  ::freeaddrinfo(res);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  _port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  _listen_fd = fd;
  return {};
}

void route_manager::start() {
  _thread = std::thread([this] { run(); });
  pthread_setname_np(_thread.native_handle(), "pg-routes");
}

void route_manager::stop() {
  _stop.store(true);
  if (_thread.joinable()) _thread.join();
}

void route_manager::want(const std::string& url, bool implicit) {
  std::lock_guard lk(_mu);
  auto [it, added] = _targets.try_emplace(url);
  if (added) {
    it->second.implicit = implicit;
  } else if (!it->second.busy) {
    it->second.failures = 0;  // gossip again: the server is back, try it now
    it->second.due_ms = 0;
  }
}

void route_manager::lost(const std::string& url) {
  std::lock_guard lk(_mu);
  auto it = _targets.find(url);
  if (it == _targets.end()) return;
  target& t = it->second;
  t.busy = false;
  ++t.failures;  // reset by remote_is() once a handshake works
  if (t.implicit && t.failures >= kImplicitAttempts) {
    _targets.erase(it);
    return;
  }
  t.due_ms = now_ms() + backoff_ms(t.failures - 1);
}

void route_manager::drop(const std::string& url) {
  std::lock_guard lk(_mu);
  _targets.erase(url);
}

void route_manager::remote_is(const std::string& url, const std::string& remote_id) {
  std::lock_guard lk(_mu);
  auto it = _targets.find(url);
  if (it != _targets.end()) {
    it->second.remote_id = remote_id;
    it->second.failures = 0;  // a handshake worked: the backoff starts over
  }
}

void route_manager::set_connected(const std::string& remote_id, bool up) {
  std::lock_guard lk(_mu);
  if (up) {
    _connected_ids.insert(remote_id);
  } else {
    _connected_ids.erase(remote_id);
    for (auto& [url, t] : _targets)  // the other side's route to it went away: we may dial it now
      if (t.remote_id == remote_id && !t.busy) t.due_ms = std::min(t.due_ms, now_ms() + backoff_ms(0));
  }
}

int route_manager::dial(const std::string& url) {
  std::string host;
  int port = 0;
  if (!parse_route_url(url, host, port)) return -1;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) return -1;
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int rc = fd < 0 ? -1 : ::connect(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  if (fd < 0) return -1;
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, 1000) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) rc = 0;
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void route_manager::run() {
  while (!_stop.load()) {
    if (_listen_fd >= 0) {
      pollfd p{_listen_fd, POLLIN, 0};
      if (::poll(&p, 1, 50) == 1) {
        for (;;) {
          const int fd = ::accept4(_listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (fd < 0) break;
          const int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          _handoff(fd, {}, false);
        }
      }
    } else {
      ::usleep(50'000);
    }
    std::vector<std::pair<std::string, bool>> due;
    {
      std::lock_guard lk(_mu);
      const std::int64_t now = now_ms();
      for (auto& [url, t] : _targets) {
        if (t.busy || t.due_ms > now) continue;
        if (!t.remote_id.empty() && _connected_ids.count(t.remote_id)) continue;  // already routed
        t.busy = true;
        due.emplace_back(url, t.implicit);
      }
    }
    for (const auto& [url, implicit] : due) {
      PG_DEBUG("Trying to connect to route on {}", redacted(url));
      const int fd = dial(url);
      if (fd >= 0) {
        _handoff(fd, url, implicit);
        continue;
      }
      std::lock_guard lk(_mu);
      auto it = _targets.find(url);
      if (it == _targets.end()) continue;
      target& t = it->second;
      t.busy = false;
      ++t.failures;
      PG_DEBUG("Error trying to connect to route {} (attempt {})", redacted(url), t.failures);
      if (t.implicit && t.failures >= kImplicitAttempts) {
        _targets.erase(it);
        continue;
      }
      t.due_ms = now_ms() + backoff_ms(t.failures - 1);
    }
  }
}

}  // namespace core
