// Every client op the parser accepts: names in any case, whitespace variants, bare LF,
// PUB/HPUB payload framing and UNSUB with a max.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/proto/parse_test_util.h"

namespace {

using proto::op_kind;
using proto::parse_status;
using proto_test::parse;

// Parses `s`, expects exactly one op covering all of it, and returns it.
proto::client_op one_op(std::string_view s) {
  const auto r = parse(s);
  EXPECT_EQ(r.status, parse_status::op) << "input: " << s;
  EXPECT_EQ(r.consumed, s.size()) << "input: " << s;
  EXPECT_EQ(r.error, proto::parse_error::none);
  return r.op;
}

// True when `v` is a view into `buf` (or empty).
bool inside(std::string_view v, std::string_view buf) {
  return v.empty() || (v.data() >= buf.data() && v.data() + v.size() <= buf.data() + buf.size());
}

TEST(parser_ops, pub_without_reply) {
  const std::string s = "PUB foo.bar 5\r\nhello\r\n";
  const auto op = one_op(s);
  EXPECT_EQ(op.kind, op_kind::pub);
  EXPECT_EQ(op.subject, "foo.bar");
  EXPECT_EQ(op.reply, "");
  EXPECT_EQ(op.payload, "hello");
  EXPECT_EQ(op.headers, "");
  EXPECT_TRUE(inside(op.subject, s));
  EXPECT_TRUE(inside(op.payload, s));
}

TEST(parser_ops, pub_with_reply) {
  const auto op = one_op("PUB foo _INBOX.x.y 11\r\nhello world\r\n");
  EXPECT_EQ(op.kind, op_kind::pub);
  EXPECT_EQ(op.subject, "foo");
  EXPECT_EQ(op.reply, "_INBOX.x.y");
  EXPECT_EQ(op.payload, "hello world");
}

TEST(parser_ops, pub_zero_byte_payload) {
  const auto op = one_op("PUB x 0\r\n\r\n");
  EXPECT_EQ(op.kind, op_kind::pub);
  EXPECT_EQ(op.subject, "x");
  EXPECT_TRUE(op.payload.empty());
}

TEST(parser_ops, pub_payload_may_contain_crlf_and_binary) {
  const std::string payload("a\r\nb\0c\n", 7);
  const std::string s = "PUB bin 7\r\n" + payload + "\r\n";
  const auto op = one_op(s);
  EXPECT_EQ(op.payload, payload);
}

TEST(parser_ops, payload_views_point_into_the_buffer_without_copies) {
  const std::string s = "PUB a b 3\r\nxyz\r\n";
  const auto op = one_op(s);
  EXPECT_EQ(op.subject.data(), s.data() + 4);
  EXPECT_EQ(op.reply.data(), s.data() + 6);
  EXPECT_EQ(op.payload.data(), s.data() + 11);
}

TEST(parser_ops, op_names_are_case_insensitive) {
  for (const char* name : {"PUB", "pub", "Pub", "pUb", "puB"}) {
    const auto op = one_op(std::string(name) + " s 1\r\nx\r\n");
    EXPECT_EQ(op.kind, op_kind::pub) << name;
  }
  for (const char* name : {"HPUB", "hpub", "HpUb"})
    EXPECT_EQ(one_op(std::string(name) + " s 12 12\r\nNATS/1.0\r\n\r\n\r\n").kind, op_kind::hpub);
  for (const char* name : {"SUB", "sub", "sUb"})
    EXPECT_EQ(one_op(std::string(name) + " s 1\r\n").kind, op_kind::sub);
  for (const char* name : {"UNSUB", "unsub", "UnSuB"})
    EXPECT_EQ(one_op(std::string(name) + " 1\r\n").kind, op_kind::unsub);
  for (const char* name : {"PING", "ping", "Ping", "pInG"})
    EXPECT_EQ(one_op(std::string(name) + "\r\n").kind, op_kind::ping);
  for (const char* name : {"PONG", "pong", "PoNg"})
    EXPECT_EQ(one_op(std::string(name) + "\r\n").kind, op_kind::pong);
  for (const char* name : {"CONNECT", "connect", "Connect"})
    EXPECT_EQ(one_op(std::string(name) + " {}\r\n").kind, op_kind::connect);
  for (const char* name : {"INFO", "info"})
    EXPECT_EQ(one_op(std::string(name) + " {}\r\n").kind, op_kind::info);
  for (const char* name : {"+OK", "+ok", "+Ok"})
    EXPECT_EQ(one_op(std::string(name) + "\r\n").kind, op_kind::ok);
}

TEST(parser_ops, tabs_and_runs_of_spaces_separate_arguments) {
  auto op = one_op("PUB\tfoo \t  reply\t\t3\r\nabc\r\n");
  EXPECT_EQ(op.subject, "foo");
  EXPECT_EQ(op.reply, "reply");
  EXPECT_EQ(op.payload, "abc");

  op = one_op("PUB   foo    3   \r\nabc\r\n");  // trailing whitespace is not an argument
  EXPECT_EQ(op.subject, "foo");
  EXPECT_EQ(op.reply, "");

  op = one_op("SUB\t\tfoo.*  \t q1 \t 42\r\n");
  EXPECT_EQ(op.subject, "foo.*");
  EXPECT_EQ(op.queue, "q1");
  EXPECT_EQ(op.sid, "42");

  op = one_op("HPUB  s \t r   12\t17\r\nNATS/1.0\r\n\r\nhello\r\n");
  EXPECT_EQ(op.reply, "r");
  EXPECT_EQ(op.payload, "hello");

  op = one_op("UNSUB \t 7 \t 3 \r\n");
  EXPECT_EQ(op.sid, "7");
  EXPECT_EQ(op.max_msgs, 3);

  EXPECT_EQ(one_op("PING \t \r\n").kind, op_kind::ping);
  EXPECT_EQ(one_op("CONNECT \t {\"a\": 1}\r\n").json, "{\"a\": 1}");
}

TEST(parser_ops, bare_lf_terminates_control_lines) {
  EXPECT_EQ(one_op("PING\n").kind, op_kind::ping);
  EXPECT_EQ(one_op("PONG\n").kind, op_kind::pong);
  auto op = one_op("SUB foo 1\n");
  EXPECT_EQ(op.sid, "1");  // the sid does not pick up a stray CR
  op = one_op("UNSUB 1 5\n");
  EXPECT_EQ(op.max_msgs, 5);
  op = one_op("PUB foo 5\nhello\r\n");
  EXPECT_EQ(op.payload, "hello");
  op = one_op("HPUB foo 12 12\nNATS/1.0\r\n\r\n\r\n");
  EXPECT_EQ(op.headers, "NATS/1.0\r\n\r\n");
  EXPECT_EQ(one_op("CONNECT {}\n").json, "{}");
}

TEST(parser_ops, cr_is_stripped_from_the_last_argument) {
  EXPECT_EQ(one_op("SUB foo 99\r\n").sid, "99");
  EXPECT_EQ(one_op("UNSUB 99\r\n").sid, "99");
  EXPECT_EQ(one_op("CONNECT {\"verbose\":false}\r\n").json, "{\"verbose\":false}");
}

TEST(parser_ops, hpub_header_and_total_sizes) {
  // Spec example: 24 header bytes, 29 total.
  const std::string hdr = "NATS/1.0\r\nA: b\r\nA: c\r\n\r\n";
  ASSERT_EQ(hdr.size(), 24u);
  const std::string s = "HPUB foo 24 29\r\n" + hdr + "hello\r\n";
  const auto op = one_op(s);
  EXPECT_EQ(op.kind, op_kind::hpub);
  EXPECT_EQ(op.subject, "foo");
  EXPECT_EQ(op.reply, "");
  EXPECT_EQ(op.headers, hdr);
  EXPECT_EQ(op.payload, "hello");
  EXPECT_TRUE(inside(op.headers, s));
  EXPECT_EQ(op.headers.data() + op.headers.size(), op.payload.data());
}

TEST(parser_ops, hpub_with_reply_and_empty_payload) {
  const auto op = one_op("HPUB foo rep 12 12\r\nNATS/1.0\r\n\r\n\r\n");
  EXPECT_EQ(op.reply, "rep");
  EXPECT_EQ(op.headers, "NATS/1.0\r\n\r\n");
  EXPECT_TRUE(op.payload.empty());
}

TEST(parser_ops, hpub_zero_sizes) {
  const auto op = one_op("HPUB foo 0 0\r\n\r\n");
  EXPECT_TRUE(op.headers.empty());
  EXPECT_TRUE(op.payload.empty());
}

TEST(parser_ops, sub_with_and_without_queue) {
  auto op = one_op("SUB foo.> 1\r\n");
  EXPECT_EQ(op.kind, op_kind::sub);
  EXPECT_EQ(op.subject, "foo.>");
  EXPECT_EQ(op.queue, "");
  EXPECT_EQ(op.sid, "1");
  op = one_op("SUB foo workers sid-7\r\n");
  EXPECT_EQ(op.queue, "workers");
  EXPECT_EQ(op.sid, "sid-7");
}

TEST(parser_ops, unsub_with_and_without_max) {
  auto op = one_op("UNSUB 12\r\n");
  EXPECT_EQ(op.kind, op_kind::unsub);
  EXPECT_EQ(op.sid, "12");
  EXPECT_EQ(op.max_msgs, 0);
  op = one_op("UNSUB 12 100\r\n");
  EXPECT_EQ(op.sid, "12");
  EXPECT_EQ(op.max_msgs, 100);
  op = one_op("UNSUB 3 999999999999999999\r\n");  // 18 digits still fit
  EXPECT_EQ(op.max_msgs, 999999999999999999);
}

TEST(parser_ops, connect_and_info_keep_the_json_verbatim) {
  const std::string json = R"({"verbose":false,"pedantic":false,"name":"a b","headers":true})";
  const std::string line = "CONNECT " + json + "\r\n";  // outlives the views into it
  auto op = one_op(line);
  EXPECT_EQ(op.kind, op_kind::connect);
  EXPECT_EQ(op.json, json);
  op = one_op("INFO {\"server_id\":\"x\"}\r\n");
  EXPECT_EQ(op.kind, op_kind::info);
  EXPECT_EQ(op.json, "{\"server_id\":\"x\"}");
  EXPECT_EQ(one_op("CONNECT\r\n").json, "");
}

TEST(parser_ops, ping_pong_ok) {
  EXPECT_EQ(one_op("PING\r\n").kind, op_kind::ping);
  EXPECT_EQ(one_op("PONG\r\n").kind, op_kind::pong);
  EXPECT_EQ(one_op("+OK\r\n").kind, op_kind::ok);
}

TEST(parser_ops, only_the_first_op_of_a_stream_is_consumed) {
  const std::string s = "PING\r\nPUB a 1\r\nx\r\nPONG\r\n";
  auto r = parse(s);
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, op_kind::ping);
  EXPECT_EQ(r.consumed, 6u);
  r = parse(std::string_view(s).substr(6));
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, op_kind::pub);
  EXPECT_EQ(r.consumed, 12u);
  r = parse(std::string_view(s).substr(18));
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, op_kind::pong);
  EXPECT_EQ(r.consumed, 6u);
}

TEST(parser_ops, payload_at_max_payload_is_accepted) {
  proto::parser_limits l;
  l.max_payload = 8;
  const std::string s = "PUB a 8\r\n12345678\r\n";
  auto r = parse(s, l);
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.payload, "12345678");
  r = parse("HPUB a 4 8\r\n1234abcd\r\n", l);
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.headers, "1234");
  EXPECT_EQ(r.op.payload, "abcd");
}

TEST(parser_ops, control_line_at_max_length_is_accepted) {
  proto::parser_limits l;
  l.max_control_line = 16;
  const std::string line = "SUB abcdefghi 1";  // 15 bytes
  EXPECT_EQ(parse(line + "x\r\n", l).status, parse_status::op);  // 16: at the limit
  EXPECT_EQ(parse(line + "x\n", l).status, parse_status::op);
}

}  // namespace
