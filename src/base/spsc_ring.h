#pragma once
// Bounded single-producer single-consumer ring. Capacity is a power of two; head and tail
// live on separate cache lines and each side caches the other's index to avoid sharing.
#include <atomic>
#include <cstddef>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/base/assert.h"

namespace base {

inline constexpr std::size_t kCacheLine = 64;

template <typename T>
class spsc_ring {
 public:
  explicit spsc_ring(std::size_t capacity_pow2) : _mask(capacity_pow2 - 1), _slots(capacity_pow2) {
    PG_ASSERT(capacity_pow2 >= 2 && (capacity_pow2 & _mask) == 0);
  }
  spsc_ring(const spsc_ring&) = delete;
  spsc_ring& operator=(const spsc_ring&) = delete;

  // Producer side. Returns false when full (the caller decides: retry, drop, or back-pressure).
  // The value is moved from only when it was pushed: on a full ring the caller still owns it
  // (taking it by value lost every message a full ring refused).
  bool try_push(T&& v) { return push_impl(std::move(v)); }
  bool try_push(const T& v) { return push_impl(v); }

  // Consumer side: pops up to `max` items into `fn`, returns how many.
  template <typename Fn>
  std::size_t drain(Fn&& fn, std::size_t max = SIZE_MAX) {
    const std::size_t h = _head.load(std::memory_order_relaxed);
    if (_tail_cache == h) {
      _tail_cache = _tail.load(std::memory_order_acquire);
      if (_tail_cache == h) return 0;
    }
    std::size_t n = _tail_cache - h;
    if (n > max) n = max;
    for (std::size_t i = 0; i < n; ++i) fn(std::move(_slots[(h + i) & _mask]));
    _head.store(h + n, std::memory_order_release);
    return n;
  }

  std::optional<T> try_pop() {
    std::optional<T> out;
    drain([&](T&& v) { out.emplace(std::move(v)); }, 1);
    return out;
  }

  bool empty() const {
    return _head.load(std::memory_order_acquire) == _tail.load(std::memory_order_acquire);
  }
  std::size_t capacity() const { return _mask + 1; }
  // Running counts of items ever pushed / popped. A consumer that saw produced() == n at some
  // moment has taken everything pushed before that moment once consumed() >= n.
  std::size_t produced() const { return _tail.load(std::memory_order_acquire); }
  std::size_t consumed() const { return _head.load(std::memory_order_acquire); }
  // Items waiting, as seen now from any thread (monitoring: ring depth).
  std::size_t size_approx() const {
    const std::size_t h = _head.load(std::memory_order_acquire);
    const std::size_t t = _tail.load(std::memory_order_acquire);
    return t >= h ? t - h : 0;
  }

 private:
  template <typename U>
  bool push_impl(U&& v) {
    const std::size_t t = _tail.load(std::memory_order_relaxed);
    if (t - _head_cache > _mask) {
      _head_cache = _head.load(std::memory_order_acquire);
      if (t - _head_cache > _mask) return false;
    }
    _slots[t & _mask] = std::forward<U>(v);
    _tail.store(t + 1, std::memory_order_release);
    return true;
  }

  const std::size_t _mask;
  std::vector<T> _slots;
  alignas(kCacheLine) std::atomic<std::size_t> _head{0};
  std::size_t _tail_cache = 0;  // consumer's view of tail
  alignas(kCacheLine) std::atomic<std::size_t> _tail{0};
  std::size_t _head_cache = 0;  // producer's view of head
};

}  // namespace base
