#pragma once
// A latency histogram cheap enough for hot paths: fixed power-of-two buckets from 1 µs to
// ~8.4 s (and +Inf), one increment and two adds per observation, no allocation. Written by
// one thread; readers copy it on that thread (monitoring snapshots).
#include <array>
#include <bit>
#include <cstdint>

namespace base {

class latency_histogram {
 public:
  static constexpr int kBuckets = 24;  // bucket i counts values <= 2^i µs; one more for +Inf

  void observe_ns(std::int64_t ns) noexcept {
    const std::uint64_t us = ns <= 0 ? 0 : (std::uint64_t(ns) + 999) / 1000;  // rounded up: le bounds hold
    // The smallest i with us <= 2^i: bit_width(us - 1) for us >= 2.
    const int i = us <= 1 ? 0 : int(std::bit_width(us - 1));
    ++_counts[std::size_t(i < kBuckets ? i : kBuckets)];
    ++_count;
    _sum_ns += std::uint64_t(ns > 0 ? ns : 0);
  }
  // Upper bound of bucket i in seconds.
  static double bound_seconds(int i) noexcept { return double(std::uint64_t(1) << i) / 1e6; }
  std::uint64_t bucket(int i) const noexcept { return _counts[std::size_t(i)]; }  // i <= kBuckets
  std::uint64_t count() const noexcept { return _count; }
  double sum_seconds() const noexcept { return double(_sum_ns) / 1e9; }

 private:
  std::array<std::uint64_t, kBuckets + 1> _counts{};
  std::uint64_t _count = 0;
  std::uint64_t _sum_ns = 0;
};

}  // namespace base
