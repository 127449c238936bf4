#include "src/repl/link_codec.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace repl;

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(link_codec, hello_round_trips_and_waits_for_the_whole_line) {
  const link_hello h{1, "n1", "C1"};
  const auto line = bytes(encode_hello(h));
  EXPECT_EQ(std::string(line.begin(), line.end()), "PGREPL 1 n1 C1\r\n");
  link_hello out;
  std::size_t used = 0;
  for (std::size_t n = 0; n < line.size(); ++n)
    EXPECT_EQ(parse_hello({line.data(), n}, out, used), link_parse::need_more) << n;
  ASSERT_EQ(parse_hello(line, out, used), link_parse::ok);
  EXPECT_EQ(out, h);
  EXPECT_EQ(used, line.size());
}

TEST(link_codec, a_route_or_a_malformed_hello_is_refused_at_once) {
  link_hello out;
  std::size_t used = 0;
  for (const char* bad : {"INFO {}\r\n", "CONNECT {}\r\n", "PGREPL 0 a b\r\n", "PGREPL x a b\r\n",
                          "PGREPL 1 a\r\n", "PGREPL 1 a b c\r\n", "PGREPL 1  b\r\n", "PGREPLY 1 a b\r\n"})
    EXPECT_EQ(parse_hello(bytes(bad), out, used), link_parse::error) << bad;
  EXPECT_EQ(parse_hello(bytes("INF"), out, used), link_parse::error);  // not a prefix of PGREPL
  EXPECT_EQ(parse_hello(bytes("PGREPL 1 " + std::string(kMaxHelloLine, 'a')), out, used), link_parse::error);
}

TEST(link_codec, messages_are_length_prefixed_and_bounded) {
  std::vector<std::uint8_t> buf;
  const std::vector<std::uint8_t> payload{1, 2, 3};
  append_link_message(buf, link_kind::raft, payload);
  append_link_message(buf, link_kind::stepdown, encode_group_id(7));
  link_message m;
  std::size_t used = 0;
  EXPECT_EQ(parse_link_message({buf.data(), 7}, m, used), link_parse::need_more);
  ASSERT_EQ(parse_link_message(buf, m, used), link_parse::ok);
  EXPECT_EQ(m.kind, link_kind::raft);
  EXPECT_EQ(std::vector<std::uint8_t>(m.payload.begin(), m.payload.end()), payload);
  ASSERT_EQ(parse_link_message({buf.data() + used, buf.size() - used}, m, used), link_parse::ok);
  std::uint64_t g = 0;
  ASSERT_TRUE(decode_group_id(m.payload, g));
  EXPECT_EQ(g, 7u);
  const std::vector<std::uint8_t> zero{0, 0, 0, 0}, huge{0xff, 0xff, 0xff, 0xff}, kind{2, 0, 0, 0, 9, 0};
  EXPECT_EQ(parse_link_message(zero, m, used), link_parse::error);
  EXPECT_EQ(parse_link_message(huge, m, used), link_parse::error);
  EXPECT_EQ(parse_link_message(kind, m, used), link_parse::error);
}

TEST(link_codec, views_round_trip_and_must_be_sorted) {
  const membership_view v{true, {"a", "b", "n3"}};
  membership_view out;
  ASSERT_TRUE(decode_view(encode_view(v), out));
  EXPECT_EQ(out, v);
  EXPECT_FALSE(decode_view(encode_view({false, {"b", "a"}}), out));
  EXPECT_FALSE(decode_view(encode_view({false, {"a", "a"}}), out));
  auto trailing = encode_view(v);
  trailing.push_back(0);
  EXPECT_FALSE(decode_view(trailing, out));
  auto cut = encode_view(v);
  cut.pop_back();
  EXPECT_FALSE(decode_view(cut, out));
}

}  // namespace
