// Nats-TTL header values as nats-server's parseMessageTTL reads them (streams.md §9.2).
#include <gtest/gtest.h>

#include "src/js/msg_ttl.h"
#include "src/js/stream.h"
#include "storage/store.h"

namespace js {
namespace {

constexpr std::int64_t kS = 1'000'000'000;

// Subject delete markers (streams.md §9.4): the header block nats-server writes (whole seconds
// as a Go duration) and what counts as a marker when it expires in turn.
TEST(delete_marker, headers_and_recognition) {
  EXPECT_EQ(delete_marker_headers(kS),
            "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 1s\r\nNats-Rollup: sub\r\n\r\n");
  EXPECT_EQ(delete_marker_headers(15 * 60 * kS + kS / 2),
            "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 15m0s\r\nNats-Rollup: sub\r\n\r\n");
  EXPECT_TRUE(is_delete_marker(delete_marker_headers(kS)));
  EXPECT_TRUE(is_delete_marker("NATS/1.0\r\nKV-Operation: PURGE\r\n\r\n"));
  EXPECT_FALSE(is_delete_marker("NATS/1.0\r\nKV-Operation: DEL\r\n\r\n"));
  EXPECT_FALSE(is_delete_marker("NATS/1.0\r\nNats-TTL: 1s\r\n\r\n"));
  EXPECT_FALSE(is_delete_marker(""));
}

// streams.md §9.3: with markers on, a shorter Nats-TTL is raised to the marker TTL and the
// header rewritten to whole seconds at the block's end; not with max_msgs_per_subject 1.
TEST(delete_marker, shorter_ttl_is_raised_to_the_marker_ttl) {
  stream_config c;
  c.subject_delete_marker_ttl = 60 * kS;
  std::int64_t ttl = 5 * kS;
  auto r = raise_ttl_to_marker_ttl(c, ttl, "NATS/1.0\r\nNats-TTL: 5s\r\nA: b\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "NATS/1.0\r\nA: b\r\nNats-TTL: 60\r\n\r\n");
  EXPECT_EQ(ttl, 60 * kS);
  ttl = 60 * kS;  // not shorter
  EXPECT_FALSE(raise_ttl_to_marker_ttl(c, ttl, "NATS/1.0\r\nNats-TTL: 1m\r\n\r\n"));
  ttl = storage::ttl_never;
  EXPECT_FALSE(raise_ttl_to_marker_ttl(c, ttl, "NATS/1.0\r\nNats-TTL: never\r\n\r\n"));
  EXPECT_EQ(ttl, storage::ttl_never);
  c.max_msgs_per_subject = 1;
  ttl = 5 * kS;
  EXPECT_FALSE(raise_ttl_to_marker_ttl(c, ttl, "NATS/1.0\r\nNats-TTL: 5s\r\n\r\n"));
  EXPECT_EQ(ttl, 5 * kS);
  c.max_msgs_per_subject = -1;
  c.subject_delete_marker_ttl = 0;
  EXPECT_FALSE(raise_ttl_to_marker_ttl(c, ttl, "NATS/1.0\r\nNats-TTL: 5s\r\n\r\n"));
}

TEST(msg_ttl, absent_or_empty_is_no_ttl) { EXPECT_EQ(parse_msg_ttl(""), 0); }

TEST(msg_ttl, never_in_any_case) {
  EXPECT_EQ(parse_msg_ttl("never"), storage::ttl_never);
  EXPECT_EQ(parse_msg_ttl("NEVER"), storage::ttl_never);
  EXPECT_EQ(parse_msg_ttl("Never"), storage::ttl_never);
}

TEST(msg_ttl, go_durations_truncate_to_whole_seconds) {
  EXPECT_EQ(parse_msg_ttl("30s"), 30 * kS);
  EXPECT_EQ(parse_msg_ttl("1m30s"), 90 * kS);
  EXPECT_EQ(parse_msg_ttl("1h"), 3600 * kS);
  EXPECT_EQ(parse_msg_ttl("1.5s"), 1 * kS);
  EXPECT_EQ(parse_msg_ttl("1500ms"), 1 * kS);
  EXPECT_EQ(parse_msg_ttl("2m0.9s"), 120 * kS);
}

TEST(msg_ttl, plain_integers_are_seconds) {
  EXPECT_EQ(parse_msg_ttl("60"), 60 * kS);
  EXPECT_EQ(parse_msg_ttl("1"), 1 * kS);
}

TEST(msg_ttl, below_one_second_zero_negative_and_garbage_are_invalid) {
  for (const char* v : {"0", "0s", "500ms", "999ms", "-5", "-1s", "abc", "5x", "1.s5", "s", "1 s", "+", "--1s"})
    EXPECT_EQ(parse_msg_ttl(v), std::nullopt) << v;
}

}  // namespace
}  // namespace js
