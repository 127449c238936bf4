#include "bench/e2e/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace peregrine::bench {

size_t log_histogram::index_of(uint64_t v) {
  if (v < (uint64_t{1} << sub_bits)) return static_cast<size_t>(v);
  const int msb = std::bit_width(v) - 1;
  if (msb >= max_bits) return bucket_count - 1;
  const int shift = msb - sub_bits + 1;
  return static_cast<size_t>(shift) * half + static_cast<size_t>(v >> shift);
}

uint64_t log_histogram::lowest_of(size_t index) {
  if (index < (size_t{1} << sub_bits)) return index;
  const size_t shift = index / half - 1;
  const uint64_t top = index - shift * half;  // in [half, 2 * half)
  return top << shift;
}

uint64_t log_histogram::highest_of(size_t index) {
  if (index < (size_t{1} << sub_bits)) return index;
  const size_t shift = index / half - 1;
  return lowest_of(index) + (uint64_t{1} << shift) - 1;
}

void log_histogram::record(int64_t value_ns, uint64_t n) {
  if (n == 0) return;
  const uint64_t v = value_ns < 0 ? 0 : static_cast<uint64_t>(value_ns);
  counts_[index_of(v)] += n;
  total_ += n;
  sum_ += static_cast<long double>(v) * static_cast<long double>(n);
  min_ = std::min(min_, static_cast<int64_t>(v));
  max_ = std::max(max_, static_cast<int64_t>(v));
}

void log_histogram::add_bucket(size_t index, uint64_t n) {
  if (index >= bucket_count || n == 0) return;
  counts_[index] += n;
  total_ += n;
  const uint64_t mid = lowest_of(index) + (highest_of(index) - lowest_of(index)) / 2;
  sum_ += static_cast<long double>(mid) * static_cast<long double>(n);
  min_ = std::min(min_, static_cast<int64_t>(lowest_of(index)));
  max_ = std::max(max_, static_cast<int64_t>(highest_of(index)));
}

void log_histogram::merge(const log_histogram& other) {
  if (other.total_ == 0) return;
  for (size_t i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void log_histogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  sum_ = 0;
  min_ = INT64_MAX;
  max_ = 0;
}

int64_t log_histogram::percentile(double q) const {
  if (total_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank with a small tolerance so q = 0.999 of 1000 samples is rank 999, not 1000 (0.999 * 1000
  // is 999.0000000000001 in binary floating point).
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(total_) - 1e-9));
  rank = std::clamp<uint64_t>(rank, 1, total_);
  uint64_t seen = 0;
  for (size_t i = 0; i < bucket_count; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint64_t lo = lowest_of(i);
      const uint64_t mid = lo + (highest_of(i) - lo) / 2;
      return std::clamp(static_cast<int64_t>(mid), min_, max_);
    }
  }
  return max_;
}

}  // namespace peregrine::bench
