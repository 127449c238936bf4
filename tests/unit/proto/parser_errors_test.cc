// Every parse_error kind, with the byte count the error covers.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/proto/parse_test_util.h"

namespace {

using proto::parse_error;
using proto::parse_status;
using proto_test::error_name;
using proto_test::parse;

void expect_error(std::string_view s, parse_error e, std::size_t consumed,
                  const proto::parser_limits& l = {}) {
  const auto r = parse(s, l);
  EXPECT_EQ(r.status, parse_status::error) << "input: " << s;
  EXPECT_EQ(r.error, e) << "input: " << s << " got " << error_name(r.error);
  EXPECT_EQ(r.consumed, consumed) << "input: " << s;
}

// The control line alone decides the error: consumed covers the line.
void expect_line_error(std::string_view line, parse_error e) {
  expect_error(line, e, line.size());
}

TEST(parser_errors, unknown_op) {
  expect_line_error("FOO bar\r\n", parse_error::unknown_op);
  expect_line_error("MSG foo 1 5\r\n", parse_error::unknown_op);  // server->client only
  expect_line_error("-ERR 'x'\r\n", parse_error::unknown_op);
  expect_line_error("PUBX foo 1\r\n", parse_error::unknown_op);
  expect_line_error("PU foo 1\r\n", parse_error::unknown_op);
  expect_line_error("PINGPONG\r\n", parse_error::unknown_op);
  expect_line_error(" PING\r\n", parse_error::unknown_op);  // nothing may precede the name
  expect_line_error("CONNECT{}\r\n", parse_error::unknown_op);
  expect_line_error("\x01\xff\r\n", parse_error::unknown_op);
  // Only the first line is judged: the rest of the buffer stays unconsumed.
  expect_error("FOO\r\nPING\r\n", parse_error::unknown_op, 5);
}

TEST(parser_errors, ping_and_pong_take_no_arguments) {
  expect_line_error("PING x\r\n", parse_error::unknown_op);
  expect_line_error("PONG 1\n", parse_error::unknown_op);
}

TEST(parser_errors, empty_line) {
  expect_line_error("\r\n", parse_error::unknown_op);
  expect_line_error("\n", parse_error::unknown_op);
  expect_error("\r\nPING\r\n", parse_error::unknown_op, 2);
  expect_line_error(" \t \r\n", parse_error::unknown_op);
}

TEST(parser_errors, control_line_too_long_with_newline) {
  proto::parser_limits l;
  l.max_control_line = 16;
  const std::string line = "SUB abcdefghijk 1";  // 17 bytes
  expect_error(line + "\r\n", parse_error::control_line_too_long, line.size() + 2, l);
  expect_error(line + "\n", parse_error::control_line_too_long, line.size() + 1, l);
  // The limit applies to a long PUB line even when its payload has not arrived.
  expect_error("PUB aaaaaaaaaaaaaaaaaaaaaaaa 5\r\nhel", parse_error::control_line_too_long, 32, l);
}

TEST(parser_errors, control_line_too_long_without_newline) {
  proto::parser_limits l;
  l.max_control_line = 16;
  const std::string at_limit(16, 'a');
  auto r = parse(at_limit, l);
  EXPECT_EQ(r.status, parse_status::need_more);  // could still end at the limit
  EXPECT_EQ(r.needed, 17u);
  expect_error(at_limit + "b", parse_error::control_line_too_long, 17, l);
  expect_error(std::string(1000, 'P'), parse_error::control_line_too_long, 1000, l);
  // Default limit: 4096.
  expect_error(std::string(4097, 'x'), parse_error::control_line_too_long, 4097);
  EXPECT_EQ(parse(std::string(4096, 'x')).status, parse_status::need_more);
}

TEST(parser_errors, max_payload_on_pub) {
  proto::parser_limits l;
  l.max_payload = 10;
  expect_error("PUB foo 11\r\n", parse_error::max_payload, 12, l);
  expect_error("PUB foo reply 11\r\n", parse_error::max_payload, 18, l);
  expect_error("PUB foo 999999999999999999\r\n", parse_error::max_payload, 28, l);
  // Decided from the control line: the payload need not be buffered.
  expect_error("PUB foo 11\r\n0123456789A\r\n", parse_error::max_payload, 12, l);
  EXPECT_EQ(parse("PUB foo 10\r\n", l).status, parse_status::need_more);
  // Default limit: 1 MiB.
  expect_error("PUB foo 1048577\r\n", parse_error::max_payload, 17);
  EXPECT_EQ(parse("PUB foo 1048576\r\n").status, parse_status::need_more);
}

TEST(parser_errors, max_payload_on_hpub_counts_the_total) {
  proto::parser_limits l;
  l.max_payload = 10;
  expect_error("HPUB foo 2 11\r\n", parse_error::max_payload, 15, l);
  expect_error("HPUB foo r 11 11\r\n", parse_error::max_payload, 18, l);
  // Headers alone within the limit but the total over it.
  expect_error("HPUB foo 10 12\r\n", parse_error::max_payload, 16, l);
  EXPECT_EQ(parse("HPUB foo 4 10\r\n", l).status, parse_status::need_more);
}

TEST(parser_errors, bad_argument_counts) {
  for (const char* line : {"PUB\r\n", "PUB foo\r\n", "PUB 5\r\n", "PUB a b c 5\r\n",
                           "PUB a b c d 5\r\n", "HPUB\r\n", "HPUB foo 5\r\n", "HPUB 1 2\r\n",
                           "HPUB a b c 1 2\r\n", "SUB\r\n", "SUB foo\r\n", "SUB a b c d\r\n",
                           "UNSUB\r\n", "UNSUB \t \r\n", "UNSUB 1 2 3\r\n", "pub foo\n"})
    expect_line_error(line, parse_error::bad_args);
}

TEST(parser_errors, non_numeric_sizes) {
  for (const char* line : {"PUB foo x\r\n", "PUB foo 1x\r\n", "PUB foo x1\r\n", "PUB foo 0x10\r\n",
                           "PUB foo 1.5\r\n", "PUB foo r 5a\r\n", "HPUB foo x 5\r\n",
                           "HPUB foo 1 x\r\n", "HPUB foo r 1 5z\r\n", "UNSUB 1 x\r\n",
                           "UNSUB 1 1e3\r\n"})
    expect_line_error(line, parse_error::bad_args);
}

TEST(parser_errors, negative_and_signed_sizes) {
  for (const char* line : {"PUB foo -1\r\n", "PUB foo +5\r\n", "PUB foo -0\r\n",
                           "HPUB foo -1 5\r\n", "HPUB foo 1 -5\r\n", "HPUB foo +1 5\r\n",
                           "UNSUB 1 -3\r\n", "UNSUB 1 +3\r\n"})
    expect_line_error(line, parse_error::bad_args);
}

TEST(parser_errors, oversized_numbers) {
  // 19+ digits are refused outright rather than overflowing.
  expect_line_error("PUB foo 1000000000000000000\r\n", parse_error::bad_args);
  expect_line_error("PUB foo 99999999999999999999999\r\n", parse_error::bad_args);
  expect_line_error("HPUB foo 1 1000000000000000000\r\n", parse_error::bad_args);
  expect_line_error("UNSUB 1 1000000000000000000\r\n", parse_error::bad_args);
}

TEST(parser_errors, header_size_greater_than_total) {
  expect_line_error("HPUB foo 6 5\r\n", parse_error::bad_args);
  expect_line_error("HPUB foo reply 13 12\r\n", parse_error::bad_args);
  expect_line_error("HPUB foo 1 0\r\n", parse_error::bad_args);
}

TEST(parser_errors, payload_not_followed_by_crlf) {
  // consumed covers the control line, the payload and the two bytes that should be CRLF.
  expect_error("PUB foo 5\r\nhelloXY", parse_error::unknown_op, 18);
  expect_error("PUB foo 5\r\nhello\nX", parse_error::unknown_op, 18);
  expect_error("PUB foo 5\r\nhello\r\r", parse_error::unknown_op, 18);
  expect_error("PUB foo 5\r\nhello!\r\n", parse_error::unknown_op, 18);  // one byte too many
  expect_error("PUB foo 5\r\nhell\r\n\r\n", parse_error::unknown_op, 18);  // one byte short
  expect_error("PUB foo 0\r\nXY", parse_error::unknown_op, 13);
  expect_error("HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\n\n", parse_error::unknown_op, 32);
}

TEST(parser_errors, the_error_kind_is_stable_under_limit_changes_elsewhere) {
  // A bad-args line is bad regardless of limits; an unknown op stays unknown.
  proto::parser_limits tight;
  tight.max_control_line = 32;
  tight.max_payload = 1;
  expect_error("SUB a b c d\r\n", parse_error::bad_args, 13, tight);
  expect_error("NOPE\r\n", parse_error::unknown_op, 6, tight);
}

}  // namespace
