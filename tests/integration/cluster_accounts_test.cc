// Accounts across routes (cluster_users_fixture.h): three servers with the same accounts, clients
// of different accounts on different servers. Subjects stay per account across the cluster;
// pub/sub, queue groups and request/reply work per account; a stream import and a service import
// work whichever server the exporter's and the importer's clients are on. Then the same across a
// mixed pair with nats-server 2.9.10.
#include "tests/integration/cluster_users_fixture.h"

namespace peregrine::test {
namespace {

// SVC exports a stream and a service; APP imports both (the stream under "svc."); OTHER
// imports nothing. Plain clients (no credentials) are G in $G, so wait_mesh() can connect.
const char* kAccounts = R"(
accounts {
  SVC: {
    users: [ { user: svc, password: ps } ]
    exports: [ { stream: "feed.>" }, { service: "help.>" } ]
  }
  APP: {
    users: [ { user: app, password: pa } ]
    imports: [
      { stream: { account: SVC, subject: "feed.>" }, prefix: "svc" }
      { service: { account: SVC, subject: "help.>" } }
    ]
  }
  OTHER: { users: [ { user: other, password: po } ] }
}
authorization { users: [ { user: g, password: pg } ] }
no_auth_user: g
)";

void echo_cb(natsConnection* nc, natsSubscription*, natsMsg* msg, void* tag) {
  if (natsMsg_GetReply(msg)) {
    const std::string body = std::string(static_cast<const char*>(tag)) + ":" + data_of(msg);
    natsConnection_PublishString(nc, natsMsg_GetReply(msg), body.c_str());
  }
  natsMsg_Destroy(msg);
}

std::string request(natsConnection* nc, const char* subject, const char* body, natsStatus* status = nullptr) {
  natsMsg* reply = nullptr;
  const natsStatus s = natsConnection_RequestString(&reply, nc, subject, body, 5000);
  if (status) *status = s;
  msg_ptr r(reply);
  return s == NATS_OK ? data_of(r.get()) : "<" + status_text(s) + ">";
}

class cluster_accounts : public cluster_with_users {
 protected:
  void SetUp() override { start_three(kAccounts); }
};

TEST_F(cluster_accounts, subjects_stay_in_their_account_across_servers) {
  auto app0 = connect_as(url(0), "app", "pa");
  auto other0 = connect_as(url(0), "other", "po");
  auto g0 = connect(url(0));
  auto app2 = connect_as(url(2), "app", "pa");
  auto other2 = connect_as(url(2), "other", "po");
  ASSERT_TRUE(app0 && other0 && g0 && app2 && other2);
  auto on_app = subscribe_sync(app0.get(), "x.>");
  auto on_other = subscribe_sync(other0.get(), "x.>");
  auto on_g = subscribe_sync(g0.get(), "x.>");
  ASSERT_TRUE(on_app && on_other && on_g);
  ASSERT_TRUE(wait_interest(app0.get(), app2.get()));
  ASSERT_TRUE(wait_interest(other0.get(), other2.get()));
  ASSERT_EQ(natsConnection_PublishString(app2.get(), "x.app", "a"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(other2.get(), "x.other", "o"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(app2.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(other2.get()), NATS_OK);
  auto m = next_msg(on_app.get(), 5s);
  ASSERT_TRUE(m) << logs();
  EXPECT_STREQ(natsMsg_GetSubject(m.get()), "x.app");
  auto n = next_msg(on_other.get(), 5s);
  ASSERT_TRUE(n);
  EXPECT_STREQ(natsMsg_GetSubject(n.get()), "x.other");
  EXPECT_FALSE(next_msg(on_app.get(), 300ms)) << "APP saw another account's message";
  EXPECT_FALSE(next_msg(on_other.get(), 50ms)) << "OTHER saw another account's message";
  EXPECT_FALSE(next_msg(on_g.get(), 50ms)) << "$G saw an account's message";
}

TEST_F(cluster_accounts, queue_groups_and_requests_per_account_across_servers) {
  auto app0 = connect_as(url(0), "app", "pa");
  auto app1 = connect_as(url(1), "app", "pa");
  auto app2 = connect_as(url(2), "app", "pa");
  auto other2 = connect_as(url(2), "other", "po");
  ASSERT_TRUE(app0 && app1 && app2 && other2);
  auto m0 = subscribe_sync(app0.get(), "jobs", "w");
  auto m2 = subscribe_sync(app2.get(), "jobs", "w");
  auto decoy = subscribe_sync(other2.get(), "jobs", "w");  // same group name, other account
  ASSERT_TRUE(m0 && m2 && decoy);
  ASSERT_TRUE(wait_interest(app0.get(), app1.get()));
  ASSERT_TRUE(wait_interest(app2.get(), app1.get()));
  constexpr int kMsgs = 100;
  for (int i = 0; i < kMsgs; ++i)
    ASSERT_EQ(natsConnection_PublishString(app1.get(), "jobs", std::to_string(i).c_str()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(app1.get()), NATS_OK);
  std::set<std::string> seen;
  int on0 = 0, on2 = 0;
  const auto deadline = clock_type::now() + 10s;
  while (int(seen.size()) < kMsgs && clock_type::now() < deadline) {
    while (auto m = next_msg(m0.get(), 1ms)) on0 += seen.insert(data_of(m.get())).second ? 1 : 1000;
    while (auto m = next_msg(m2.get(), 1ms)) on2 += seen.insert(data_of(m.get())).second ? 1 : 1000;
  }
  EXPECT_EQ(int(seen.size()), kMsgs);
  EXPECT_EQ(on0 + on2, kMsgs) << "a message went to two members";
  EXPECT_GT(on0, 0);
  EXPECT_GT(on2, 0);
  EXPECT_FALSE(next_msg(decoy.get(), 200ms)) << "OTHER's group got APP's message";
  // Request/reply inside APP: responder on C, requester on A.
  natsSubscription* raw = nullptr;
  static const char kTag[] = "app";
  ASSERT_EQ(natsConnection_Subscribe(&raw, app2.get(), "ask.app", echo_cb, const_cast<char*>(kTag)), NATS_OK);
  sub_ptr responder(raw);
  ASSERT_TRUE(wait_interest(app2.get(), app0.get()));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(request(app0.get(), "ask.app", "q"), "app:q") << i;
  natsStatus st = NATS_OK;
  auto other0 = connect_as(url(0), "other", "po");
  ASSERT_TRUE(other0);
  request(other0.get(), "ask.app", "q", &st);  // APP's responder is not OTHER's
  EXPECT_EQ(st, NATS_NO_RESPONDERS);
}

TEST_F(cluster_accounts, stream_import_delivers_the_exporters_messages_on_every_server_once) {
  auto app0 = connect_as(url(0), "app", "pa");
  auto app2 = connect_as(url(2), "app", "pa");
  auto svc0 = connect_as(url(0), "svc", "ps");
  auto svc2 = connect_as(url(2), "svc", "ps");
  ASSERT_TRUE(app0 && app2 && svc0 && svc2);
  auto imported0 = subscribe_sync(app0.get(), "svc.feed.>");
  auto imported2 = subscribe_sync(app2.get(), "svc.feed.*");
  auto own0 = subscribe_sync(svc0.get(), "feed.>");  // the exporter's own subscriber
  ASSERT_TRUE(imported0 && imported2 && own0);
  ASSERT_TRUE(wait_interest(app0.get(), app2.get()));  // behind APP's RS+ went SVC's shadow RS+
  ASSERT_TRUE(wait_interest(svc0.get(), svc2.get()));
  ASSERT_TRUE(wait_interest(app2.get(), app0.get()));
  // Published on C in SVC: A's importer and exporter, and C's importer, each once.
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(natsConnection_PublishString(svc2.get(), ("feed." + std::to_string(i)).c_str(), "f"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(svc2.get()), NATS_OK);
  for (natsSubscription* s : {imported0.get(), imported2.get()}) {
    for (int i = 0; i < 5; ++i) {
      auto m = next_msg(s, 5s);
      ASSERT_TRUE(m) << i << logs();
      EXPECT_EQ(std::string(natsMsg_GetSubject(m.get())), "svc.feed." + std::to_string(i));
    }
  }
  for (int i = 0; i < 5; ++i) {
    auto m = next_msg(own0.get(), 5s);
    ASSERT_TRUE(m) << i;
    EXPECT_EQ(std::string(natsMsg_GetSubject(m.get())), "feed." + std::to_string(i));
  }
  EXPECT_FALSE(next_msg(imported0.get(), 300ms)) << "an imported message arrived twice";
  EXPECT_FALSE(next_msg(imported2.get(), 50ms)) << "an imported message arrived twice";
  EXPECT_FALSE(next_msg(own0.get(), 50ms));
  // The import is one-way: APP's own "feed.x" is not SVC's.
  ASSERT_EQ(natsConnection_PublishString(app2.get(), "feed.from_app", "no"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(app2.get()), NATS_OK);
  EXPECT_FALSE(next_msg(own0.get(), 300ms)) << "the importer's message reached the exporter";
}

TEST_F(cluster_accounts, service_import_answers_from_another_server) {
  auto svc2 = connect_as(url(2), "svc", "ps");
  auto app0 = connect_as(url(0), "app", "pa");
  auto app2 = connect_as(url(2), "app", "pa");
  auto other0 = connect_as(url(0), "other", "po");
  ASSERT_TRUE(svc2 && app0 && app2 && other0);
  natsSubscription* raw = nullptr;
  static const char kTag[] = "svc";
  ASSERT_EQ(natsConnection_Subscribe(&raw, svc2.get(), "help.>", echo_cb, const_cast<char*>(kTag)), NATS_OK);
  sub_ptr responder(raw);
  auto svc0 = connect_as(url(0), "svc", "ps");
  ASSERT_TRUE(svc0);
  ASSERT_TRUE(wait_interest(svc2.get(), svc0.get()));
  // The request is mapped on A into SVC, answered on C, and the answer comes back to A.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(request(app0.get(), "help.me", "q"), "svc:q") << i << logs();
  EXPECT_EQ(request(app2.get(), "help.local", "l"), "svc:l");  // the responder's own server
  natsStatus st = NATS_OK;
  request(other0.get(), "help.me", "q", &st);  // OTHER imports nothing
  EXPECT_EQ(st, NATS_NO_RESPONDERS);
}

// A Peregrine server and nats-server 2.9.10 with the same accounts: the account forms of
// RS+/RMSG and the importer's-side import processing must be nats-server's.
class mixed_cluster_accounts : public cluster {
 protected:
  void SetUp() override { start_mixed_pair(kAccounts); }
};

TEST_F(mixed_cluster_accounts, accounts_imports_and_isolation_both_ways) {
  for (int exporter = 0; exporter < 2; ++exporter) {
    const int importer = 1 - exporter;
    SCOPED_TRACE("exporter on " + std::string(exporter == 0 ? "peregrine" : "nats-server"));
    auto svc = connect_as(url(exporter), "svc", "ps");
    auto svc_far = connect_as(url(importer), "svc", "ps");
    auto app = connect_as(url(importer), "app", "pa");
    auto app_far = connect_as(url(exporter), "app", "pa");
    auto other = connect_as(url(importer), "other", "po");
    ASSERT_TRUE(svc && svc_far && app && app_far && other);
    auto imported = subscribe_sync(app.get(), "svc.feed.>");
    auto app_plain = subscribe_sync(app.get(), "plain.>");
    auto other_plain = subscribe_sync(other.get(), "plain.>");
    ASSERT_TRUE(imported && app_plain && other_plain);
    natsSubscription* raw = nullptr;
    static const char kTag[] = "svc";
    ASSERT_EQ(natsConnection_Subscribe(&raw, svc.get(), "help.>", echo_cb, const_cast<char*>(kTag)), NATS_OK);
    sub_ptr responder(raw);
    ASSERT_TRUE(wait_interest(app.get(), app_far.get()));
    ASSERT_TRUE(wait_interest(svc.get(), svc_far.get()));
    ASSERT_EQ(natsConnection_PublishString(svc.get(), "feed.1", "f"), NATS_OK);
    ASSERT_EQ(natsConnection_PublishString(app_far.get(), "plain.1", "p"), NATS_OK);
    ASSERT_EQ(natsConnection_Flush(svc.get()), NATS_OK);
    ASSERT_EQ(natsConnection_Flush(app_far.get()), NATS_OK);
    auto m = next_msg(imported.get(), 5s);
    ASSERT_TRUE(m) << logs();
    EXPECT_STREQ(natsMsg_GetSubject(m.get()), "svc.feed.1");
    EXPECT_FALSE(next_msg(imported.get(), 300ms)) << "the imported message arrived twice";
    auto p = next_msg(app_plain.get(), 5s);
    ASSERT_TRUE(p);
    EXPECT_FALSE(next_msg(other_plain.get(), 200ms)) << "OTHER saw APP's message";
    for (int i = 0; i < 5; ++i) EXPECT_EQ(request(app.get(), "help.me", "q"), "svc:q") << i << logs();
  }
}

}  // namespace
}  // namespace peregrine::test
