#include "src/core/route_manager.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/base/tcp_listen.h"

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
  for (const auto& a : _accepted) ::close(a.fd);
  if (_listen_fd >= 0) ::close(_listen_fd);
}

std::int64_t route_manager::backoff_ms(int failures) {
  std::int64_t ms = 100;
  for (int i = 0; i < failures && ms < 2000; ++i) ms *= 2;
  return std::min<std::int64_t>(ms, 2000);
}

base::status route_manager::listen() {
  auto l = base::listen_tcp(_opts.cluster_host, _opts.cluster_port, 128, true);
  if (!l) return l.err();
  _listen_fd = l->fd;
  _port = l->port;
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
  ++t.failures;  // reset by peer_took() once the peer answered our first PING
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
  if (it != _targets.end()) it->second.remote_id = remote_id;
}

// Not at the peer's INFO: an acceptor sends that before it reads our CONNECT, so a route
// refused for its credentials would be redialed every 100 ms forever.
void route_manager::peer_took(const std::string& url) {
  std::lock_guard lk(_mu);
  if (auto it = _targets.find(url); it != _targets.end()) it->second.failures = 0;
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

route_manager::first_bytes route_manager::classify(std::string_view peeked) {
  constexpr std::string_view magic = "PGREPL";
  const std::size_t n = std::min(peeked.size(), magic.size());
  if (peeked.substr(0, n) != magic.substr(0, n)) return first_bytes::route;
  return n == magic.size() ? first_bytes::replication : first_bytes::undecided;
}

void route_manager::accept_all() {
  for (;;) {
    const int fd = ::accept4(_listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (_repl_handoff) {
      _accepted.push_back({fd, now_ms()});
    } else {
      _handoff(fd, {}, false);
    }
  }
}

void route_manager::classify_accepted(const std::vector<short>& revents) {
  const std::int64_t now = now_ms();
  std::vector<accepted> waiting;
  for (std::size_t i = 0; i < _accepted.size(); ++i) {
    accepted a = _accepted[i];
    first_bytes kind = first_bytes::undecided;
    if (a.partial || (revents[i] & (POLLIN | POLLERR | POLLHUP))) {
      char buf[8];
      const ssize_t n = ::recv(a.fd, buf, 6, MSG_PEEK);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        ::close(a.fd);  // gone before it said anything
        continue;
      }
      if (n > 0) kind = classify(std::string_view(buf, std::size_t(n)));
      a.partial = n > 0;
    }
    if (kind == first_bytes::undecided && now - a.since_ms >= kClassifyMs) kind = first_bytes::route;
    if (kind == first_bytes::replication) {
      _repl_handoff(a.fd);
    } else if (kind == first_bytes::route) {
      _handoff(a.fd, {}, false);
    } else {
      waiting.push_back(a);
    }
  }
  _accepted = std::move(waiting);
}

void route_manager::run() {
  std::vector<pollfd> fds;
  std::vector<short> revents;
  while (!_stop.load()) {
    if (_listen_fd >= 0) {
      fds.clear();
      fds.push_back({_listen_fd, POLLIN, 0});
      for (const auto& a : _accepted) fds.push_back({a.fd, short(a.partial ? 0 : POLLIN), 0});
      // A socket that has sent only part of "PGREPL" stays readable: it is peeked again in
      // 10 ms rather than polled (which would return at once).
      const bool partial = std::any_of(_accepted.begin(), _accepted.end(), [](const accepted& a) { return a.partial; });
      const int wait = partial ? 10 : 50;
      if (::poll(fds.data(), nfds_t(fds.size()), wait) > 0 && (fds[0].revents & POLLIN)) accept_all();
      revents.clear();
      for (std::size_t i = 1; i < fds.size(); ++i) revents.push_back(fds[i].revents);
      revents.resize(_accepted.size(), 0);  // the ones accept_all() just added
      if (!_accepted.empty()) classify_accepted(revents);
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
