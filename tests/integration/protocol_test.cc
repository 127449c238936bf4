// Raw-socket protocol conformance: grammar corner cases and bad input, answered byte-for-byte as
// nats-server answers (spec §1.3, §1.4, §1.9). After each case a healthy libnats client must still
// work on the same server, i.e. one bad connection never hurts the others.
#include <string>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;

class protocol : public server_test {
 protected:
  void TearDown() override {
    if (server_ && !IsSkipped()) {
      EXPECT_TRUE(healthy_client_works(url()));
    }
    server_test::TearDown();
  }

  // The next line is exactly -ERR '<text>', then the server closes without sending more.
  static void expect_err_then_close(raw_client& c, const std::string& text) {
    EXPECT_EQ(c.read_line(2s, false), "-ERR '" + text + "'\r\n");
    auto rest = c.read_until_closed(5s);
    ASSERT_TRUE(rest) << "connection still open after -ERR '" << text << "'";
    EXPECT_EQ(*rest, "");
  }

  // A verbose PUB to our own subscription: +OK and the MSG. 2.9.10 acks the PUB before the
  // delivery; either order is acceptable.
  static void expect_ok_and_msg(raw_client& c, const std::string& msg_line, const std::string& payload) {
    auto first = c.read_line();
    ASSERT_TRUE(first);
    if (*first == "+OK\r\n") {
      EXPECT_EQ(c.read_line(), msg_line);
      EXPECT_EQ(c.read_bytes(payload.size()), payload);
    } else {
      EXPECT_EQ(*first, msg_line);
      EXPECT_EQ(c.read_bytes(payload.size()), payload);
      EXPECT_EQ(c.read_line(), "+OK\r\n");
    }
  }

  // The server closes without writing anything (no -ERR).
  static void expect_silent_close(raw_client& c, const std::string& what) {
    auto rest = c.read_until_closed(5s);
    ASSERT_TRUE(rest) << "connection still open after " << what;
    EXPECT_EQ(*rest, "") << "expected close without -ERR after " << what;
  }
};

TEST_F(protocol, info_is_first_line) {
  raw_client c;
  ASSERT_TRUE(c.connect(port()));
  std::string info = c.read_info();
  ASSERT_EQ(info.rfind("INFO {", 0), 0u) << info;
  ASSERT_GE(info.size(), 2u);
  EXPECT_EQ(info.substr(info.size() - 2), "\r\n");
  for (const char* key : {"\"server_id\":", "\"version\":", "\"proto\":1", "\"headers\":true",
                          "\"max_payload\":1048576", "\"port\":" })
    EXPECT_NE(info.find(key), std::string::npos) << key << " missing in " << info;
  EXPECT_NE(info.find("\"port\":" + std::to_string(port())), std::string::npos) << info;
}

TEST_F(protocol, unknown_operation_closes) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("FOO bar\r\n"));
  expect_err_then_close(c, "Unknown Protocol Operation");
}

TEST_F(protocol, empty_line_is_unknown_operation) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("\r\n"));
  expect_err_then_close(c, "Unknown Protocol Operation");
}

TEST_F(protocol, payload_not_followed_by_crlf_closes) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("PUB foo 2\r\nhiXX\r\n"));
  expect_err_then_close(c, "Unknown Protocol Operation");
}

TEST_F(protocol, control_line_over_limit_closes) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB " + std::string(5000, 'a') + " 1\r\n"));
  EXPECT_EQ(c.read_line(2s, false), "-ERR 'maximum control line exceeded'\r\n");
  // The server may close with unread input pending (RST); either way the connection must end.
  EXPECT_TRUE(c.read_until_closed(5s)) << "connection still open";
}

TEST_F(protocol, long_control_line_under_limit_works) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  const std::string subject(4000, 'b');
  ASSERT_TRUE(c.send("SUB " + subject + " 1\r\nPUB " + subject + " 1\r\nx\r\n"));
  EXPECT_EQ(c.read_line(), "MSG " + subject + " 1 1\r\n");
  EXPECT_EQ(c.read_bytes(3), "x\r\n");
}

TEST_F(protocol, sub_invalid_subject_keeps_connection) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB foo..bar 1\r\nSUB .foo 2\r\nSUB foo. 3\r\nSUB foo.>.bar 4\r\nPING\r\n"));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.read_line(), "-ERR 'Invalid Subject'\r\n") << "SUB #" << i;
  EXPECT_EQ(c.read_line(), "PONG\r\n");
  // Still fully usable, and a valid SUB with the rejected sid works (nothing was registered).
  ASSERT_TRUE(c.send("SUB ok 1\r\nPUB ok 2\r\nhi\r\n"));
  EXPECT_EQ(c.read_line(), "MSG ok 1 2\r\n");
  EXPECT_EQ(c.read_bytes(4), "hi\r\n");
}

TEST_F(protocol, wrong_argument_counts_close_without_err) {
  for (const char* bad : {"PUB a b c d\r\n", "SUB a b c d\r\n", "SUB foo\r\n", "PUB foo abc\r\n",
                          "PUB foo -1\r\n", "HPUB foo 10 5\r\n"}) {
    SCOPED_TRACE(bad);
    raw_client c;
    ASSERT_TRUE(c.open(port()));
    ASSERT_TRUE(c.send(bad));
    expect_silent_close(c, bad);
  }
}

TEST_F(protocol, malformed_connect_json_closes_without_err) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  ASSERT_TRUE(c.send("CONNECT {bad json\r\n"));
  expect_silent_close(c, "malformed CONNECT");
}

TEST_F(protocol, connect_protocol_2_rejected) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  ASSERT_TRUE(c.send("CONNECT {\"verbose\":false,\"protocol\":2}\r\n"));
  expect_err_then_close(c, "invalid client protocol");
}

TEST_F(protocol, no_responders_requires_headers) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  ASSERT_TRUE(c.send("CONNECT {\"verbose\":false,\"no_responders\":true,\"headers\":false}\r\n"));
  expect_err_then_close(c, "no responders requires headers support");
}

TEST_F(protocol, verbose_connect_gets_ok_replies) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  ASSERT_TRUE(c.send("CONNECT {\"verbose\":true,\"pedantic\":false}\r\n"));
  EXPECT_EQ(c.read_line(), "+OK\r\n");
  ASSERT_TRUE(c.send("SUB foo 1\r\n"));
  EXPECT_EQ(c.read_line(), "+OK\r\n");
  ASSERT_TRUE(c.send("PUB foo 2\r\nhi\r\n"));
  expect_ok_and_msg(c, "MSG foo 1 2\r\n", "hi\r\n");
  ASSERT_TRUE(c.send("UNSUB 1\r\nPING\r\n"));
  EXPECT_EQ(c.read_line(), "+OK\r\n");
  EXPECT_EQ(c.read_line(), "PONG\r\n");
}

TEST_F(protocol, connect_without_verbose_field_defaults_to_verbose) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  ASSERT_TRUE(c.send("CONNECT {\"protocol\":1,\"headers\":false,\"pedantic\":false}\r\nSUB foo 1\r\nPING\r\n"));
  EXPECT_EQ(c.read_line(), "+OK\r\n");
  EXPECT_EQ(c.read_line(), "+OK\r\n");
  EXPECT_EQ(c.read_line(), "PONG\r\n");
}

TEST_F(protocol, pedantic_publish_to_wildcard_subject) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), "CONNECT {\"verbose\":false,\"pedantic\":true}\r\n"));
  ASSERT_TRUE(c.send("PUB foo.* 2\r\nhi\r\nPUB foo.> 2\r\nhi\r\nPUB foo..bar 1\r\nx\r\nPING\r\n"));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.read_line(), "-ERR 'Invalid Publish Subject'\r\n");
  EXPECT_EQ(c.read_line(), "PONG\r\n") << "pedantic errors keep the connection open";
}

TEST_F(protocol, non_pedantic_invalid_publish_subject_is_silent) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB > 1\r\nPUB foo..bar 1\r\nx\r\nPING\r\n"));
  EXPECT_EQ(c.read_line(), "PONG\r\n") << "not delivered, no -ERR";
}

TEST_F(protocol, ops_before_connect_allowed_without_auth) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  // No CONNECT yet means server defaults, which include verbose: +OK for SUB and PUB.
  ASSERT_TRUE(c.send("SUB early 1\r\nPUB early 2\r\nok\r\nPING\r\n"));
  EXPECT_EQ(c.read_line(), "+OK\r\n");
  expect_ok_and_msg(c, "MSG early 1 2\r\n", "ok\r\n");
  EXPECT_EQ(c.read_line(), "PONG\r\n");
}

TEST_F(protocol, bare_lf_terminators_and_unsolicited_pong) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("PONG\r\nPING\n"));
  EXPECT_EQ(c.read_line(), "PONG\r\n");
  ASSERT_TRUE(c.send("SUB lf 1\nPUB lf 2\nhi\r\n"));
  EXPECT_EQ(c.read_line(), "MSG lf 1 2\r\n");
  EXPECT_EQ(c.read_bytes(4), "hi\r\n");
}

TEST_F(protocol, split_writes_are_reassembled) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  const std::string all = "SUB sp 1\r\nPUB sp 11\r\nhello world\r\nPING\r\n";
  for (char ch : all) ASSERT_TRUE(c.send(std::string(1, ch)));  // one byte per segment (NODELAY)
  EXPECT_EQ(c.read_line(), "MSG sp 1 11\r\n");
  EXPECT_EQ(c.read_bytes(13), "hello world\r\n");
  EXPECT_EQ(c.read_line(), "PONG\r\n");
}

TEST_F(protocol, second_connect_is_accepted) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send(std::string(default_connect)));
  EXPECT_TRUE(c.ping_pong());
}

}  // namespace
}  // namespace peregrine::test
