// Authorization: user/password, token, auth timeout, ops before CONNECT.
#include <algorithm>
#include <cctype>
#include <string>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class user_auth : public server_test {
 protected:
  std::string extra_conf() const override {
    return "authorization {\n  user: alice\n  password: \"s3cret-pw\"\n  timeout: 1\n}\n";
  }
  nc_ptr connect_as(const char* user, const char* pass, std::string* err) {
    auto opts = make_opts(url());
    if (user != nullptr) natsOptions_SetUserInfo(opts.get(), user, pass);
    return connect(opts.get(), err);
  }
};

class token_auth : public server_test {
 protected:
  std::string extra_conf() const override { return "authorization {\n  token: \"t0k-en\"\n}\n"; }
};

TEST_F(user_auth, info_advertises_auth_required) {
  raw_client c;
  ASSERT_TRUE(c.connect(port()));
  std::string info = c.read_info();
  ASSERT_EQ(info.rfind("INFO {", 0), 0u) << info;
  EXPECT_NE(info.find("\"auth_required\":true"), std::string::npos) << info;
}

TEST_F(user_auth, correct_credentials_work) {
  std::string err;
  auto nc = connect_as("alice", "s3cret-pw", &err);
  ASSERT_TRUE(nc) << err;
  auto sub = subscribe_sync(nc.get(), "secure");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_PublishString(nc.get(), "secure", "ok"), NATS_OK);
  EXPECT_TRUE(next_msg(sub.get(), 2s));
}

TEST_F(user_auth, wrong_password_is_authorization_error) {
  std::string err;
  auto nc = connect_as("alice", "wrong", &err);
  EXPECT_FALSE(nc);
  EXPECT_NE(lower(err).find("authorization violation"), std::string::npos) << err;
}

TEST_F(user_auth, missing_credentials_rejected) {
  std::string err;
  auto nc = connect_as(nullptr, nullptr, &err);
  EXPECT_FALSE(nc);
  EXPECT_NE(lower(err).find("authorization violation"), std::string::npos) << err;
}

TEST_F(user_auth, raw_wrong_password_exact_error) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  ASSERT_TRUE(c.send("CONNECT {\"verbose\":false,\"user\":\"alice\",\"pass\":\"nope\"}\r\nPING\r\n"));
  EXPECT_EQ(c.read_line(2s, false), "-ERR 'Authorization Violation'\r\n");
  EXPECT_TRUE(c.read_until_closed(5s)) << "connection must be closed";
}

TEST_F(user_auth, raw_op_before_connect_is_violation) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  ASSERT_TRUE(c.send("SUB foo 1\r\n"));
  EXPECT_EQ(c.read_line(2s, false), "-ERR 'Authorization Violation'\r\n");
  EXPECT_TRUE(c.read_until_closed(5s));
  EXPECT_TRUE(healthy_client_works("nats://alice:s3cret-pw@127.0.0.1:" + std::to_string(port())));
}

TEST_F(user_auth, raw_silent_client_gets_authentication_timeout) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  // Config timeout is 1 s; allow generous slack but stay bounded.
  EXPECT_EQ(c.read_line(5s, false), "-ERR 'Authentication Timeout'\r\n");
  EXPECT_TRUE(c.read_until_closed(5s));
}

TEST_F(token_auth, token_works_and_bad_token_fails) {
  {
    auto opts = make_opts(url());
    ASSERT_EQ(natsOptions_SetToken(opts.get(), "t0k-en"), NATS_OK);
    std::string err;
    auto nc = connect(opts.get(), &err);
    ASSERT_TRUE(nc) << err;
    auto sub = subscribe_sync(nc.get(), "tok");
    ASSERT_TRUE(sub);
    ASSERT_EQ(natsConnection_PublishString(nc.get(), "tok", "ok"), NATS_OK);
    EXPECT_TRUE(next_msg(sub.get(), 2s));
  }
  {
    auto opts = make_opts(url());
    ASSERT_EQ(natsOptions_SetToken(opts.get(), "t0k-en-wrong"), NATS_OK);
    std::string err;
    EXPECT_FALSE(connect(opts.get(), &err));
    EXPECT_NE(lower(err).find("authorization violation"), std::string::npos) << err;
  }
  {
    std::string err;
    EXPECT_FALSE(connect(url(), &err)) << "no token must be rejected";
  }
}

TEST_F(token_auth, raw_token_connect) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), "CONNECT {\"verbose\":false,\"pedantic\":false,\"auth_token\":\"t0k-en\"}\r\n"));
  ASSERT_TRUE(c.send("SUB t 1\r\nPUB t 2\r\nok\r\n"));
  EXPECT_EQ(c.read_line(), "MSG t 1 2\r\n");
}

}  // namespace
}  // namespace peregrine::test
