// log_histogram: bucket layout, accuracy against exact nearest-rank percentiles, merging.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "bench/e2e/histogram.h"

namespace peregrine::bench {
namespace {

// Exact nearest-rank percentile of sorted samples, same rank rule as log_histogram.
int64_t exact_percentile(const std::vector<int64_t>& sorted, double q) {
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()) - 1e-9));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

const double kQuantiles[] = {0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1.0};

TEST(log_histogram, buckets_tile_the_range_without_gaps) {
  for (size_t i = 1; i < log_histogram::bucket_count; ++i)
    ASSERT_EQ(log_histogram::lowest_of(i), log_histogram::highest_of(i - 1) + 1) << "bucket " << i;
  for (uint64_t v : {0ull, 1ull, 1023ull, 1024ull, 1025ull, 4097ull, 123456789ull, (1ull << 40) - 1}) {
    const size_t i = log_histogram::index_of(v);
    EXPECT_LE(log_histogram::lowest_of(i), v);
    EXPECT_GE(log_histogram::highest_of(i), v);
    // Stated resolution: a bucket is at most 1/512 of its lowest value wide (exact below 1024).
    const uint64_t width = log_histogram::highest_of(i) - log_histogram::lowest_of(i) + 1;
    if (v < 1024) EXPECT_EQ(width, 1u);
    else EXPECT_LE(width * 512, log_histogram::lowest_of(i));
  }
  // Constant memory: values past 2^40 ns land in the top bucket, max stays exact.
  EXPECT_EQ(log_histogram::index_of(1ull << 50), log_histogram::bucket_count - 1);
  log_histogram h;
  h.record(int64_t{1} << 50);
  EXPECT_EQ(h.max(), int64_t{1} << 50);
}

TEST(log_histogram, exact_below_1024_ns) {
  log_histogram h;
  std::vector<int64_t> v;
  for (int64_t i = 1000; i >= 1; --i) {
    h.record(i);
    v.push_back(i);
  }
  std::sort(v.begin(), v.end());
  for (double q : kQuantiles) EXPECT_EQ(h.percentile(q), exact_percentile(v, q)) << q;
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), 1000);
  EXPECT_DOUBLE_EQ(h.mean(), 500.5);
}

// Lognormal latencies (median ~50 us, long tail to seconds) plus rare 200 ms stalls: every
// percentile is within 1/1024 of the exact one.
TEST(log_histogram, within_stated_accuracy_of_exact_percentiles) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(std::log(50'000.0), 1.5);
  log_histogram h;
  std::vector<int64_t> v;
  for (int i = 0; i < 1'000'000; ++i) {
    int64_t x = static_cast<int64_t>(dist(rng));
    if (i % 50'000 == 0) x = 200'000'000 + i;
    h.record(x);
    v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  for (double q : kQuantiles) {
    const double exact = static_cast<double>(exact_percentile(v, q));
    const double got = static_cast<double>(h.percentile(q));
    EXPECT_LE(std::abs(got - exact), exact / 1024.0) << "q=" << q << " exact " << exact << " got " << got;
  }
  EXPECT_EQ(h.max(), v.back());
  EXPECT_EQ(h.min(), v.front());
}

TEST(log_histogram, merge_equals_recording_everything_in_one) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> dist(1, 5'000'000'000);
  log_histogram a, b, all;
  for (int i = 0; i < 100'000; ++i) {
    const int64_t x = dist(rng);
    (i % 3 == 0 ? a : b).record(x);
    all.record(x);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (size_t i = 0; i < log_histogram::bucket_count; ++i) ASSERT_EQ(a.count_at(i), all.count_at(i));
  for (double q : kQuantiles) EXPECT_EQ(a.percentile(q), all.percentile(q));
}

TEST(log_histogram, empty_and_reset) {
  log_histogram h;
  EXPECT_EQ(h.percentile(0.99), 0);
  EXPECT_EQ(h.max(), 0);
  h.record(5000);
  h.record(-3);  // a clock step backwards counts as 0, never a crash
  EXPECT_EQ(h.min(), 0);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(0.5), 0);
}

}  // namespace
}  // namespace peregrine::bench
