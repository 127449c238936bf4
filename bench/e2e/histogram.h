// Log-linear latency histogram in the style of HdrHistogram (own code): constant memory,
// mergeable, values in nanoseconds.
//
// Layout: values below 2^sub_bits (1024 ns) have one bucket each (exact). Above, each power of
// two [2^m, 2^(m+1)) is split into 512 equal buckets, so a bucket is at most 1/512 of its
// values wide. A percentile is reported as the midpoint of its bucket (clamped to the exact
// min/max), hence within 1/1024 (~0.1%) of the exact nearest-rank percentile. Values are
// tracked up to 2^40 ns (~18 min); larger ones are counted in the top bucket (max stays exact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace peregrine::bench {

class log_histogram {
 public:
  static constexpr int sub_bits = 10;
  static constexpr int max_bits = 40;
  static constexpr uint64_t half = uint64_t{1} << (sub_bits - 1);
  static constexpr size_t bucket_count = static_cast<size_t>(max_bits - sub_bits + 2) * half;

  log_histogram() : counts_(bucket_count, 0) {}

  void record(int64_t value_ns, uint64_t n = 1);
  void merge(const log_histogram& other);
  void reset();

  uint64_t count() const { return total_; }
  int64_t min() const { return total_ ? min_ : 0; }
  int64_t max() const { return total_ ? max_ : 0; }
  double mean() const { return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0; }
  // Nearest-rank percentile, q in [0, 1]: the smallest value v with count(<= v) >= ceil(q * n),
  // reported as its bucket's midpoint. 0 when empty.
  int64_t percentile(double q) const;

  // Bucket maths (public for tests and for reading a histogram back from JSON).
  static size_t index_of(uint64_t v);
  static uint64_t lowest_of(size_t index);
  static uint64_t highest_of(size_t index);  // inclusive
  uint64_t count_at(size_t index) const { return counts_[index]; }
  // Adds n to bucket index and widens min/max to that bucket (reconstruction from JSON).
  void add_bucket(size_t index, uint64_t n);
  void set_min_max(int64_t mn, int64_t mx) { min_ = mn, max_ = mx; }

 private:
  std::vector<uint64_t> counts_;  // fixed size: bucket_count
  uint64_t total_ = 0;
  long double sum_ = 0;  // exact for integer sums below 2^64
  int64_t min_ = INT64_MAX;
  int64_t max_ = 0;
};

}  // namespace peregrine::bench
