#include "net/epoll_transport.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "net/socket_util.h"

namespace net {
namespace {
constexpr std::uint64_t kListenTag = ~0ull;
constexpr std::uint64_t kDoorbellTag = ~0ull - 1;
constexpr std::uint64_t kWatchTag = 1ull << 62;  // | fd; connection tags stay far below
}  // namespace

struct epoll_transport::conn {
  int fd = -1;
  std::string out;
  std::size_t sent = 0;  // bytes of `out` already written
  bool want_write = false;
  bool read_paused = false;
  bool closing = false;
  bool close_after_flush = false;
};

epoll_transport::epoll_transport() : _ep(epoll_create1(EPOLL_CLOEXEC)), _rbuf(64 * 1024, '\0') {}

epoll_transport::~epoll_transport() {
  for (auto& [h, c] : _conns) ::close(c->fd);
  if (_listen_fd >= 0) ::close(_listen_fd);
  ::close(_ep);
}

base::status epoll_transport::listen(const std::string& host, int port) {
  auto fd = open_listener(host, port, true);
  if (!fd) return fd.err();
  _listen_fd = *fd;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  epoll_ctl(_ep, EPOLL_CTL_ADD, _listen_fd, &ev);
  return {};
}

void epoll_transport::stop_listening() {
  if (_listen_fd < 0) return;
  epoll_ctl(_ep, EPOLL_CTL_DEL, _listen_fd, nullptr);
  ::close(_listen_fd);
  _listen_fd = -1;
}

void epoll_transport::adopt(int fd) {
  tune_accepted(fd);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  const conn_handle h = _next++;
  auto c = std::make_unique<conn>();
  c->fd = fd;
  _conns.emplace(h, std::move(c));
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = h;
  epoll_ctl(_ep, EPOLL_CTL_ADD, fd, &ev);
  std::string ip;
  int port = 0;
  peer_of(fd, ip, port);
  if (_handler) _handler->on_open(h, ip, port);
}

std::string& epoll_transport::outbuf(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end()) {
    static thread_local std::string sink;
    sink.clear();
    return sink;
  }
  _dirty.insert(h);
  return it->second->out;
}

std::size_t epoll_transport::pending_bytes(conn_handle h) const {
  auto it = _conns.find(h);
  return it == _conns.end() ? 0 : it->second->out.size() - it->second->sent;
}

void epoll_transport::write_some(conn_handle h, conn& c) {
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += std::size_t(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    c.out.clear();  // the peer is gone
    c.sent = 0;
    c.closing = true;
    c.close_after_flush = false;
    break;
  }
  if (c.sent >= c.out.size()) {
    c.out.clear();
    c.sent = 0;
  } else if (c.sent > (1u << 20) && c.sent > c.out.size() / 2) {  // amortised compaction
    c.out.erase(0, c.sent);
    c.sent = 0;
  }
  const bool want = !c.out.empty();
  if (want != c.want_write && !c.closing) {
    c.want_write = want;
    update_interest(h, c);
  }
  if (c.closing && (c.out.empty() || !c.close_after_flush)) finish(h);
}

void epoll_transport::flush_now(conn_handle h) {
  auto it = _conns.find(h);
  if (it != _conns.end() && !it->second->closing) write_some(h, *it->second);
}

void epoll_transport::update_interest(conn_handle h, conn& c) {
  epoll_event ev{};
  ev.events = (c.read_paused ? 0u : (EPOLLIN | EPOLLRDHUP)) | (c.want_write ? EPOLLOUT : 0u);
  ev.data.u64 = h;
  epoll_ctl(_ep, EPOLL_CTL_MOD, c.fd, &ev);
}

void epoll_transport::pause_reading(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end() || it->second->read_paused) return;
  it->second->read_paused = true;
  update_interest(h, *it->second);
}

void epoll_transport::resume_reading(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end() || !it->second->read_paused) return;
  it->second->read_paused = false;
  update_interest(h, *it->second);
}

std::size_t epoll_transport::flush() {
  std::size_t n = 0;
  auto dirty = std::move(_dirty);
  _dirty.clear();
  for (conn_handle h : dirty) {
    auto it = _conns.find(h);
    if (it == _conns.end()) continue;
    write_some(h, *it->second);
    ++n;
  }
  return n;
}

void epoll_transport::close(conn_handle h, bool after_flush) {
  auto it = _conns.find(h);
  if (it == _conns.end() || it->second->closing) return;
  it->second->closing = true;
  it->second->close_after_flush = after_flush;
  if (!after_flush) {  // drop unsent bytes; the close itself happens in flush(), never re-entrantly
    it->second->out.clear();
    it->second->sent = 0;
  }
  _dirty.insert(h);
}

void epoll_transport::shutdown() {
  _handler = nullptr;
  stop_listening();
  for (auto& [h, c] : _conns) ::close(c->fd);
  _conns.clear();
  _dirty.clear();
}

void epoll_transport::finish(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end()) return;
  epoll_ctl(_ep, EPOLL_CTL_DEL, it->second->fd, nullptr);
  ::close(it->second->fd);
  _conns.erase(it);
  _dirty.erase(h);
  if (_handler) _handler->on_close(h);
}

void epoll_transport::read_ready(conn_handle h) {
  for (int i = 0; i < 16; ++i) {  // bounded per turn so one connection cannot hog the shard
    auto it = _conns.find(h);
    if (it == _conns.end() || it->second->closing || it->second->read_paused) return;
    const ssize_t n = ::recv(it->second->fd, _rbuf.data(), _rbuf.size(), 0);
    if (n > 0) {
      if (_handler) _handler->on_data(h, std::string_view(_rbuf.data(), std::size_t(n)));
      if (std::size_t(n) < _rbuf.size()) return;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    finish(h);
    return;
  }
}

std::size_t epoll_transport::process_events(int timeout_ms) {
  epoll_event evs[128];
  const int n = epoll_wait(_ep, evs, 128, timeout_ms);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t tag = evs[i].data.u64;
    if (tag == kDoorbellTag) continue;
    if (tag != kListenTag && (tag & kWatchTag)) {
      std::uint64_t drained;
      [[maybe_unused]] auto r = ::read(int(tag & ~kWatchTag), &drained, sizeof drained);
      continue;
    }
    if (tag == kListenTag) {
      for (;;) {
        const int fd = ::accept4(_listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) break;
        if (_accept_sink) {
          _accept_sink(fd);
        } else {
          adopt(fd);
        }
      }
      continue;
    }
    if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read_ready(tag);
    if (evs[i].events & EPOLLOUT) {
      auto it = _conns.find(tag);
      if (it != _conns.end()) write_some(tag, *it->second);
    }
  }
  return n > 0 ? std::size_t(n) : 0;
}

std::size_t epoll_transport::poll(base::nanos) { return process_events(0); }

void epoll_transport::wait(base::nanos timeout, int doorbell_fd) {
  if (_doorbell_registered != doorbell_fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kDoorbellTag;
    epoll_ctl(_ep, EPOLL_CTL_ADD, doorbell_fd, &ev);
    _doorbell_registered = doorbell_fd;
  }
  process_events(int(timeout / base::kMilli) + 1);
}

bool epoll_transport::watch_fd(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWatchTag | std::uint64_t(fd);
  return epoll_ctl(_ep, EPOLL_CTL_ADD, fd, &ev) == 0;
}

}  // namespace net
