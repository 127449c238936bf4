// natscli's formats and flag parsers, each against values natscli/Go print for the same input.
#include <gtest/gtest.h>

#include "src/cli/cli_format.h"

namespace peregrine::cli {
namespace {

TEST(cli_format, comma_groups_thousands) {
  EXPECT_EQ(comma(0), "0");
  EXPECT_EQ(comma(999), "999");
  EXPECT_EQ(comma(1000), "1,000");
  EXPECT_EQ(comma(100000), "100,000");
  EXPECT_EQ(comma(1234567), "1,234,567");
  EXPECT_EQ(comma(-1000), "-1,000");
}

TEST(cli_format, ibytes_is_go_humanize) {
  EXPECT_EQ(ibytes(0), "0 B");
  EXPECT_EQ(ibytes(9), "9 B");
  EXPECT_EQ(ibytes(404), "404 B");
  EXPECT_EQ(ibytes(1024), "1.0 KiB");
  EXPECT_EQ(ibytes(1536), "1.5 KiB");
  EXPECT_EQ(ibytes(1024 * 1024), "1.0 MiB");
  EXPECT_EQ(ibytes(12ull * 1024 * 1024), "12 MiB");
  EXPECT_EQ(ibytes(1024ull * 1024 * 1024), "1.0 GiB");
}

TEST(cli_format, human_duration_is_natscli) {
  EXPECT_EQ(human_duration(30'000'000'000), "30.00s");
  EXPECT_EQ(human_duration(1'200'000'000), "1.20s");
  EXPECT_EQ(human_duration(120'000'000'000), "2m0s");
  EXPECT_EQ(human_duration(3600'000'000'000), "1h0m0s");
  EXPECT_EQ(human_duration(7 * 86400'000'000'000), "7d0h0m0s");
  EXPECT_EQ(human_duration(367 * 86400'000'000'000), "1y2d0h0m0s");
  EXPECT_EQ(human_duration(3598'000'000'000), "59m58s");
}

TEST(cli_format, go_duration_is_time_duration_string) {
  EXPECT_EQ(go_duration(0), "0s");
  EXPECT_EQ(go_duration(999), "999ns");
  EXPECT_EQ(go_duration(1500), "1.5µs");
  EXPECT_EQ(go_duration(250'000'000), "250ms");
  EXPECT_EQ(go_duration(1'500'000'000), "1.5s");
  EXPECT_EQ(go_duration(3598'000'000'000), "59m58s");
  EXPECT_EQ(go_duration(129731'000'000'000), "36h2m11s");
  EXPECT_EQ(go_duration(-2'000'000'000), "-2s");
}

TEST(cli_format, parse_duration_takes_go_and_natscli_units) {
  EXPECT_EQ(parse_duration("2m"), 120'000'000'000);
  EXPECT_EQ(parse_duration("7d"), 7 * 86400'000'000'000);
  EXPECT_EQ(parse_duration("1h30m"), 5400'000'000'000);
  EXPECT_EQ(parse_duration("1.5s"), 1'500'000'000);
  EXPECT_EQ(parse_duration("500ms"), 500'000'000);
  EXPECT_EQ(parse_duration("10"), 10'000'000'000);  // bare number: seconds
  EXPECT_EQ(parse_duration("1w"), 7 * 86400'000'000'000);
  EXPECT_EQ(parse_duration("0"), 0);
  for (const char* bad : {"", "h", "1x", "1..5s", "s1", "1h 2m"}) EXPECT_FALSE(parse_duration(bad)) << bad;
  EXPECT_FALSE(parse_duration("999999999y"));  // overflows int64 ns
}

TEST(cli_format, parse_bytes_takes_iec_and_plain_sizes) {
  EXPECT_EQ(parse_bytes("1024"), 1024);
  EXPECT_EQ(parse_bytes("-1"), -1);
  EXPECT_EQ(parse_bytes("1K"), 1024);
  EXPECT_EQ(parse_bytes("1KiB"), 1024);
  EXPECT_EQ(parse_bytes("1GiB"), 1073741824);
  EXPECT_EQ(parse_bytes("1gb"), 1073741824);
  EXPECT_EQ(parse_bytes("1.5MB"), 1572864);
  for (const char* bad : {"", "GiB", "1 XB", "-2", "abc"}) EXPECT_FALSE(parse_bytes(bad)) << bad;
}

TEST(cli_format, rfc3339_round_trips_and_short_time_is_utc) {
  const auto t = parse_rfc3339("2026-05-22T10:14:22.5Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(short_time(*t), "2026-05-22 10:14:22");
  EXPECT_EQ(rfc3339(*t), "2026-05-22T10:14:22.5Z");
  EXPECT_EQ(parse_rfc3339("2026-05-22T12:14:22+02:00"), parse_rfc3339("2026-05-22T10:14:22Z"));
  EXPECT_EQ(parse_rfc3339("2026-05-22T10:14:22.123456789Z").value() % 1'000'000'000, 123456789);
  EXPECT_EQ(rfc3339(*parse_rfc3339("2026-05-22T10:14:22Z")), "2026-05-22T10:14:22Z");
  for (const char* bad : {"", "2026-05-22", "2026-05-22T10:14:22", "yesterday"}) EXPECT_FALSE(parse_rfc3339(bad)) << bad;
}

TEST(cli_format, base64_decodes_standard_alphabet) {
  EXPECT_EQ(base64_decode("dGVzdA=="), "test");
  EXPECT_EQ(base64_decode("dGVzdA"), "test");
  EXPECT_EQ(base64_decode("TkFUUy8xLjANCg=="), "NATS/1.0\r\n");
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_FALSE(base64_decode("dG!z"));
}

TEST(cli_format, render_lines_right_aligns_labels_to_the_widest) {
  EXPECT_EQ(render_lines({{"A", "1"}, {"", "Title:"}, {"Longer", "2"}}), "       A: 1\n\nTitle:\n\n  Longer: 2\n");
}

TEST(cli_format, box_table_columns_line_up) {
  const std::string t = box_table("Streams", {"Name", "Messages"}, {{"ORDERS", "3"}, {"FULFILLMENT", "10"}});
  EXPECT_NE(t.find("│ ORDERS      │ 3        │"), std::string::npos) << t;
  EXPECT_NE(t.find("│ FULFILLMENT │ 10       │"), std::string::npos) << t;
  EXPECT_NE(t.find("Streams"), std::string::npos);
  // Every line has the same width in characters.
  size_t width = 0;
  for (size_t p = 0, e; p < t.size(); p = e + 1) {
    e = t.find('\n', p);
    size_t chars = 0;
    for (size_t i = p; i < e; ++i) chars += (t[i] & 0xC0) != 0x80;
    if (width == 0) width = chars;
    EXPECT_EQ(chars, width) << t.substr(p, e - p);
  }
  // A title wider than the columns widens the last column instead of breaking the box.
  const std::string wide = box_table("A very long table title here", {"N"}, {{"x"}});
  EXPECT_NE(wide.find("│ x                            │"), std::string::npos) << wide;
}

}  // namespace
}  // namespace peregrine::cli
