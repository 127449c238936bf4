// latency_histogram: each value lands in the first bucket whose bound holds it.
#include "src/base/histogram.h"

#include <gtest/gtest.h>

namespace base {
namespace {

TEST(latency_histogram, values_land_in_the_first_bucket_that_holds_them) {
  latency_histogram h;
  h.observe_ns(0);          // <= 1 µs
  h.observe_ns(1000);       // exactly 1 µs
  h.observe_ns(1001);       // just above: <= 2 µs
  h.observe_ns(3000);       // <= 4 µs
  h.observe_ns(4000);       // <= 4 µs
  h.observe_ns(1'000'000);  // 1 ms: <= 1024 µs (bucket 10)
  h.observe_ns(60'000'000'000);  // a minute: past the last bound, +Inf
  EXPECT_EQ(h.bucket(0), 2u);
  EXPECT_EQ(h.bucket(1), 1u);
  EXPECT_EQ(h.bucket(2), 2u);
  EXPECT_EQ(h.bucket(10), 1u);
  EXPECT_EQ(h.bucket(latency_histogram::kBuckets), 1u);
  EXPECT_EQ(h.count(), 7u);
  EXPECT_DOUBLE_EQ(h.sum_seconds(), (0 + 1000 + 1001 + 3000 + 4000 + 1'000'000 + 60'000'000'000.0) / 1e9);
  EXPECT_DOUBLE_EQ(latency_histogram::bound_seconds(10), 1024e-6);
}

TEST(latency_histogram, negative_durations_count_as_zero) {
  latency_histogram h;
  h.observe_ns(-5);
  EXPECT_EQ(h.bucket(0), 1u);
  EXPECT_EQ(h.sum_seconds(), 0.0);
}

}  // namespace
}  // namespace base
