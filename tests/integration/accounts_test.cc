// Accounts for core NATS: subjects are isolated per account; stream exports/imports (with a
// prefix) and service exports/imports (renamed, replies routed back). Runs against nats-server
// 2.9.10 as well (accounts_nats_server).
#include <cstring>
#include <sstream>
#include <string>
#include <vector>
#include <thread>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;

class accounts : public server_test {
 protected:
  std::string extra_conf() const override {
    return R"(
accounts {
  A: {
    users: [ { user: a, password: pa }, { user: a2, password: pa } ]
    default_permissions: { publish: { deny: "a.denied" } }
    exports: [ { stream: "feed.>" }, { service: "help.>" }, { service: "only.c", accounts: [C] } ]
  }
  B: {
    users: [ { user: b, password: pb } ]
    imports: [
      { stream: { account: A, subject: "feed.>" }, prefix: "from_a" }
      { service: { account: A, subject: "help.>" } }
    ]
  }
  C: {
    users: [ { user: c, password: pc } ]
    imports: [ { service: { account: A, subject: "only.c" }, to: "ask.a" },
               { stream: { account: A, subject: "feed.*.>" }, to: "c_feed.*.x.>" } ]
  }
}
authorization {
  default_permissions: { publish: { deny: "g.denied" } }
  users: [ { user: g, password: pg } ]
}
)";
  }
  static std::string login(const std::string& user, const std::string& pass) {
    return "CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1,\"headers\":true,\"user\":\"" + user +
           "\",\"pass\":\"" + pass + "\"}\r\n";
  }
  bool open_as(raw_client& c, const std::string& user, const std::string& pass) {
    return c.open(port(), login(user, pass)) && c.ping_pong();
  }
  // "MSG <subject> <sid> [reply] <n>": the subject, sid and reply fields; payload consumed.
  static std::string msg_head(raw_client& c) {
    auto line = c.read_line(3s);
    if (!line) return "<nothing>";
    if (line->rfind("MSG ", 0) == 0) c.read_line(3s);
    return *line;
  }
};

TEST_F(accounts, subjects_are_isolated_per_account) {
  raw_client a, a2, b, g;
  ASSERT_TRUE(open_as(a, "a", "pa"));
  ASSERT_TRUE(open_as(a2, "a2", "pa"));
  ASSERT_TRUE(open_as(b, "b", "pb"));
  ASSERT_TRUE(open_as(g, "g", "pg"));
  for (raw_client* c : {&a, &b, &g}) {
    ASSERT_TRUE(c->send("SUB >  1\r\n"));
    ASSERT_TRUE(c->ping_pong());
  }
  ASSERT_TRUE(a2.send("PUB private.x 2\r\nhi\r\n"));
  ASSERT_TRUE(a2.ping_pong());
  EXPECT_EQ(msg_head(a), "MSG private.x 1 2\r\n");  // same account: delivered
  ASSERT_TRUE(g.send("PUB global.x 1\r\ng\r\nPING\r\n"));
  EXPECT_EQ(msg_head(g), "MSG global.x 1 1\r\n");
  EXPECT_EQ(g.read_line(), "PONG\r\n");
  EXPECT_TRUE(b.ping_pong()) << "account B saw another account's message";
  EXPECT_TRUE(a.ping_pong()) << "account A saw the global account's message";
}

TEST_F(accounts, subscriptions_of_a_closed_client_leave_its_accounts_sublist) {
  {
    raw_client gone;
    ASSERT_TRUE(open_as(gone, "a2", "pa"));
    ASSERT_TRUE(gone.send("SUB x.> 1\r\nSUB feed.> 2\r\n"));
    ASSERT_TRUE(gone.ping_pong());
  }
  raw_client probe;
  ASSERT_TRUE(open_as(probe, "a2", "pa"));  // a PONG here means the close was processed...
  std::this_thread::sleep_for(100ms);        // ... on its shard (with 2 shards, maybe another)
  raw_client a, b;
  ASSERT_TRUE(open_as(a, "a", "pa"));
  ASSERT_TRUE(open_as(b, "b", "pb"));
  ASSERT_TRUE(b.send("SUB from_a.> 1\r\n"));
  ASSERT_TRUE(b.ping_pong());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(a.send("PUB x.y 1\r\nx\r\nPUB feed.y 1\r\nf\r\n"));
  ASSERT_TRUE(a.ping_pong()) << "the server must survive publishes to a closed client's subjects";
  for (int i = 0; i < 20; ++i) EXPECT_EQ(msg_head(b), "MSG from_a.feed.y 1 1\r\n");
  EXPECT_TRUE(b.ping_pong());
}

TEST_F(accounts, default_permissions_belong_to_their_block) {
  raw_client a, g;
  ASSERT_TRUE(open_as(a, "a", "pa"));
  ASSERT_TRUE(open_as(g, "g", "pg"));
  // The authorization block's defaults are for its own users, not the accounts' users.
  ASSERT_TRUE(a.send("PUB g.denied 0\r\n\r\nPUB a.denied 0\r\n\r\n"));
  EXPECT_EQ(a.read_line(), "-ERR 'Permissions Violation for Publish to \"a.denied\"'\r\n");
  EXPECT_TRUE(a.ping_pong());
  ASSERT_TRUE(g.send("PUB a.denied 0\r\n\r\nPUB g.denied 0\r\n\r\n"));
  EXPECT_EQ(g.read_line(), "-ERR 'Permissions Violation for Publish to \"g.denied\"'\r\n");
  EXPECT_TRUE(g.ping_pong());
}

TEST_F(accounts, stream_import_delivers_under_the_prefix) {
  raw_client a, b;
  ASSERT_TRUE(open_as(a, "a", "pa"));
  ASSERT_TRUE(open_as(b, "b", "pb"));
  ASSERT_TRUE(b.send("SUB from_a.feed.> 1\r\nSUB feed.> 2\r\n"));
  ASSERT_TRUE(b.ping_pong());
  ASSERT_TRUE(a.send("PUB feed.prices 3\r\n100\r\nPUB other 1\r\nx\r\n"));
  ASSERT_TRUE(a.ping_pong());
  EXPECT_EQ(msg_head(b), "MSG from_a.feed.prices 1 3\r\n");
  EXPECT_TRUE(b.ping_pong());  // nothing on B's own feed.> and nothing unexported
  // The import is one way: B publishing feed.x stays in B.
  ASSERT_TRUE(a.send("SUB feed.> 1\r\n"));
  ASSERT_TRUE(a.ping_pong());
  ASSERT_TRUE(b.send("PUB feed.x 1\r\nb\r\nPING\r\n"));
  EXPECT_EQ(msg_head(b), "MSG feed.x 2 1\r\n");
  EXPECT_EQ(b.read_line(), "PONG\r\n");
  EXPECT_TRUE(a.ping_pong());
}

// A stream import's `to` with wildcards: each takes what the subject's matched, by position.
TEST_F(accounts, stream_import_renamed_with_wildcards) {
  raw_client a, c;
  ASSERT_TRUE(open_as(a, "a", "pa"));
  ASSERT_TRUE(open_as(c, "c", "pc"));
  ASSERT_TRUE(c.send("SUB c_feed.> 1\r\n"));
  ASSERT_TRUE(c.ping_pong());
  ASSERT_TRUE(a.send("PUB feed.prices.eu.fr 3\r\n100\r\nPUB feed.flat 1\r\nx\r\n"));
  ASSERT_TRUE(a.ping_pong());
  EXPECT_EQ(msg_head(c), "MSG c_feed.prices.x.eu.fr 1 3\r\n");
  EXPECT_TRUE(c.ping_pong());  // feed.flat has no token for the `>`: not imported
}

TEST_F(accounts, service_import_routes_requests_and_replies_back) {
  auto svc_opts = make_opts(url());
  natsOptions_SetUserInfo(svc_opts.get(), "a", "pa");
  std::string err;
  auto svc = connect(svc_opts.get(), &err);
  ASSERT_TRUE(svc) << err;
  auto sub = subscribe_sync(svc.get(), "help.>");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(svc.get()), NATS_OK);
  auto req_opts = make_opts(url());
  natsOptions_SetUserInfo(req_opts.get(), "b", "pb");
  auto req = connect(req_opts.get(), &err);
  ASSERT_TRUE(req) << err;
  std::string seen_subject;
  std::thread responder([&] {
    for (int i = 0; i < 2; ++i) {
      auto m = next_msg(sub.get(), 5s);
      if (!m) return;
      seen_subject = natsMsg_GetSubject(m.get());
      natsConnection_PublishString(svc.get(), natsMsg_GetReply(m.get()), ("re:" + seen_subject).c_str());
    }
  });
  for (const char* subject : {"help.me", "help.you"}) {
    natsMsg* reply = nullptr;
    const natsStatus s = natsConnection_RequestString(&reply, req.get(), subject, "?", 5000);
    ASSERT_EQ(s, NATS_OK) << subject << ": " << status_text(s);
    msg_ptr owned(reply);
    EXPECT_EQ(std::string(natsMsg_GetData(reply), natsMsg_GetDataLength(reply)), std::string("re:") + subject);
  }
  responder.join();
}

TEST_F(accounts, renamed_service_import_and_export_restricted_to_an_account) {
  raw_client a, c, b;
  ASSERT_TRUE(open_as(a, "a", "pa"));
  ASSERT_TRUE(a.send("SUB only.c 1\r\n"));
  ASSERT_TRUE(a.ping_pong());
  ASSERT_TRUE(open_as(c, "c", "pc"));
  ASSERT_TRUE(c.send("SUB _INBOX.c1 7\r\nPUB ask.a _INBOX.c1 3\r\nq?c\r\n"));
  ASSERT_TRUE(c.ping_pong());
  auto line = a.read_line(3s);
  ASSERT_TRUE(line.has_value());
  // Under the exported name. (nats-server 2.9 adds a Nats-Request-Info header: HMSG.)
  const bool hmsg = line->rfind("HMSG only.c 1 ", 0) == 0;
  ASSERT_TRUE(hmsg || line->rfind("MSG only.c 1 ", 0) == 0) << *line;
  const std::string rest = line->substr(line->find(" 1 ") + 3);
  const std::string reply = rest.substr(0, rest.find(' '));
  EXPECT_NE(reply, "_INBOX.c1") << "the requester's inbox must not leak into the exporter's namespace";
  const std::size_t total = std::stoul(line->substr(line->rfind(' ') + 1));
  ASSERT_TRUE(a.read_bytes(total + 2, 3s));
  ASSERT_TRUE(a.send("PUB " + reply + " 2\r\nok\r\n"));
  ASSERT_TRUE(a.ping_pong());
  EXPECT_EQ(msg_head(c), "MSG _INBOX.c1 7 2\r\n");
  // B did not import only.c: publishing it stays in B.
  ASSERT_TRUE(open_as(b, "b", "pb"));
  ASSERT_TRUE(b.send("PUB only.c 1\r\nx\r\nPUB ask.a 1\r\nx\r\n"));
  ASSERT_TRUE(b.ping_pong());
  EXPECT_TRUE(a.ping_pong()) << "a request from an account the export does not name arrived";
}

TEST_F(accounts, request_through_an_import_without_responder_times_out) {
  auto opts = make_opts(url());
  natsOptions_SetUserInfo(opts.get(), "b", "pb");
  std::string err;
  auto req = connect(opts.get(), &err);
  ASSERT_TRUE(req) << err;
  natsMsg* reply = nullptr;
  const natsStatus s = natsConnection_RequestString(&reply, req.get(), "help.nobody", "?", 3000);
  if (reply) natsMsg_Destroy(reply);
  // The import is interest (as nats-server 2.9.10): the request times out instead of a 503.
  EXPECT_EQ(s, NATS_TIMEOUT) << status_text(s);
}

// Service exports' response_type (nats-server's rules): a Singleton import passes one response,
// Stream and Chunked pass responses until an empty one (which passes) ends them; none of them
// after the export's response_threshold.
class response_types : public accounts {
 protected:
  std::string extra_conf() const override {
    return R"(
accounts {
  A: {
    users: [ { user: a, password: pa } ]
    exports: [ { service: "single" }, { service: "strm", response_type: stream },
               { service: "chk", response_type: Chunked }, { service: "late", response_type: stream, response_threshold: "300ms" } ]
  }
  B: {
    users: [ { user: b, password: pb } ]
    imports: [ { service: { account: A, subject: "single" } }, { service: { account: A, subject: "strm" } },
               { service: { account: A, subject: "chk" } }, { service: { account: A, subject: "late" } } ]
  }
}
)";
  }
  // The payloads B's requester gets when A's responder answers r1, r2, "" and r4 to one request.
  std::vector<std::string> answers(raw_client& responder, raw_client& requester, const std::string& subject,
                                   std::chrono::milliseconds delay = 0ms) {
    std::vector<std::string> got;
    if (!requester.send("PUB " + subject + " inbox." + subject + " 1\r\nq\r\n")) return got;
    auto line = responder.read_line(3s);
    const bool hmsg = line && line->rfind("HMSG " + subject + " ", 0) == 0;  // nats-server adds Nats-Request-Info
    if (!line || (!hmsg && line->rfind("MSG " + subject + " ", 0) != 0)) return {"<no request: " + line.value_or("") + ">"};
    std::istringstream head(*line);
    std::string op, subj, sid, reply;
    std::size_t size = 0;
    head >> op >> subj >> sid >> reply;
    if (hmsg) head >> size;  // the header length, then the total
    head >> size;
    responder.read_bytes(size + 2, 3s);
    std::this_thread::sleep_for(delay);  // past the threshold on purpose
    std::string out;
    for (const char* body : {"r1", "r2", "", "r4"})
      out += "PUB " + reply + " " + std::to_string(strlen(body)) + "\r\n" + body + "\r\n";
    if (!responder.send(out) || !responder.ping_pong()) return {"<responder failed>"};
    if (!requester.send("PING\r\n")) return got;
    for (;;) {  // the answers come before the PONG (after they went through the server)
      auto l = requester.read_line(3s);
      if (!l || *l == "PONG\r\n") break;
      if (l->rfind("MSG ", 0) == 0) {
        auto body = requester.read_line(3s);
        got.push_back(body ? body->substr(0, body->size() - 2) : "<cut>");
      }
    }
    return got;
  }
};

TEST_F(response_types, each_export_passes_the_responses_its_type_allows) {
  raw_client a, b;
  ASSERT_TRUE(open_as(a, "a", "pa"));
  ASSERT_TRUE(open_as(b, "b", "pb"));
  ASSERT_TRUE(a.send("SUB single 1\r\nSUB strm 2\r\nSUB chk 3\r\nSUB late 4\r\n"));
  ASSERT_TRUE(a.ping_pong());
  ASSERT_TRUE(b.send("SUB inbox.* 9\r\n"));
  ASSERT_TRUE(b.ping_pong());
  EXPECT_EQ(answers(a, b, "single"), (std::vector<std::string>{"r1"}));
  EXPECT_EQ(answers(a, b, "strm"), (std::vector<std::string>{"r1", "r2", ""}));
  EXPECT_EQ(answers(a, b, "chk"), (std::vector<std::string>{"r1", "r2", ""}));
  EXPECT_EQ(answers(a, b, "late", 1500ms), (std::vector<std::string>{}));
}

TEST(response_type_config, unknown_type_and_bad_threshold_are_config_errors) {
  if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set";
  server_process bad_type("accounts { A { exports: [ { service: x, response_type: bogus } ] } }\n");
  EXPECT_FALSE(bad_type.start());
  const std::string type_text = bad_type.error() + bad_type.log();
  EXPECT_NE(type_text.find("Unknown response type: \"bogus\""), std::string::npos) << type_text;
  server_process bad_threshold("accounts { A { exports: [ { service: x, response_threshold: soon } ] } }\n");
  EXPECT_FALSE(bad_threshold.start());
  const std::string threshold_text = bad_threshold.error() + bad_threshold.log();
  EXPECT_NE(threshold_text.find("response threshold"), std::string::npos) << threshold_text;
}

}  // namespace
}  // namespace peregrine::test
