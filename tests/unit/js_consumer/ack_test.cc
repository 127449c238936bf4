#include <gtest/gtest.h>

#include "src/js/ack.h"

namespace js {
namespace {

TEST(AckSubject, EncodeDecodeV1) {
  auto s = encode_ack_subject("P2", "C", 2, 3, 7, 1795978258505714573, 0);
  EXPECT_EQ(s, "$JS.ACK.P2.C.2.3.7.1795978258505714573.0");
  EXPECT_EQ(ack_subject_len(2, 1, 2, 3, 7, 1795978258505714573, 0), s.size());
  auto a = decode_ack_subject(s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->stream, "P2");
  EXPECT_EQ(a->consumer, "C");
  EXPECT_EQ(a->delivered, 2u);
  EXPECT_EQ(a->stream_seq, 3u);
  EXPECT_EQ(a->consumer_seq, 7u);
  EXPECT_EQ(a->timestamp, 1795978258505714573);
  EXPECT_EQ(a->pending, 0u);
}

TEST(AckSubject, DecodeV2AndRejects) {
  auto a = decode_ack_subject("$JS.ACK._.AbCdEfGh.ORDERS.ship.1.5.9.123.4");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->stream, "ORDERS");
  EXPECT_EQ(a->consumer, "ship");
  EXPECT_EQ(a->stream_seq, 5u);
  EXPECT_EQ(a->consumer_seq, 9u);
  EXPECT_EQ(a->pending, 4u);
  EXPECT_TRUE(decode_ack_subject("$JS.ACK._.AbCdEfGh.ORDERS.ship.1.5.9.123.4.extra.x"));
  EXPECT_FALSE(decode_ack_subject("$JS.ACK.S.C.1.2.3.4"));            // 8 tokens
  EXPECT_FALSE(decode_ack_subject("$JS.ACK.X.S.C.1.2.3.4.5"));        // 10 tokens
  EXPECT_FALSE(decode_ack_subject("$JS.ACK.S.C.1.x.3.4.5"));          // non-numeric
  EXPECT_FALSE(decode_ack_subject("$JS.NAK.S.C.1.2.3.4.5"));
  EXPECT_FALSE(decode_ack_subject("foo"));
}

TEST(AckBody, Kinds) {
  EXPECT_EQ(parse_ack_body("").kind, ack_kind::ack);
  EXPECT_EQ(parse_ack_body("+ACK").kind, ack_kind::ack);
  EXPECT_EQ(parse_ack_body("+OK").kind, ack_kind::ack);
  EXPECT_EQ(parse_ack_body("+ACK ").kind, ack_kind::unknown);  // exact match only
  EXPECT_EQ(parse_ack_body("+WPI").kind, ack_kind::progress);
  EXPECT_EQ(parse_ack_body("bogus").kind, ack_kind::unknown);
  auto n = parse_ack_body("-NAK");
  EXPECT_EQ(n.kind, ack_kind::nak);
  EXPECT_EQ(n.delay, 0);
  EXPECT_EQ(parse_ack_body("-NAK {\"delay\":1000000000}").delay, base::kSecond);
  EXPECT_EQ(parse_ack_body("-NAK {\"delay\": 250000000}").delay, 250 * base::kMilli);
  EXPECT_EQ(parse_ack_body("-NAK 5s").delay, 5 * base::kSecond);
  EXPECT_EQ(parse_ack_body("-NAK 250ms").delay, 250 * base::kMilli);
  auto bad = parse_ack_body("-NAK soon");
  EXPECT_EQ(bad.kind, ack_kind::nak);
  EXPECT_EQ(bad.delay, 0);  // unparseable: plain NAK
  auto t = parse_ack_body("+TERM bad data ");
  EXPECT_EQ(t.kind, ack_kind::term);
  EXPECT_EQ(t.reason, "bad data");
  EXPECT_EQ(parse_ack_body("+TERM").reason, "");
  auto x = parse_ack_body("+NXT {\"batch\":1,\"no_wait\":false}");
  EXPECT_EQ(x.kind, ack_kind::next);
  EXPECT_EQ(x.next_body, "{\"batch\":1,\"no_wait\":false}");
}

TEST(GoDuration, ParseAndFormat) {
  EXPECT_EQ(parse_go_duration("1.5s"), 1500 * base::kMilli);
  EXPECT_EQ(parse_go_duration("1h2m"), 3720 * base::kSecond);
  EXPECT_EQ(parse_go_duration("10us"), 10 * base::kMicro);
  EXPECT_EQ(parse_go_duration("0"), 0);
  EXPECT_FALSE(parse_go_duration("5"));
  EXPECT_FALSE(parse_go_duration("-1s"));
  EXPECT_FALSE(parse_go_duration("3x"));
  EXPECT_EQ(base::go_duration(2 * base::kSecond), "2s");
  EXPECT_EQ(base::go_duration(90 * base::kSecond), "1m30s");
  EXPECT_EQ(base::go_duration(3600 * base::kSecond), "1h0m0s");
  EXPECT_EQ(base::go_duration(500 * base::kMilli), "500ms");
  EXPECT_EQ(base::go_duration(1500 * base::kMilli), "1.5s");
  EXPECT_EQ(base::go_duration(base::kMilli), "1ms");
  EXPECT_EQ(base::go_duration(1500), "1.5\xc2\xb5s");
  EXPECT_EQ(base::go_duration(0), "0s");
}

}  // namespace
}  // namespace js
