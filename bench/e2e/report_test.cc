// Pure parts of the reports: the interval time series, the histogram JSON round trip that
// `compare` relies on, and the .hgrm percentile spectrum.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "bench/e2e/recorder.h"
#include "bench/e2e/report.h"

namespace peregrine::bench {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(interval_series, closes_one_point_per_interval_by_completion_time) {
  interval_series s;
  s.start(1000 * kMs, 100 * kMs);
  // Interval 0: 10 samples of 1..10 ms; interval 1: nothing; interval 2: one 200 ms stall.
  for (int i = 1; i <= 10; ++i) s.record(1000 * kMs + i * 5 * kMs, i * kMs);
  s.record(1000 * kMs + 250 * kMs, 200 * kMs);
  EXPECT_EQ(s.last().count, 0u);  // interval 2 still open; the last closed one is empty
  const auto pts = s.finish(1000 * kMs + 260 * kMs);
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_DOUBLE_EQ(pts[0].t_s, 0.1);
  EXPECT_EQ(pts[0].count, 10u);
  EXPECT_DOUBLE_EQ(pts[0].rate, 100.0);
  EXPECT_EQ(pts[0].max_ns, 10 * kMs);
  EXPECT_NEAR(static_cast<double>(pts[0].p50_ns), 5.0 * kMs, 5.0 * kMs / 1024);
  EXPECT_EQ(pts[1].count, 0u);
  EXPECT_NEAR(pts[2].t_s, 0.26, 1e-9);  // the partial last interval ends at finish()
  EXPECT_EQ(pts[2].count, 1u);
  EXPECT_EQ(pts[2].max_ns, 200 * kMs);
  EXPECT_NEAR(pts[2].rate, 1 / 0.06, 1e-6);
}

TEST(report, histogram_json_round_trips_for_compare) {
  log_histogram h;
  for (int i = 1; i <= 50'000; ++i) h.record(i * 997);
  h.record(200 * kMs);
  const auto j = nlohmann::json::parse(histogram_json(h).dump());
  log_histogram back;
  ASSERT_TRUE(histogram_from_json(j, back));
  EXPECT_EQ(back.count(), h.count());
  EXPECT_EQ(back.min(), h.min());
  EXPECT_EQ(back.max(), h.max());
  for (double q : {0.5, 0.9, 0.99, 0.999, 0.9999, 1.0}) EXPECT_EQ(back.percentile(q), h.percentile(q)) << q;
  // Malformed documents are refused, never crash.
  for (const char* bad : {R"({})", R"({"sub_bucket_bits":9,"buckets":[]})", R"({"sub_bucket_bits":10,"buckets":[[1]]})",
                          R"({"sub_bucket_bits":10,"buckets":[["x",1]]})", R"([1,2])"})
    EXPECT_FALSE(histogram_from_json(nlohmann::json::parse(bad), back)) << bad;
}

TEST(report, hgrm_is_hdrhistogram_percentile_format) {
  log_histogram h;
  for (int i = 1; i <= 1000; ++i) h.record(i * 1000);  // 1 us .. 1 ms
  const std::string text = hgrm_text(h);
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find("Value"), std::string::npos);
  EXPECT_NE(line.find("1/(1-Percentile)"), std::string::npos);
  double prev_value = -1, prev_p = -1, last_value = 0, last_p = 0;
  unsigned long long last_count = 0;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    double v = 0, p = 0;
    unsigned long long c = 0;
    ASSERT_TRUE(row >> v >> p >> c) << line;
    EXPECT_GE(v, prev_value);
    EXPECT_GT(p, prev_p);
    prev_value = last_value = v;
    prev_p = last_p = p;
    last_count = c;
    ++rows;
  }
  EXPECT_GT(rows, 40);  // 5 ticks per halving down to one sample's share
  EXPECT_DOUBLE_EQ(last_p, 1.0);
  EXPECT_NEAR(last_value, 1.0, 0.001);  // milliseconds
  EXPECT_EQ(last_count, 1000u);
  EXPECT_NE(text.find("#[Max     =       1.0000, Total count    =         1000]"), std::string::npos) << text;
}

}  // namespace
}  // namespace peregrine::bench
