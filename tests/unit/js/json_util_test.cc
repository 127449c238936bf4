#include "src/js/json_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace js {
namespace {

TEST(json_util, time_format_trims_fraction) {
  EXPECT_EQ(base::rfc3339_nano(0), "0001-01-01T00:00:00Z");
  EXPECT_EQ(base::rfc3339_nano(1'700'000'000'000'000'000), "2023-11-14T22:13:20Z");
  EXPECT_EQ(base::rfc3339_nano(1'700'000'000'404'728'159), "2023-11-14T22:13:20.404728159Z");
  EXPECT_EQ(base::rfc3339_nano(1'700'000'000'480'000'000), "2023-11-14T22:13:20.48Z");
}

TEST(json_util, time_parse_round_trips) {
  for (std::int64_t t : {1'700'000'000'404'728'159LL, 1'700'000'000'000'000'000LL, 1'779'444'862'000'000'001LL})
    EXPECT_EQ(parse_time(base::rfc3339_nano(t)), t);
  EXPECT_EQ(parse_time("0001-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_time("2023-11-14T23:13:20+01:00"), 1'700'000'000'000'000'000LL);
  EXPECT_FALSE(parse_time("2023-11-14 22:13:20"));
  EXPECT_FALSE(parse_time("nope"));
  // Outside the int64 nanosecond range: refused rather than overflowing (found by api_decode_fuzz).
  EXPECT_FALSE(parse_time("1050-01-01T02:00:00.5Z"));
  EXPECT_FALSE(parse_time("2300-01-01T00:00:00Z"));
  EXPECT_EQ(parse_time("2262-04-11T23:47:16.854775807Z"), INT64_MAX);
}

TEST(json_util, base64) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("a"), "YQ==");
  EXPECT_EQ(base64_encode("ab"), "YWI=");
  EXPECT_EQ(base64_encode("abc"), "YWJj");
  EXPECT_EQ(base64_encode("NATS/1.0\r\nNats-Msg-Id: a1\r\n\r\n"), "TkFUUy8xLjANCk5hdHMtTXNnLUlkOiBhMQ0KDQo=");
}

TEST(json_util, header_scan_is_case_sensitive) {
  const std::string h = "NATS/1.0\r\nNats-Msg-Id: abc \r\nX: 1\r\nNats-Expected-Last-Sequence: 5\r\n\r\n";
  EXPECT_EQ(find_header(h, "Nats-Msg-Id"), "abc");
  EXPECT_EQ(find_header(h, "Nats-Expected-Last-Sequence"), "5");
  EXPECT_FALSE(find_header(h, "nats-msg-id"));
  EXPECT_FALSE(find_header(h, "Nats-Expected-Last"));
  EXPECT_FALSE(find_header("", "X"));
}

TEST(json_util, parse_u64) {
  EXPECT_EQ(parse_u64("42"), 42u);
  EXPECT_FALSE(parse_u64("-1"));
  EXPECT_FALSE(parse_u64("4x"));
  EXPECT_FALSE(parse_u64(""));
}

TEST(json_util, append_header_builds_delivery_headers) {
  // headers_only on a message without headers: a fresh block with the payload size.
  EXPECT_EQ(append_header("", "Nats-Msg-Size", "2"), "NATS/1.0\r\nNats-Msg-Size: 2\r\n\r\n");
  // Stored headers are kept and extended (2.9.10 bytes: X-Id then Nats-Msg-Size).
  const std::string stored = "NATS/1.0\r\nX-Id: 1\r\n\r\n";
  const std::string ho = append_header(stored, "Nats-Msg-Size", "2");
  EXPECT_EQ(ho, "NATS/1.0\r\nX-Id: 1\r\nNats-Msg-Size: 2\r\n\r\n");
  EXPECT_EQ(find_header(ho, "Nats-Msg-Size"), "2");
  // A pinned delivery adds Nats-Pin-Id on top.
  const std::string pinned = append_header(ho, "Nats-Pin-Id", "abc");
  EXPECT_EQ(pinned, "NATS/1.0\r\nX-Id: 1\r\nNats-Msg-Size: 2\r\nNats-Pin-Id: abc\r\n\r\n");
  EXPECT_EQ(find_header(pinned, "X-Id"), "1");
}

}  // namespace
}  // namespace js

namespace js {
namespace {

TEST(json_util, write_file_atomic_replaces_and_leaves_no_temp) {
  char tmpl[] = "/tmp/pg_atomic_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::string err;
  ASSERT_TRUE(write_file_atomic(dir, "meta.inf", "first", err)) << err;
  ASSERT_TRUE(write_file_atomic(dir, "meta.inf", "second", err)) << err;
  std::ifstream in(dir + "/meta.inf");
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, "second");
  EXPECT_FALSE(std::filesystem::exists(dir + "/meta.inf.tmp"));
  EXPECT_FALSE(write_file_atomic(dir + "/missing", "meta.inf", "x", err));
  EXPECT_NE(err.find("cannot write"), std::string::npos) << err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace js
