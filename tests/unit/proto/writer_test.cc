// The exact bytes of the server -> client encoders.
#include <gtest/gtest.h>

#include <string>

#include "src/proto/parser.h"
#include "src/proto/writer.h"

namespace {

TEST(writer, msg_without_reply) {
  std::string out;
  proto::append_msg(out, "foo", "1", "", "hello");
  EXPECT_EQ(out, "MSG foo 1 5\r\nhello\r\n");
}

TEST(writer, msg_with_reply) {
  std::string out;
  proto::append_msg(out, "foo", "1", "reply.x", "hello");
  EXPECT_EQ(out, "MSG foo 1 reply.x 5\r\nhello\r\n");
}

TEST(writer, msg_with_empty_payload) {
  std::string out;
  proto::append_msg(out, "a.b", "sid42", "", "");
  EXPECT_EQ(out, "MSG a.b sid42 0\r\n\r\n");
}

TEST(writer, msg_with_binary_payload_and_large_size) {
  std::string payload(123456, 'z');
  payload[7] = '\0';
  payload[8] = '\n';
  std::string out;
  proto::append_msg(out, "big", "9", "", payload);
  EXPECT_EQ(out, "MSG big 9 123456\r\n" + payload + "\r\n");
}

TEST(writer, hmsg_without_reply) {
  const std::string hdr = "NATS/1.0\r\nA: b\r\nA: c\r\n\r\n";
  std::string out;
  proto::append_hmsg(out, "foo", "1", "", hdr, "hello");
  EXPECT_EQ(out, "HMSG foo 1 24 29\r\nNATS/1.0\r\nA: b\r\nA: c\r\n\r\nhello\r\n");
}

TEST(writer, hmsg_with_reply_and_empty_payload) {
  std::string out;
  proto::append_hmsg(out, "foo", "1", "r.1", "NATS/1.0\r\n\r\n", "");
  EXPECT_EQ(out, "HMSG foo 1 r.1 12 12\r\nNATS/1.0\r\n\r\n\r\n");
}

TEST(writer, hmsg_status_headers) {
  std::string out;
  proto::append_hmsg(out, "_INBOX.a", "3", "", "NATS/1.0 503\r\n\r\n", "");
  EXPECT_EQ(out, "HMSG _INBOX.a 3 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
}

TEST(writer, err_wraps_text_in_single_quotes) {
  std::string out;
  proto::append_err(out, proto::err_text::unknown_op);
  EXPECT_EQ(out, "-ERR 'Unknown Protocol Operation'\r\n");
  out.clear();
  proto::append_err(out, proto::err_text::max_control_line);
  EXPECT_EQ(out, "-ERR 'maximum control line exceeded'\r\n");
  out.clear();
  proto::append_err(out, proto::err_text::max_payload);
  EXPECT_EQ(out, "-ERR 'Maximum Payload Violation'\r\n");
  out.clear();
  proto::append_err(out, proto::err_text::auth_violation);
  EXPECT_EQ(out, "-ERR 'Authorization Violation'\r\n");
  out.clear();
  proto::append_err(out, proto::err_text::stale);
  EXPECT_EQ(out, "-ERR 'Stale Connection'\r\n");
}

TEST(writer, info_and_constants) {
  std::string out;
  proto::append_info(out, "{\"server_id\":\"S\"}");
  EXPECT_EQ(out, "INFO {\"server_id\":\"S\"}\r\n");
  EXPECT_EQ(proto::kPing, "PING\r\n");
  EXPECT_EQ(proto::kPong, "PONG\r\n");
  EXPECT_EQ(proto::kOk, "+OK\r\n");
}

TEST(writer, appends_without_clobbering) {
  std::string out = "PONG\r\n";
  proto::append_msg(out, "a", "1", "", "x");
  proto::append_err(out, "e");
  proto::append_hmsg(out, "b", "2", "", "H", "p");
  EXPECT_EQ(out, "PONG\r\nMSG a 1 1\r\nx\r\n-ERR 'e'\r\nHMSG b 2 1 2\r\nHp\r\n");
}

// MSG/HMSG frames use the same framing as PUB/HPUB, so turning the op name around must
// give a frame our own parser reads back with the same sizes.
TEST(writer, frames_round_trip_through_the_parser_framing) {
  std::string out;
  proto::append_hmsg(out, "s", "7", "r", "NATS/1.0\r\nK: v\r\n\r\n", "body");
  ASSERT_EQ(out.rfind("HMSG s 7 r ", 0), 0u);
  const std::string as_hpub = "HPUB s r" + out.substr(10);
  const auto r = proto::parse_client(as_hpub, {});
  ASSERT_EQ(r.status, proto::parse_status::op);
  EXPECT_EQ(r.consumed, as_hpub.size());
  EXPECT_EQ(r.op.headers, "NATS/1.0\r\nK: v\r\n\r\n");
  EXPECT_EQ(r.op.payload, "body");
}

}  // namespace
