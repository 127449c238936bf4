// The route protocol parser: RS+/RS-, RMSG/HMSG in nats-server 2.9's shapes, -ERR, the ops
// shared with clients, partial input and bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/core/route_manager.h"
#include "src/core/route_parser.h"

namespace core {
namespace {

using proto::parse_error;
using proto::parse_status;

route_parse_result parse(std::string_view s) { return parse_route(s, proto::parser_limits{}); }

std::vector<std::string> queues_of(std::string_view list) {
  std::vector<std::string> v;
  for_each_queue(list, [&](std::string_view q) { v.emplace_back(q); });
  return v;
}

TEST(route_parser, plain_interest) {
  auto r = parse("RS+ $G foo.*\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.consumed, 14u);
  EXPECT_EQ(r.op.kind, route_op_kind::sub);
  EXPECT_EQ(r.op.account, "$G");
  EXPECT_EQ(r.op.subject, "foo.*");
  EXPECT_TRUE(r.op.queue.empty());
  r = parse("RS- $G foo.*\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, route_op_kind::unsub);
  EXPECT_EQ(r.op.subject, "foo.*");
}

TEST(route_parser, queue_interest_with_weight) {
  auto r = parse("RS+ $G bar workers 3\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.queue, "workers");
  EXPECT_EQ(r.op.weight, 3);
  r = parse("RS- $G bar workers\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, route_op_kind::unsub);
  EXPECT_EQ(r.op.queue, "workers");
}

TEST(route_parser, bad_interest_lines_are_errors) {
  for (const char* bad : {"RS+ $G\r\n", "RS+ $G foo q\r\n", "RS+ $G foo q x\r\n", "RS+ $G foo q 1 2\r\n",
                          "RS- $G foo q 1\r\n", "RS+ $G foo q 99999999999\r\n"}) {
    auto r = parse(bad);
    EXPECT_EQ(r.status, parse_status::error) << bad;
    EXPECT_EQ(r.error, parse_error::bad_args) << bad;
  }
}

TEST(route_parser, rmsg_shapes) {
  auto r = parse("RMSG $G foo 5\r\nhello\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, route_op_kind::msg);
  EXPECT_EQ(r.op.subject, "foo");
  EXPECT_TRUE(r.op.reply.empty());
  EXPECT_TRUE(r.op.queues.empty());
  EXPECT_EQ(r.op.payload, "hello");
  EXPECT_EQ(r.consumed, 22u);

  r = parse("RMSG $G foo _INBOX.1 2\r\nhi\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.reply, "_INBOX.1");
  EXPECT_TRUE(r.op.queues.empty());

  r = parse("RMSG $G foo | q1 q2 2\r\nhi\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_TRUE(r.op.reply.empty());
  EXPECT_EQ(queues_of(r.op.queues), (std::vector<std::string>{"q1", "q2"}));

  r = parse("RMSG $G foo + rep q1 2\r\nhi\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.reply, "rep");
  EXPECT_EQ(queues_of(r.op.queues), (std::vector<std::string>{"q1"}));
}

TEST(route_parser, hmsg_carries_headers) {
  auto r = parse("HMSG $G foo + rep q 12 14\r\nNATS/1.0\r\n\r\nhi\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, route_op_kind::msg);
  EXPECT_EQ(r.op.headers, "NATS/1.0\r\n\r\n");
  EXPECT_EQ(r.op.payload, "hi");
  EXPECT_EQ(r.op.reply, "rep");
  EXPECT_EQ(r.op.queues, "q");
  r = parse("HMSG $G foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_TRUE(r.op.reply.empty());
  EXPECT_EQ(r.op.headers.size(), 12u);
}

TEST(route_parser, partial_message_asks_for_the_rest) {
  const std::string whole = "RMSG $G foo 5\r\nhello\r\n";
  for (std::size_t cut = 1; cut < whole.size(); ++cut) {
    auto r = parse(std::string_view(whole).substr(0, cut));
    ASSERT_EQ(r.status, parse_status::need_more) << cut;
    EXPECT_GT(r.needed, cut);
    EXPECT_LE(r.needed, whole.size());
  }
}

TEST(route_parser, bad_messages_are_errors) {
  EXPECT_EQ(parse("RMSG $G foo x\r\nhello\r\n").error, parse_error::bad_args);
  EXPECT_EQ(parse("RMSG $G 5\r\nhello\r\n").error, parse_error::bad_args);
  EXPECT_EQ(parse("RMSG $G foo a b 2\r\nhi\r\n").error, parse_error::bad_args);  // 2 words, no marker
  EXPECT_EQ(parse("RMSG $G foo + rep 2\r\nhi\r\n").error, parse_error::bad_args);  // + without queues
  EXPECT_EQ(parse("HMSG $G foo 20 14\r\nNATS/1.0\r\n\r\nhi\r\n").error, parse_error::bad_args);
  EXPECT_EQ(parse("RMSG $G foo 2\r\nhiXY").error, parse_error::unknown_op);  // no CRLF after payload
  proto::parser_limits small;
  small.max_payload = 4;
  EXPECT_EQ(parse_route("RMSG $G foo 5\r\nhello\r\n", small).error, parse_error::max_payload);
}

TEST(route_parser, shared_ops_and_err) {
  auto r = parse("INFO {\"server_id\":\"X\"}\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, route_op_kind::client_op);
  EXPECT_EQ(r.op.op.kind, proto::op_kind::info);
  EXPECT_EQ(r.op.op.json, "{\"server_id\":\"X\"}");
  EXPECT_EQ(parse("PING\r\n").op.op.kind, proto::op_kind::ping);
  EXPECT_EQ(parse("PONG\r\n").op.op.kind, proto::op_kind::pong);
  EXPECT_EQ(parse("CONNECT {}\r\n").op.op.kind, proto::op_kind::connect);
  r = parse("-ERR 'Unknown Protocol Operation'\r\n");
  ASSERT_EQ(r.status, parse_status::op);
  EXPECT_EQ(r.op.kind, route_op_kind::err);
  EXPECT_EQ(r.op.err, "Unknown Protocol Operation");
  // A client's publish has no place on a route.
  EXPECT_EQ(parse("PUB foo 2\r\nhi\r\n").status, parse_status::error);
  EXPECT_EQ(parse("SUB foo 1\r\n").status, parse_status::error);
  EXPECT_EQ(parse("XYZ\r\n").status, parse_status::error);
}

TEST(route_parser, control_line_limit) {
  const std::string long_line = "RS+ $G " + std::string(5000, 'a');
  EXPECT_EQ(parse(long_line).error, parse_error::control_line_too_long);
  EXPECT_EQ(parse(long_line + "\r\n").error, parse_error::control_line_too_long);
}

TEST(route_manager, backoff_doubles_to_a_cap) {
  EXPECT_EQ(route_manager::backoff_ms(0), 100);
  EXPECT_EQ(route_manager::backoff_ms(1), 200);
  EXPECT_EQ(route_manager::backoff_ms(3), 800);
  EXPECT_EQ(route_manager::backoff_ms(5), 2000);
  EXPECT_EQ(route_manager::backoff_ms(100), 2000);
}

TEST(route_url, forms) {
  std::string h;
  int p = 0;
  ASSERT_TRUE(parse_route_url("nats-route://user:pw@10.0.0.1:6222", h, p));
  EXPECT_EQ(h, "10.0.0.1");
  EXPECT_EQ(p, 6222);
  ASSERT_TRUE(parse_route_url("nats://[::1]:7000/", h, p));
  EXPECT_EQ(h, "::1");
  EXPECT_EQ(p, 7000);
  ASSERT_TRUE(parse_route_url("localhost:1", h, p));
  EXPECT_FALSE(parse_route_url("nats://host", h, p));
  EXPECT_FALSE(parse_route_url("nats://host:99999", h, p));
  EXPECT_FALSE(parse_route_url("nats://host:x1", h, p));
}

}  // namespace
}  // namespace core

namespace core {
namespace {

// The cluster port takes replication connections too: their first line is "PGREPL ...".
TEST(route_manager_classify, pgrepl_first_line_is_replication_anything_else_a_route) {
  using fb = route_manager::first_bytes;
  EXPECT_EQ(route_manager::classify("PGREPL 1 a c1\r\n"), fb::replication);
  EXPECT_EQ(route_manager::classify("PGREPL"), fb::replication);
  EXPECT_EQ(route_manager::classify("PGRE"), fb::undecided);  // wait for the rest
  EXPECT_EQ(route_manager::classify("P"), fb::undecided);
  EXPECT_EQ(route_manager::classify("CONNECT {}\r\n"), fb::route);
  EXPECT_EQ(route_manager::classify("PING\r\n"), fb::route);  // shares only the P
  EXPECT_EQ(route_manager::classify(std::string_view("\x16\x03\x01", 3)), fb::route);  // TLS ClientHello
  EXPECT_EQ(route_manager::classify("INFO {}"), fb::route);
}

// A JetStream delivery routed as nats-server routes it: the subject its receivers see after
// '@' behind the ack reply's nine tokens; anything else is left alone.
TEST(route_parser, split_routed_delivery_takes_the_shown_subject_after_the_ack_reply) {
  using p = std::pair<std::string_view, std::string_view>;
  EXPECT_EQ(split_routed_delivery("$JS.ACK.ORDERS.c.1.5.5.1700000000.0@orders.created"),
            p("$JS.ACK.ORDERS.c.1.5.5.1700000000.0", "orders.created"));
  EXPECT_EQ(split_routed_delivery("$JS.ACK.ORDERS.c.1.5.5.1700000000.0"), p("$JS.ACK.ORDERS.c.1.5.5.1700000000.0", ""));
  EXPECT_EQ(split_routed_delivery("$JS.ACK.a@b.c"), p("$JS.ACK.a@b.c", ""));  // '@' too early: part of a token
  EXPECT_EQ(split_routed_delivery("$JS.ACK.S.c.1.5.5.1.0@"), p("$JS.ACK.S.c.1.5.5.1.0@", ""));
  EXPECT_EQ(split_routed_delivery("_INBOX.x@y"), p("_INBOX.x@y", ""));
  EXPECT_EQ(split_routed_delivery(""), p("", ""));
}

}  // namespace
}  // namespace core
