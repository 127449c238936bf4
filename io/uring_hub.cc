#include "io/uring_hub.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "io/sync_backend.h"

namespace io {

base::result<std::shared_ptr<uring_hub>> uring_hub::for_this_thread() {
  thread_local std::weak_ptr<uring_hub> mine;
  if (auto h = mine.lock()) return h;
  auto h = std::make_shared<uring_hub>();
  if (auto st = h->init(kEntries); !st) return st.err();
  mine = h;
  return h;
}

uring_hub::~uring_hub() {
  if (_own_efd) ::close(_efd);
}

base::status uring_hub::init(unsigned entries) { return _ring.init(entries); }

std::uint32_t uring_hub::attach() {
  std::lock_guard lock(_mu);
  std::uint32_t id = _next_client++;
  _clients.emplace(id, client_state{});
  return id;
}

void uring_hub::detach(std::uint32_t client) {
  completion c;
  while (reap(client, &c, 1, true) > 0) {
  }
  std::lock_guard lock(_mu);
  _clients.erase(client);
}

std::size_t uring_hub::clients() const {
  std::lock_guard lock(_mu);
  return _clients.size();
}

std::uint64_t uring_hub::tag(std::uint32_t client, std::uint64_t token) {
  std::uint64_t t = _next_tag++;
  _routes.emplace(t, route{client, token});
  _clients[client].inflight++;
  _ring.add_inflight(1);
  return t;
}

base::status uring_hub::submit() {
  std::lock_guard lock(_mu);
  return _ring.submit();
}

bool uring_hub::dispatch(io_uring_cqe* cqe, std::uint32_t client, completion* out) {
  const std::uint64_t t = cqe->user_data;
  const std::int32_t res = cqe->res;
  _ring.seen(cqe);
  _ring.add_inflight(-1);
  auto r = _routes.find(t);
  if (r == _routes.end()) return false;
  const route rt = r->second;
  _routes.erase(r);
  auto c = _clients.find(rt.client);
  if (c == _clients.end()) return false;  // its owner is gone (detach waits, so not expected)
  c->second.inflight--;
  if (rt.client == client) {
    *out = {rt.token, res};
    return true;
  }
  c->second.parked.push_back({rt.token, res});
  return false;
}

int uring_hub::reap(std::uint32_t client, completion* out, int max, bool wait) {
  // Blocking holds the lock: the completion comes from the disk, never from another client.
  std::lock_guard lock(_mu);
  auto it = _clients.find(client);
  if (it == _clients.end()) return 0;
  client_state& me = it->second;
  int n = 0;
  while (n < max && !me.parked.empty()) {
    out[n++] = me.parked.front();
    me.parked.pop_front();
  }
  while (n < max) {
    const bool block = wait && n == 0;
    if (block && me.inflight == 0) break;  // nothing of ours to wait for
    io_uring_cqe* cqe = _ring.next_cqe(block);
    if (!cqe) break;
    if (dispatch(cqe, client, &out[n])) ++n;
  }
  return n;
}

std::int32_t uring_hub::wait_for(std::uint32_t client, std::uint64_t token) {
  std::lock_guard lock(_mu);
  if (auto st = _ring.submit(); !st) return -st.err().sys_errno;
  client_state& me = _clients[client];
  // Another client's submit or reap may have taken it already (the SQ is shared).
  for (auto it = me.parked.begin(); it != me.parked.end(); ++it) {
    if (it->token != token) continue;
    std::int32_t res = it->res;
    me.parked.erase(it);
    return res;
  }
  while (true) {
    io_uring_cqe* cqe = _ring.next_cqe(true);
    if (!cqe) return -EIO;
    completion c;
    if (!dispatch(cqe, client, &c)) continue;
    if (c.token == token) return c.res;
    me.parked.push_back(c);
  }
}

bool uring_hub::signal_completions_to(int efd) {
  std::lock_guard lock(_mu);
  if (efd < 0) return false;
  if (_efd == efd) return true;
  if (_efd >= 0) return false;  // a ring has one eventfd, and it is another one
  if (!_ring.register_eventfd(efd)) return false;
  _efd = efd;
  return true;
}

int uring_hub::completion_fd() {
  std::lock_guard lock(_mu);
  if (_efd >= 0) return _own_efd ? _efd : -1;
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return -1;
  if (!_ring.register_eventfd(fd)) {
    ::close(fd);
    return -1;
  }
  _efd = fd;
  _own_efd = true;
  return _efd;
}

}  // namespace io
