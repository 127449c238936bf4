#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/base/crc32c.h"
#include "storage/record.h"
#include "storage/subject_match.h"

namespace storage {
using base::crc32c;
namespace {

TEST(crc32c, known_vectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
  // Incremental equals one-shot.
  std::string s = "hello, peregrine storage";
  EXPECT_EQ(crc32c(crc32c(s.data(), 5), s.data() + 5, s.size() - 5), crc32c(s.data(), s.size()));
}

TEST(record, round_trip) {
  std::vector<std::uint8_t> buf(record_size(3, 4, 5));
  std::size_t n = encode_record(buf.data(), rec_kind::msg, 42, 7, -1, "a.b", "hdrs", "hello");
  EXPECT_EQ(n, buf.size());
  EXPECT_EQ(n % kRecAlign, 0u);
  record_view r;
  ASSERT_EQ(decode_record(buf.data(), buf.size(), &r), decode_result::ok);
  EXPECT_EQ(r.kind, rec_kind::msg);
  EXPECT_EQ(r.seq, 42u);
  EXPECT_EQ(r.ts, 7);
  EXPECT_EQ(r.ttl, -1);
  EXPECT_EQ(r.subject, "a.b");
  EXPECT_EQ(r.headers, "hdrs");
  EXPECT_EQ(r.payload, "hello");
}

TEST(record, detects_every_single_bit_flip) {
  std::vector<std::uint8_t> buf(record_size(5, 0, 20));
  encode_record(buf.data(), rec_kind::msg, 9, 1, 0, "x.y.z", "", "01234567890123456789");
  std::size_t len = kRecHeader + 25;
  for (std::size_t i = 0; i < len; ++i) {
    for (int b = 0; b < 8; ++b) {
      auto copy = buf;
      copy[i] ^= std::uint8_t(1 << b);
      record_view r;
      EXPECT_NE(decode_record(copy.data(), copy.size(), &r), decode_result::ok) << i << ":" << b;
    }
  }
}

TEST(record, end_and_truncation) {
  std::vector<std::uint8_t> zeros(64, 0);
  record_view r;
  EXPECT_EQ(decode_record(zeros.data(), zeros.size(), &r), decode_result::end);
  std::vector<std::uint8_t> buf(record_size(1, 0, 100));
  encode_record(buf.data(), rec_kind::msg, 1, 1, 0, "a", "", std::string(100, 'x'));
  EXPECT_EQ(decode_record(buf.data(), 60, &r), decode_result::truncated);
}

TEST(subject_match, nats_rules) {
  EXPECT_TRUE(subject_matches("a.b", "a.b"));
  EXPECT_FALSE(subject_matches("a.b", "a.c"));
  EXPECT_TRUE(subject_matches("a.*", "a.b"));
  EXPECT_FALSE(subject_matches("a.*", "a.b.c"));
  EXPECT_FALSE(subject_matches("a.*", "a"));
  EXPECT_TRUE(subject_matches("a.>", "a.b.c"));
  EXPECT_FALSE(subject_matches("a.>", "a"));
  EXPECT_TRUE(subject_matches(">", "a"));
  EXPECT_TRUE(subject_matches("*.b.>", "x.b.c.d"));
  EXPECT_FALSE(subject_matches("*.b.>", "x.c.c"));
  EXPECT_TRUE(subject_matches("", "anything"));
  EXPECT_FALSE(subject_matches("a.b.c", "a.b"));
  EXPECT_TRUE(filter_has_wildcard("a.*.c"));
  EXPECT_FALSE(filter_has_wildcard("a*.b"));
  EXPECT_TRUE(subject_matches_any({"x", "a.>"}, "a.q"));
}

}  // namespace
}  // namespace storage
