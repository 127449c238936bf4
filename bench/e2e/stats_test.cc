// Percentile maths of pg-bench (nearest rank, exact).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "bench/e2e/stats.h"

namespace peregrine::bench {
namespace {

TEST(pg_bench_stats, nearest_rank_percentiles) {
  std::vector<int64_t> v(1000);
  std::iota(v.begin(), v.end(), 1);  // 1..1000 ns
  std::reverse(v.begin(), v.end());  // summarize must sort
  summary s = summarize(v);
  EXPECT_EQ(s.samples, 1000u);
  EXPECT_DOUBLE_EQ(s.p50_us, 0.5);
  EXPECT_DOUBLE_EQ(s.p90_us, 0.9);
  EXPECT_DOUBLE_EQ(s.p99_us, 0.99);
  EXPECT_DOUBLE_EQ(s.p999_us, 0.999);
  EXPECT_DOUBLE_EQ(s.max_us, 1.0);
  EXPECT_DOUBLE_EQ(s.mean_us, 0.5005);
}

TEST(pg_bench_stats, small_and_empty) {
  std::vector<int64_t> one{7000};
  summary s = summarize(one);
  EXPECT_DOUBLE_EQ(s.p50_us, 7.0);
  EXPECT_DOUBLE_EQ(s.p999_us, 7.0);
  std::vector<int64_t> none;
  EXPECT_EQ(summarize(none).samples, 0u);
}

}  // namespace
}  // namespace peregrine::bench
