// need_more and the `needed` hint: a multi-op stream fed the way a connection feeds it
// (append, parse while complete, keep the leftover, wait until `needed` bytes are
// buffered) must give the same ops as parsing it whole, at every split point, byte by
// byte and in random chunks. The hint must never ask for more than the next op needs
// (or the connection would stall) and must be a true minimum.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "src/base/rng.h"
#include "tests/unit/proto/parse_test_util.h"

namespace {

using proto::parse_status;
using proto_test::owned_op;
using proto_test::parse;
using proto_test::parse_all;
using proto_test::stream_outcome;

const std::string kAllOps =
    "CONNECT {\"verbose\":false,\"headers\":true}\r\n"
    "PING\r\n"
    "sub foo.* 1\r\n"
    "SUB\tbar  q\t 2\n"
    "PUB foo.a 5\r\nhello\r\n"
    "pub foo.b reply.1 0\r\n\r\n"
    "HPUB foo.c 12 17\r\nNATS/1.0\r\n\r\nworld\r\n"
    "HPUB foo.d r 20 20\r\nNATS/1.0\r\nX-A: 1\r\n\r\n\r\n"
    "PUB bin 4\nab\r\n\r\n"
    "UNSUB 1\r\n"
    "unsub 2 10\r\n"
    "PONG\r\n"
    "+OK\r\n"
    "INFO {}\r\n"
    "ping\n";

struct reference {
  stream_outcome outcome;
  std::vector<std::size_t> ends;  // stream offset where each op (or the error) ends
};

reference make_reference(std::string_view s, const proto::parser_limits& l) {
  reference ref;
  ref.outcome = parse_all(s, &ref.ends, l);
  if (ref.outcome.error) {  // also record where the error's span ends
    std::size_t off = ref.ends.empty() ? 0 : ref.ends.back();
    ref.ends.push_back(off + parse(s.substr(off), l).consumed);
  }
  return ref;
}

// Feeds `s` in chunks of the given sizes like a connection does and checks every hint.
stream_outcome feed(std::string_view s, const std::vector<std::size_t>& chunks,
                    const reference& ref, const proto::parser_limits& l) {
  stream_outcome out;
  std::string inbuf;
  std::size_t pos = 0;   // stream offset of inbuf[0]
  std::size_t fed = 0;   // stream bytes appended so far
  std::size_t need = 0;  // the last hint: do not parse until inbuf holds this much
  for (std::size_t c : chunks) {
    if (out.error) break;
    inbuf.append(s.substr(fed, c));
    fed += std::min(c, s.size() - fed);
    if (inbuf.size() < need) continue;
    need = 0;
    while (!inbuf.empty()) {
      const auto r = parse(inbuf, l);
      const std::size_t k = out.ops.size();
      if (r.status == parse_status::need_more) {
        EXPECT_GT(r.needed, inbuf.size()) << "a hint must ask for progress, at " << pos;
        if (k < ref.ends.size()) {
          EXPECT_LE(pos + r.needed, ref.ends[k]) << "hint over-asks at stream offset " << pos;
        }
        if (pos + r.needed - 1 <= s.size()) {
          const auto shorter = parse(s.substr(pos, r.needed - 1), l);
          EXPECT_EQ(shorter.status, parse_status::need_more)
              << "hint " << r.needed << " is not a minimum at stream offset " << pos;
        }
        need = r.needed;
        break;
      }
      if (r.status == parse_status::error) {
        out.error = r.error;
        inbuf.clear();
        break;
      }
      EXPECT_GT(r.consumed, 0u);
      EXPECT_LE(r.consumed, inbuf.size());
      if (k < ref.ends.size()) {
        EXPECT_EQ(pos + r.consumed, ref.ends[k]);
      }
      out.ops.push_back(owned_op::from(r.op));
      inbuf.erase(0, r.consumed);
      pos += r.consumed;
    }
  }
  out.leftover = inbuf.size();
  return out;
}

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    if (const char* e = std::getenv("PG_TEST_SEED")) return std::uint64_t(std::strtoull(e, nullptr, 0));
    return (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  }();
  return seed;
}

class parser_split : public ::testing::Test {
 protected:
  // Every two-way split point, then byte by byte, then `rounds` random chunkings.
  void check_stream(std::string_view s, const proto::parser_limits& l = {}, int rounds = 200) {
    const reference ref = make_reference(s, l);
    ASSERT_EQ(ref.outcome.leftover, 0u) << "test streams end on an op boundary";
    for (std::size_t k = 0; k <= s.size(); ++k) {
      EXPECT_EQ(feed(s, {k, s.size() - k}, ref, l), ref.outcome) << "split at " << k;
      if (HasFailure()) return;
    }
    EXPECT_EQ(feed(s, std::vector<std::size_t>(s.size(), 1), ref, l), ref.outcome) << "byte by byte";
    if (HasFailure()) return;
    const std::uint64_t seed = test_seed();
    RecordProperty("seed", std::to_string(seed));
    std::printf("parser_split seed=%llu (rerun with PG_TEST_SEED=%llu)\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
    base::rng rng(seed);
    for (int round = 0; round < rounds; ++round) {
      std::vector<std::size_t> chunks;
      const std::uint64_t max_chunk = 1 + rng.below(48);
      for (std::size_t left = s.size(); left > 0;) {
        const std::size_t c = std::min<std::size_t>(left, 1 + rng.below(max_chunk));
        chunks.push_back(c);
        left -= c;
      }
      EXPECT_EQ(feed(s, chunks, ref, l), ref.outcome) << "seed " << seed << " round " << round;
      if (HasFailure()) return;
    }
  }
};

TEST_F(parser_split, reference_stream_has_every_op) {
  const auto out = parse_all(kAllOps);
  EXPECT_FALSE(out.error);
  EXPECT_EQ(out.leftover, 0u);
  ASSERT_EQ(out.ops.size(), 15u);
  EXPECT_EQ(out.ops[6].kind, proto::op_kind::hpub);
  EXPECT_EQ(out.ops[6].payload, "world");
  EXPECT_EQ(out.ops[8].payload, "ab\r\n");
  EXPECT_EQ(out.ops[10].max_msgs, 10);
}

TEST_F(parser_split, every_split_point_of_a_multi_op_stream) { check_stream(kAllOps); }

TEST_F(parser_split, stream_ending_in_a_bad_payload_terminator) {
  check_stream(kAllOps + "PUB x 3\r\nabcXY");
}

TEST_F(parser_split, stream_ending_in_an_unknown_op) { check_stream(kAllOps + "BOGUS 1 2\r\n"); }

TEST_F(parser_split, stream_ending_in_bad_args) { check_stream(kAllOps + "SUB a b c d\r\n"); }

TEST_F(parser_split, stream_ending_in_max_payload) {
  proto::parser_limits l;
  l.max_payload = 64;
  check_stream(kAllOps + "HPUB x 12 65\r\n", l);
}

TEST_F(parser_split, stream_ending_in_an_endless_control_line) {
  proto::parser_limits l;
  l.max_control_line = 64;
  check_stream("PING\r\nSUB a 1\r\n" + std::string(100, 'z'), l, 50);
}

TEST_F(parser_split, large_payload_is_one_hint_away) {
  // After the control line the hint covers the whole payload plus CRLF, so a connection
  // reading 1-byte chunks calls the parser only twice more.
  const std::string payload(1000, 'p');
  const std::string s = "PUB big 1000\r\n" + payload + "\r\n";
  auto r = parse(std::string_view(s).substr(0, 14));
  ASSERT_EQ(r.status, parse_status::need_more);
  EXPECT_EQ(r.needed, s.size());
  r = parse(std::string_view(s).substr(0, s.size() - 1));
  ASSERT_EQ(r.status, parse_status::need_more);
  EXPECT_EQ(r.needed, s.size());
  check_stream(s, {}, 20);
}

TEST_F(parser_split, hint_values_at_every_prefix) {
  const std::string s = "PUB a 3\r\nabc\r\n";  // control line ends at 9, op at 14
  for (std::size_t k = 0; k < s.size(); ++k) {
    const auto r = parse(std::string_view(s).substr(0, k));
    ASSERT_EQ(r.status, parse_status::need_more) << k;
    EXPECT_EQ(r.needed, k < 9 ? k + 1 : s.size()) << k;
  }
}

// Regression (found by this test and the fuzzer, fixed in src/proto/parser.cc): a control
// line of exactly max_control_line bytes terminated by CRLF used to parse when the CRLF
// arrived in one read but be rejected as too long when a read ended right after the CR.
TEST_F(parser_split, control_line_at_limit_split_between_cr_and_lf) {
  proto::parser_limits l;
  l.max_control_line = 16;
  const std::string s = "SUB abcdefghij 1\r\nPING\r\n";  // line is exactly 16 bytes
  ASSERT_EQ(parse(s, l).status, parse_status::op);
  const auto r = parse(std::string_view(s).substr(0, 17), l);  // ends after the CR
  EXPECT_EQ(r.status, parse_status::need_more) << proto_test::error_name(r.error);
  EXPECT_EQ(r.needed, 18u);
  check_stream(s, l, 20);
}

TEST_F(parser_split, a_trailing_cr_does_not_hide_an_over_long_line) {
  proto::parser_limits l;
  l.max_control_line = 16;
  const std::string over = "SUB abcdefghijk 1";  // 17 bytes
  auto r = parse(over + "\r", l);
  EXPECT_EQ(r.status, parse_status::error);
  EXPECT_EQ(r.error, proto::parse_error::control_line_too_long);
  r = parse(std::string(16, 'a') + "\r\r", l);  // only the last CR can be part of CRLF
  EXPECT_EQ(r.status, parse_status::error);
  r = parse(std::string(15, 'a') + "\r\r", l);  // 16 bytes + CR: may still end at the limit
  EXPECT_EQ(r.status, parse_status::need_more);
  check_stream("PING\r\n" + over + "\r\n", l, 20);
}

}  // namespace
