// Go text formats of the monitoring JSON, checked against what nats-server 2.9.10 prints.
#include "src/core/monitor_format.h"

#include "src/base/go_text.h"

#include <gtest/gtest.h>

namespace core {
namespace {

constexpr std::int64_t kSec = 1'000'000'000;

TEST(monitor_format, rfc3339_nano_trims_trailing_zeros) {
  // 2026-12-01T13:19:41Z = 1796131181
  EXPECT_EQ(base::rfc3339_nano(1796131181 * kSec + 688290176), "2026-12-01T13:19:41.688290176Z");
  EXPECT_EQ(base::rfc3339_nano(1796131181 * kSec + 135200890), "2026-12-01T13:19:41.13520089Z");
  EXPECT_EQ(base::rfc3339_nano(1796131181 * kSec + 500000000), "2026-12-01T13:19:41.5Z");
  EXPECT_EQ(base::rfc3339_nano(1796131181 * kSec), "2026-12-01T13:19:41Z");
}

TEST(monitor_format, uptime_leaves_out_leading_zero_units) {
  EXPECT_EQ(uptime_text(0), "0s");
  EXPECT_EQ(uptime_text(16 * kSec + 999), "16s");
  EXPECT_EQ(uptime_text(62 * kSec), "1m2s");
  EXPECT_EQ(uptime_text(3600 * kSec), "1h0m0s");
  EXPECT_EQ(uptime_text((86400 + 3 * 3600 + 4 * 60 + 5) * kSec), "1d3h4m5s");
  EXPECT_EQ(uptime_text(366LL * 86400 * kSec), "1y1d0h0m0s");
  EXPECT_EQ(uptime_text(-5), "0s");
}

TEST(monitor_format, rtt_as_nats_server_shows_it) {
  EXPECT_EQ(rtt_text(999), "999ns");
  EXPECT_EQ(rtt_text(441'123), "441\u00b5s");  // truncated to µs
  EXPECT_EQ(rtt_text(1'234'567), "1.234567ms");
  EXPECT_EQ(rtt_text(2'000'000), "2ms");
  EXPECT_EQ(rtt_text(1'500'000'000), "1.5s");
  EXPECT_EQ(rtt_text(123 * kSec + 500'000'000), "2m3.5s");
  EXPECT_EQ(rtt_text(3723 * kSec), "1h2m3s");
  // Only the rtt is truncated: the plain Go duration keeps its fraction of a µs, as Go's
  // Duration.String() does (the monitor's own copy of the formatter printed "1µs").
  EXPECT_EQ(rtt_text(1'500), "1\u00b5s");
  EXPECT_EQ(base::go_duration(1'500), "1.5\u00b5s");
}

}  // namespace
}  // namespace core
