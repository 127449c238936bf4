// The system account across a cluster (cluster_users_fixture.h): the servers' own subscriptions in
// $SYS are route interest, as nats-server's are, so a $SYS.REQ.SERVER.PING made on one server is
// answered by every server of the cluster, and a server's events reach system-account subscribers
// on the others. Three Peregrine servers (or three nats-server 2.9.10 with PEREGRINE_SERVER_BIN
// pointing at it: cluster_system_nats_server), then a mixed pair.
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/cluster_users_fixture.h"

namespace peregrine::test {
namespace {

using json = nlohmann::json;

const char* kSys = R"(
accounts {
  $SYS { users: [ { user: sys, password: ps } ] }
  A { users: [ { user: a, password: pa } ] }
}
authorization { users: [ { user: g, password: pg } ] }
no_auth_user: g
)";

// The server ids answering one request on `subject` (each answer's server.id), gathered for
// `window`.
std::set<std::string> answering(natsConnection* nc, const std::string& subject, std::chrono::milliseconds window,
                                std::string* sample = nullptr) {
  std::set<std::string> ids;
  char inbox[64];
  snprintf(inbox, sizeof inbox, "_INBOX.sysping.%d", rand());
  auto sub = subscribe_sync(nc, inbox);
  if (!sub) return ids;
  if (natsConnection_PublishRequestString(nc, subject.c_str(), inbox, "") != NATS_OK) return ids;
  natsConnection_Flush(nc);
  const auto deadline = clock_type::now() + window;
  while (clock_type::now() < deadline) {
    auto m = next_msg(sub.get(), 100ms);
    if (!m) continue;
    const auto j = json::parse(data_of(m.get()), nullptr, false);
    if (j.is_object() && j.contains("server")) ids.insert(j["server"].value("id", ""));
    if (sample) *sample = data_of(m.get());
  }
  return ids;
}

// Repeats the request until `want` servers answer it (the routes' interest settles after the
// mesh forms); the last round's answers.
std::set<std::string> answering_all(natsConnection* nc, const std::string& subject, std::size_t want,
                                    std::string* sample = nullptr) {
  std::set<std::string> ids;
  const auto deadline = clock_type::now() + 20s;
  while (clock_type::now() < deadline && ids.size() < want) ids = answering(nc, subject, 700ms, sample);
  return ids;
}

class cluster_system : public cluster_with_users {
 protected:
  void SetUp() override { start_three(kSys); }
};

TEST_F(cluster_system, server_ping_is_answered_by_every_server) {
  auto sys = connect_as(url(0), "sys", "ps");
  ASSERT_TRUE(sys);
  std::string sample;
  const auto ids = answering_all(sys.get(), "$SYS.REQ.SERVER.PING", 3, &sample);
  EXPECT_EQ(ids.size(), 3u) << sample << logs();
  const auto j = json::parse(sample, nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j.contains("statsz")) << sample;
  // An endpoint too, from another server's client.
  auto sys_c = connect_as(url(2), "sys", "ps");
  ASSERT_TRUE(sys_c);
  EXPECT_EQ(answering_all(sys_c.get(), "$SYS.REQ.SERVER.PING.VARZ", 3).size(), 3u);
  // Each server by its id, from a client on another server: exactly that one answers.
  for (const auto& id : ids) EXPECT_EQ(answering(sys.get(), "$SYS.REQ.SERVER." + id + ".VARZ", 700ms),
                                       std::set<std::string>{id});
}

TEST_F(cluster_system, other_accounts_do_not_reach_the_cluster_wide_ping) {
  auto a = connect_as(url(0), "a", "pa");
  ASSERT_TRUE(a);
  // Wait until the system account's interest is known on A (the sys user's PING answers 3).
  auto sys = connect_as(url(0), "sys", "ps");
  ASSERT_TRUE(sys);
  ASSERT_EQ(answering_all(sys.get(), "$SYS.REQ.SERVER.PING", 3).size(), 3u) << logs();
  EXPECT_TRUE(answering(a.get(), "$SYS.REQ.SERVER.PING.VARZ", 500ms).empty());
}

TEST_F(cluster_system, connect_events_reach_the_system_account_on_other_servers) {
  auto sys = connect_as(url(1), "sys", "ps");
  ASSERT_TRUE(sys);
  auto sub = subscribe_sync(sys.get(), "$SYS.ACCOUNT.A.CONNECT");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(sys.get()), NATS_OK);
  auto probe = connect_as(url(0), "sys", "ps");
  ASSERT_TRUE(probe && wait_interest(sys.get(), probe.get()));
  auto a = connect_as(url(0), "a", "pa");
  ASSERT_TRUE(a);
  auto m = next_msg(sub.get(), 5s);
  ASSERT_TRUE(m) << logs();
  const auto j = json::parse(data_of(m.get()), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["client"]["acc"], "A");
  EXPECT_EQ(j["server"]["name"], "A");
}

// A Peregrine server and nats-server 2.9.10 in one cluster: each one's PING is answered by both.
class mixed_cluster_system : public cluster {
 protected:
  void SetUp() override { start_mixed_pair(kSys); }
};

TEST_F(mixed_cluster_system, server_ping_is_answered_by_both_servers) {
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i == 0 ? "asked on peregrine" : "asked on nats-server");
    auto sys = connect_as(url(i), "sys", "ps");
    ASSERT_TRUE(sys);
    std::string sample;
    EXPECT_EQ(answering_all(sys.get(), "$SYS.REQ.SERVER.PING", 2, &sample).size(), 2u) << sample << logs();
    EXPECT_EQ(answering_all(sys.get(), "$SYS.REQ.SERVER.PING.HEALTHZ", 2).size(), 2u) << logs();
  }
}

}  // namespace
}  // namespace peregrine::test
