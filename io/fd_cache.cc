#include "io/fd_cache.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace io {

fd_pin& fd_pin::operator=(fd_pin&& o) noexcept {
  if (this != &o) {
    reset();
    _c = o._c;
    _key = o._key;
    _fd = o._fd;
    o._c = nullptr;
  }
  return *this;
}

void fd_pin::reset() {
  if (_c) _c->unpin(_key);
  _c = nullptr;
}

fd_cache::~fd_cache() {
  for (auto& [key, e] : _entries)
    if (e.fd >= 0) ::close(e.fd);
}

std::size_t fd_cache::default_capacity() {
  rlimit rl{};
  std::uint64_t soft = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
  return std::size_t(std::clamp<std::uint64_t>(soft / 4, 64, 1024));
}

fd_cache& fd_cache::shared() {
  static fd_cache* c = new fd_cache(default_capacity());  // outlives every store
  return *c;
}

std::uint64_t fd_cache::add(int fd) {
  std::lock_guard lock(_mu);
  std::uint64_t key = _next_key++;
  entry& e = _entries[key];
  e.fd = fd;
  if (fd >= 0) {
    ++_open;
    _lru.push_front(key);
    e.lru = _lru.begin();
    evict_locked();
  }
  return key;
}

base::result<fd_pin> fd_cache::pin(std::uint64_t key, const opener& reopen) {
  std::unique_lock lock(_mu);
  auto it = _entries.find(key);
  if (it == _entries.end() || it->second.dropped) return base::errc::not_found;
  entry* e = &it->second;
  if (e->fd < 0) {
    lock.unlock();  // an open may take a while
    auto fd = reopen();
    lock.lock();
    if (!fd) return fd.err();
    it = _entries.find(key);
    if (it == _entries.end() || it->second.dropped) {
      ::close(*fd);
      return base::errc::not_found;
    }
    e = &it->second;
    if (e->fd >= 0) {
      ::close(*fd);  // another thread reopened it meanwhile
    } else {
      e->fd = *fd;
      ++_open;
      ++_stats.opens;
      e->pins++;
      evict_locked();
      return fd_pin(this, key, e->fd);
    }
  }
  if (e->pins++ == 0) _lru.erase(e->lru);
  return fd_pin(this, key, e->fd);
}

void fd_cache::unpin(std::uint64_t key) {
  std::lock_guard lock(_mu);
  auto it = _entries.find(key);
  if (it == _entries.end()) return;
  entry& e = it->second;
  if (--e.pins > 0) return;
  if (e.dropped) {
    ::close(e.fd);
    --_open;
    _entries.erase(it);
    return;
  }
  _lru.push_front(key);
  e.lru = _lru.begin();
  evict_locked();
}

void fd_cache::drop(std::uint64_t key) {
  std::lock_guard lock(_mu);
  auto it = _entries.find(key);
  if (it == _entries.end()) return;
  entry& e = it->second;
  if (e.pins > 0) {
    e.dropped = true;
    return;
  }
  if (e.fd >= 0) {
    ::close(e.fd);
    --_open;
    _lru.erase(e.lru);
  }
  _entries.erase(it);
}

void fd_cache::evict_locked() {
  while (_open > _capacity && !_lru.empty()) {
    const std::uint64_t key = _lru.back();
    _lru.pop_back();
    entry& e = _entries[key];
    ::close(e.fd);
    e.fd = -1;
    --_open;
    ++_stats.evictions;
  }
}

std::size_t fd_cache::open_count() const {
  std::lock_guard lock(_mu);
  return _open;
}

std::size_t fd_cache::capacity() const {
  std::lock_guard lock(_mu);
  return _capacity;
}

void fd_cache::set_capacity(std::size_t n) {
  std::lock_guard lock(_mu);
  _capacity = n < 1 ? 1 : n;
  evict_locked();
}

fd_cache_stats fd_cache::stats() const {
  std::lock_guard lock(_mu);
  return _stats;
}

}  // namespace io
