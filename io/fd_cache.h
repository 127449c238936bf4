#pragma once
// fd_cache: a bounded set of open file descriptors (block files of many small streams),
// closed least-recently-used first and reopened on demand. A file is known by a key; a
// pin keeps its descriptor open (an in-flight write, a read) and pinned files are never
// closed, so the bound is soft: it is exceeded only while more files than that are pinned.
// Thread-safe (one process-wide instance serves every store).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>

#include "src/base/result.h"

namespace io {

class fd_cache;

// Holds one file open; move-only, releases on destruction.
class fd_pin {
 public:
  fd_pin() = default;
  fd_pin(fd_cache* c, std::uint64_t key, int fd) : _c(c), _key(key), _fd(fd) {}
  fd_pin(fd_pin&& o) noexcept : _c(o._c), _key(o._key), _fd(o._fd) { o._c = nullptr; }
  fd_pin& operator=(fd_pin&& o) noexcept;
  fd_pin(const fd_pin&) = delete;
  fd_pin& operator=(const fd_pin&) = delete;
  ~fd_pin() { reset(); }
  void reset();
  int fd() const { return _c ? _fd : -1; }
  explicit operator bool() const { return _c != nullptr; }

 private:
  fd_cache* _c = nullptr;
  std::uint64_t _key = 0;
  int _fd = -1;
};

struct fd_cache_stats {
  std::uint64_t opens = 0;      // reopens through pin()
  std::uint64_t evictions = 0;  // descriptors closed to stay within the bound
};

class fd_cache {
 public:
  using opener = std::function<base::result<int>()>;
  explicit fd_cache(std::size_t capacity) : _capacity(capacity < 1 ? 1 : capacity) {}
  ~fd_cache();  // closes every descriptor still open
  fd_cache(const fd_cache&) = delete;
  fd_cache& operator=(const fd_cache&) = delete;

  // The process-wide cache: a quarter of RLIMIT_NOFILE's soft limit (read at first use, so
  // after main raised it), between 64 and 1024 descriptors: enough for the streams in use;
  // an idle one pays one open() when it is written or read again.
  static fd_cache& shared();
  static std::size_t default_capacity();

  // Adopts an open descriptor under a new key (unpinned, most recently used).
  std::uint64_t add(int fd);
  // Opens the key's file if it was closed (with reopen), and keeps it open until the pin goes.
  base::result<fd_pin> pin(std::uint64_t key, const opener& reopen);
  // Closes and forgets the key (its file is deleted or its store closed); a pinned one closes
  // when its last pin goes.
  void drop(std::uint64_t key);

  std::size_t open_count() const;
  std::size_t capacity() const;
  void set_capacity(std::size_t n);
  fd_cache_stats stats() const;

 private:
  friend class fd_pin;
  struct entry {
    int fd = -1;  // -1: closed, reopened by the next pin
    unsigned pins = 0;
    bool dropped = false;
    std::list<std::uint64_t>::iterator lru;  // valid when open and unpinned
  };
  void unpin(std::uint64_t key);
  void evict_locked();  // closes unpinned descriptors, oldest first, down to the bound

  mutable std::mutex _mu;
  std::size_t _capacity;
  std::size_t _open = 0;
  std::uint64_t _next_key = 1;
  std::unordered_map<std::uint64_t, entry> _entries;
  std::list<std::uint64_t> _lru;  // open, unpinned; front = most recently used
  fd_cache_stats _stats;
};

}  // namespace io
