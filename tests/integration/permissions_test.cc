// Users from an authorization block: per-user publish/subscribe permissions (allow, deny,
// queue rules), default_permissions, allow_responses, no_auth_user, bcrypt passwords and
// the exact -ERR texts. Runs against nats-server 2.9.10 as well (permissions_nats_server).
#include <string>
#include <thread>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;

// "b-cr7pt-pw" at bcrypt cost 6.
constexpr const char* kHash = "$2a$06$aXatvg8ih.O04ETx0hByqOa7Ubkex/Czj0K0dETHYM47zHDC9F.4S";

class permissions : public server_test {
 protected:
  std::string extra_conf() const override {
    return std::string(R"(
authorization {
  timeout: 1
  default_permissions: { subscribe: { deny: "secret.>" } }
  users: [
    { user: pub, password: pw, permissions: {
        publish: { allow: ["orders.>", "_INBOX.>"], deny: "orders.internal" }
        subscribe: { allow: ["orders.>", "_INBOX.>", "jobs workers"], deny: "orders.audit" } } }
    { user: svc, password: pw, permissions: { subscribe: "svc.>", allow_responses: true } }
    { user: svc2, password: pw, permissions: { subscribe: "svc.>", allow_responses: { max: 2, expires: "1s" } } }
    { user: dflt, password: pw }
    { user: hashed, password: ")") + kHash + R"(" }
    { user: anon, password: "not-used", permissions: { publish: "anon.>", subscribe: "anon.>" } }
    { user: watcher, password: pw, permissions: { subscribe: { allow: ">", deny: "data.secret" } } }
  ]
}
no_auth_user: anon
)";
  }
  static std::string connect_line(const std::string& user, const std::string& pass) {
    return "CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1,\"headers\":true,\"user\":\"" + user +
           "\",\"pass\":\"" + pass + "\"}\r\n";
  }
  bool open_as(raw_client& c, const std::string& user, const std::string& pass = "pw") {
    return c.open(port(), connect_line(user, pass)) && c.ping_pong();
  }
  // The next line, expected to be MSG ...; the payload line is consumed too.
  static std::string next_msg_line(raw_client& c) {
    auto line = c.read_line(3s);
    if (!line) return "<nothing>";
    if (line->rfind("MSG ", 0) == 0) c.read_line(3s);
    return *line;
  }
};

TEST_F(permissions, publish_deny_and_allow_lists_give_nats_server_errors_and_keep_the_connection) {
  raw_client sub, pub;
  ASSERT_TRUE(open_as(sub, "dflt"));
  ASSERT_TRUE(sub.send("SUB orders.> 1\r\nSUB other 2\r\n"));
  ASSERT_TRUE(sub.ping_pong());
  ASSERT_TRUE(open_as(pub, "pub"));
  ASSERT_TRUE(pub.send("PUB orders.internal 1\r\nx\r\n"));
  EXPECT_EQ(pub.read_line(), "-ERR 'Permissions Violation for Publish to \"orders.internal\"'\r\n");
  ASSERT_TRUE(pub.send("PUB other 1\r\nx\r\n"));
  EXPECT_EQ(pub.read_line(), "-ERR 'Permissions Violation for Publish to \"other\"'\r\n");
  ASSERT_TRUE(pub.send("PUB orders.new 2\r\nok\r\n"));
  EXPECT_TRUE(pub.ping_pong()) << "the connection must stay open after a violation";
  EXPECT_EQ(next_msg_line(sub), "MSG orders.new 1 2\r\n");  // the denied ones never arrived
  EXPECT_TRUE(sub.ping_pong());
}

TEST_F(permissions, verbose_publish_violation_has_no_ok) {
  raw_client pub;
  ASSERT_TRUE(pub.connect(port()));
  ASSERT_FALSE(pub.read_info().empty());
  ASSERT_TRUE(pub.send("CONNECT {\"verbose\":true,\"pedantic\":false,\"user\":\"pub\",\"pass\":\"pw\"}\r\n"));
  EXPECT_EQ(pub.read_line(), "+OK\r\n");
  ASSERT_TRUE(pub.send("PUB nope 1\r\nx\r\nPUB orders.x 1\r\nx\r\n"));
  EXPECT_EQ(pub.read_line(), "-ERR 'Permissions Violation for Publish to \"nope\"'\r\n");
  EXPECT_EQ(pub.read_line(), "+OK\r\n");
}

TEST_F(permissions, subscribe_rules_with_queues) {
  raw_client c;
  ASSERT_TRUE(open_as(c, "pub"));
  ASSERT_TRUE(c.send("SUB orders.audit 1\r\n"));
  EXPECT_EQ(c.read_line(), "-ERR 'Permissions Violation for Subscription to \"orders.audit\"'\r\n");
  ASSERT_TRUE(c.send("SUB elsewhere 2\r\n"));
  EXPECT_EQ(c.read_line(), "-ERR 'Permissions Violation for Subscription to \"elsewhere\"'\r\n");
  ASSERT_TRUE(c.send("SUB jobs others 3\r\n"));
  EXPECT_EQ(c.read_line(), "-ERR 'Permissions Violation for Subscription to \"jobs\" using queue \"others\"'\r\n");
  ASSERT_TRUE(c.send("SUB jobs workers 4\r\nSUB orders.new 5\r\n"));
  EXPECT_TRUE(c.ping_pong());
  // The allowed subscriptions work; the refused ones do not exist.
  ASSERT_TRUE(c.send("PUB orders.new 1\r\na\r\nPUB orders.audit 1\r\nb\r\n"));
  EXPECT_EQ(next_msg_line(c), "MSG orders.new 5 1\r\n");
  EXPECT_TRUE(c.ping_pong());
}

TEST_F(permissions, default_permissions_apply_to_users_without_their_own) {
  raw_client c;
  ASSERT_TRUE(open_as(c, "dflt"));
  ASSERT_TRUE(c.send("SUB secret.plans 1\r\n"));
  EXPECT_EQ(c.read_line(), "-ERR 'Permissions Violation for Subscription to \"secret.plans\"'\r\n");
  ASSERT_TRUE(c.send("SUB open 2\r\nPUB open 1\r\nx\r\n"));
  EXPECT_EQ(next_msg_line(c), "MSG open 2 1\r\n");
}

TEST_F(permissions, wildcard_subscription_does_not_receive_denied_subjects) {
  raw_client w, p;
  ASSERT_TRUE(open_as(w, "watcher"));
  ASSERT_TRUE(w.send("SUB data.* 1\r\n"));
  ASSERT_TRUE(w.ping_pong());
  ASSERT_TRUE(open_as(p, "dflt"));
  ASSERT_TRUE(p.send("PUB data.secret 1\r\ns\r\nPUB data.open 1\r\no\r\n"));
  ASSERT_TRUE(p.ping_pong());
  EXPECT_EQ(next_msg_line(w), "MSG data.open 1 1\r\n");
  EXPECT_TRUE(w.ping_pong());
}

TEST_F(permissions, allow_responses_lets_a_service_answer_once) {
  raw_client svc, req;
  ASSERT_TRUE(open_as(svc, "svc"));
  ASSERT_TRUE(svc.send("SUB svc.echo 1\r\n"));
  ASSERT_TRUE(svc.ping_pong());
  ASSERT_TRUE(open_as(req, "dflt"));
  ASSERT_TRUE(req.send("SUB _INBOX.r1 9\r\nPUB svc.echo _INBOX.r1 2\r\nhi\r\n"));
  ASSERT_TRUE(req.ping_pong());
  EXPECT_EQ(next_msg_line(svc), "MSG svc.echo 1 _INBOX.r1 2\r\n");
  ASSERT_TRUE(svc.send("PUB _INBOX.r1 3\r\nyes\r\n"));
  ASSERT_TRUE(svc.ping_pong());
  EXPECT_EQ(next_msg_line(req), "MSG _INBOX.r1 9 3\r\n");
  ASSERT_TRUE(svc.send("PUB _INBOX.r1 5\r\nagain\r\n"));  // max 1 response
  EXPECT_EQ(svc.read_line(), "-ERR 'Permissions Violation for Publish to \"_INBOX.r1\"'\r\n");
  ASSERT_TRUE(svc.send("PUB svc.other 1\r\nx\r\n"));  // allow_responses alone: nothing else
  EXPECT_EQ(svc.read_line(), "-ERR 'Permissions Violation for Publish to \"svc.other\"'\r\n");
  EXPECT_TRUE(svc.ping_pong());
  EXPECT_TRUE(req.ping_pong());  // the second answer never arrived
}

TEST_F(permissions, allow_responses_max_and_expiry) {
  raw_client svc, req;
  ASSERT_TRUE(open_as(svc, "svc2"));
  ASSERT_TRUE(svc.send("SUB svc.x 1\r\n"));
  ASSERT_TRUE(svc.ping_pong());
  ASSERT_TRUE(open_as(req, "dflt"));
  ASSERT_TRUE(req.send("PUB svc.x _INBOX.a 0\r\n\r\nPUB svc.x _INBOX.b 0\r\n\r\n"));
  ASSERT_TRUE(req.ping_pong());
  EXPECT_EQ(next_msg_line(svc), "MSG svc.x 1 _INBOX.a 0\r\n");
  EXPECT_EQ(next_msg_line(svc), "MSG svc.x 1 _INBOX.b 0\r\n");
  ASSERT_TRUE(svc.send("PUB _INBOX.a 0\r\n\r\nPUB _INBOX.a 0\r\n\r\nPUB _INBOX.a 0\r\n\r\n"));
  EXPECT_EQ(svc.read_line(), "-ERR 'Permissions Violation for Publish to \"_INBOX.a\"'\r\n");  // the third
  std::this_thread::sleep_for(1500ms);  // past the 1 s expiry
  ASSERT_TRUE(svc.send("PUB _INBOX.b 0\r\n\r\n"));
  EXPECT_EQ(svc.read_line(), "-ERR 'Permissions Violation for Publish to \"_INBOX.b\"'\r\n");
}

TEST_F(permissions, libnats_request_reply_through_allow_responses) {
  auto svc_opts = make_opts(url());
  natsOptions_SetUserInfo(svc_opts.get(), "svc", "pw");
  std::string err;
  auto svc = connect(svc_opts.get(), &err);
  ASSERT_TRUE(svc) << err;
  auto sub = subscribe_sync(svc.get(), "svc.time");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(svc.get()), NATS_OK);
  auto req_opts = make_opts(url());
  natsOptions_SetUserInfo(req_opts.get(), "dflt", "pw");
  auto req = connect(req_opts.get(), &err);
  ASSERT_TRUE(req) << err;
  std::thread responder([&] {
    auto m = next_msg(sub.get(), 5s);
    if (m) natsConnection_PublishString(svc.get(), natsMsg_GetReply(m.get()), "noon");
  });
  natsMsg* reply = nullptr;
  const natsStatus s = natsConnection_RequestString(&reply, req.get(), "svc.time", "?", 5000);
  responder.join();
  ASSERT_EQ(s, NATS_OK) << status_text(s);
  msg_ptr owned(reply);
  EXPECT_EQ(std::string(natsMsg_GetData(reply), natsMsg_GetDataLength(reply)), "noon");
}

TEST_F(permissions, no_auth_user_gets_that_users_permissions) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n"));
  ASSERT_TRUE(c.ping_pong());
  ASSERT_TRUE(c.send("PUB x 1\r\nx\r\n"));
  EXPECT_EQ(c.read_line(), "-ERR 'Permissions Violation for Publish to \"x\"'\r\n");
  ASSERT_TRUE(c.send("SUB anon.a 1\r\nPUB anon.a 1\r\nx\r\n"));
  EXPECT_EQ(next_msg_line(c), "MSG anon.a 1 1\r\n");
}

TEST_F(permissions, bcrypt_password_logs_in_and_wrong_one_is_refused) {
  raw_client ok;
  ASSERT_TRUE(open_as(ok, "hashed", "b-cr7pt-pw"));
  ASSERT_TRUE(ok.send("SUB any 1\r\nPUB any 1\r\nx\r\n"));
  EXPECT_EQ(next_msg_line(ok), "MSG any 1 1\r\n");
  for (const char* pass : {"b-cr7pt-pW", "", kHash}) {
    raw_client bad;
    ASSERT_TRUE(bad.open(port(), {}));
    ASSERT_TRUE(bad.send(connect_line("hashed", pass) + "PING\r\n"));
    EXPECT_EQ(bad.read_line(), "-ERR 'Authorization Violation'\r\n") << pass;
    EXPECT_TRUE(bad.read_until_closed(5s)) << pass;
  }
}

TEST_F(permissions, unknown_user_and_wrong_password_are_authorization_violations) {
  for (const auto& [user, pass] : {std::pair{"nobody", "pw"}, std::pair{"pub", "wrong"}}) {
    raw_client c;
    ASSERT_TRUE(c.open(port(), {}));
    ASSERT_TRUE(c.send(connect_line(user, pass) + "PING\r\n"));
    EXPECT_EQ(c.read_line(), "-ERR 'Authorization Violation'\r\n") << user;
    EXPECT_TRUE(c.read_until_closed(5s)) << user;
  }
  auto opts = make_opts(url());
  natsOptions_SetUserInfo(opts.get(), "pub", "wrong");
  std::string err;
  EXPECT_FALSE(connect(opts.get(), &err));
  EXPECT_NE(err.find("uthorization"), std::string::npos) << err;
}

TEST_F(permissions, silent_client_gets_authentication_timeout) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), {}));
  EXPECT_EQ(c.read_line(5s, false), "-ERR 'Authentication Timeout'\r\n");
  EXPECT_TRUE(c.read_until_closed(5s));
}

}  // namespace
}  // namespace peregrine::test
