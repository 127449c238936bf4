// The system account ($SYS): a user placed in it asks the server for its monitoring data over
// NATS ($SYS.REQ.SERVER.PING..., $SYS.REQ.SERVER.<id>...), answered as nats-server 2.9 does:
// {"server": ServerInfo, "data": ...} (or "statsz"). Users of other accounts do not reach
// these services. Runs against nats-server 2.9.10 as well (system_account_nats_server).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/raw_client.h"
#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::ordered_json;

class system_account : public server_test {
 protected:
  std::string extra_conf() const override {
    return R"(
accounts {
  $SYS { users: [ { user: sys, password: ps } ] }
  A { users: [ { user: a, password: pa } ] }
}
)";
  }
  nc_ptr open_as(const std::string& user, const std::string& pass) {
    auto o = make_opts(url());
    natsOptions_SetUserInfo(o.get(), user.c_str(), pass.c_str());
    std::string err;
    auto nc = connect(o.get(), &err);
    EXPECT_TRUE(nc) << err;
    return nc;
  }
  // The reply to a request as JSON (null when none came).
  static json ask(natsConnection* nc, const std::string& subject, const std::string& body = "",
                  natsStatus* status = nullptr, int timeout_ms = 5000) {
    natsMsg* reply = nullptr;
    const natsStatus s = natsConnection_RequestString(&reply, nc, subject.c_str(), body.c_str(), timeout_ms);
    if (status) *status = s;
    if (s != NATS_OK) return nullptr;
    msg_ptr owned(reply);
    return json::parse(std::string(natsMsg_GetData(reply), natsMsg_GetDataLength(reply)), nullptr, false);
  }
  static std::vector<std::string> keys(const json& j) {
    std::vector<std::string> k;
    for (const auto& [key, v] : j.items()) k.push_back(key);
    return k;
  }
};

TEST_F(system_account, ping_varz_answers_with_server_info_and_varz) {
  auto sys = open_as("sys", "ps");
  ASSERT_TRUE(sys);
  const json r = ask(sys.get(), "$SYS.REQ.SERVER.PING.VARZ");
  ASSERT_TRUE(r.is_object()) << r.dump();
  // ServerInfo in nats-server's field order (no cluster, domain or tags configured).
  EXPECT_EQ(keys(r["server"]), (std::vector<std::string>{"name", "host", "id", "ver", "seq", "jetstream", "time"}));
  EXPECT_EQ(keys(r), (std::vector<std::string>{"server", "data"}));
  const json& d = r["data"];
  EXPECT_EQ(d["server_id"], r["server"]["id"]);
  EXPECT_EQ(d["port"], port());
  EXPECT_EQ(d["system_account"], "$SYS");
  EXPECT_EQ(d["version"], r["server"]["ver"]);
  EXPECT_GE(d["connections"].get<int>(), 1);
  EXPECT_EQ(r["server"]["jetstream"], false);
}

TEST_F(system_account, ping_without_endpoint_answers_statsz) {
  auto sys = open_as("sys", "ps");
  ASSERT_TRUE(sys);
  const json r = ask(sys.get(), "$SYS.REQ.SERVER.PING");
  ASSERT_TRUE(r.is_object()) << r.dump();
  EXPECT_EQ(keys(r), (std::vector<std::string>{"server", "statsz"}));
  const json& s = r["statsz"];
  EXPECT_EQ(keys(s), (std::vector<std::string>{"start", "mem", "cores", "cpu", "connections", "total_connections",
                                               "active_accounts", "subscriptions", "sent", "received",
                                               "slow_consumers", "active_servers"}));
  EXPECT_GE(s["connections"].get<int>(), 1);
  EXPECT_EQ(s["active_servers"], 1);
  EXPECT_EQ(keys(s["sent"]), (std::vector<std::string>{"msgs", "bytes"}));
  // The same by the server's id.
  const json by_id = ask(sys.get(), "$SYS.REQ.SERVER." + r["server"]["id"].get<std::string>() + ".STATSZ");
  ASSERT_TRUE(by_id.is_object());
  EXPECT_EQ(by_id["server"]["id"], r["server"]["id"]);
  EXPECT_GT(by_id["server"]["seq"].get<std::uint64_t>(), r["server"]["seq"].get<std::uint64_t>());
}

TEST_F(system_account, requests_by_server_id_take_the_http_options_as_json) {
  auto sys = open_as("sys", "ps");
  auto a = open_as("a", "pa");
  ASSERT_TRUE(sys && a);
  const json ping = ask(sys.get(), "$SYS.REQ.SERVER.PING.HEALTHZ");
  ASSERT_TRUE(ping.is_object());
  EXPECT_EQ(ping["data"]["status"], "ok");
  const std::string id = ping["server"]["id"];
  const json connz = ask(sys.get(), "$SYS.REQ.SERVER." + id + ".CONNZ", R"({"limit":1,"sort":"cid"})");
  ASSERT_TRUE(connz.is_object()) << connz.dump();
  EXPECT_EQ(connz["data"]["limit"], 1);
  EXPECT_EQ(connz["data"]["num_connections"], 1);
  EXPECT_EQ(connz["data"]["total"], 2);
  const json subsz = ask(sys.get(), "$SYS.REQ.SERVER." + id + ".SUBSZ", R"({"subscriptions":true})");
  ASSERT_TRUE(subsz.is_object());
  EXPECT_TRUE(subsz["data"].contains("num_subscriptions"));
  EXPECT_TRUE(subsz["data"].contains("subscriptions_list")) << subsz.dump();
  const json accountz = ask(sys.get(), "$SYS.REQ.SERVER.PING.ACCOUNTZ");
  ASSERT_TRUE(accountz.is_object());
  EXPECT_EQ(accountz["data"]["system_account"], "$SYS");
  const json routez = ask(sys.get(), "$SYS.REQ.SERVER.PING.ROUTEZ");
  ASSERT_TRUE(routez.is_object());
  EXPECT_EQ(routez["data"]["num_routes"], 0);
  const json bad = ask(sys.get(), "$SYS.REQ.SERVER.PING.VARZ", "{bad");
  ASSERT_TRUE(bad.is_object());
  EXPECT_EQ(keys(bad), (std::vector<std::string>{"server", "error"}));
  EXPECT_EQ(bad["error"]["code"], 400);
}

TEST_F(system_account, other_accounts_do_not_reach_the_server_requests) {
  auto a = open_as("a", "pa");
  ASSERT_TRUE(a);
  natsStatus s = NATS_OK;
  const json r = ask(a.get(), "$SYS.REQ.SERVER.PING.VARZ", "", &s);
  EXPECT_EQ(s, NATS_NO_RESPONDERS) << r.dump();
}

TEST_F(system_account, connect_and_disconnect_events) {
  auto sys = open_as("sys", "ps");
  ASSERT_TRUE(sys);
  auto sub = subscribe_sync(sys.get(), "$SYS.ACCOUNT.A.*");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(sys.get()), NATS_OK);
  {
    auto o = make_opts(url());
    natsOptions_SetUserInfo(o.get(), "a", "pa");
    natsOptions_SetName(o.get(), "event-client");
    std::string err;
    auto a = connect(o.get(), &err);
    ASSERT_TRUE(a) << err;
    ASSERT_EQ(natsConnection_PublishString(a.get(), "x", "hello"), NATS_OK);
    ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  }  // closed here
  json connect_ev, disconnect_ev;
  for (int i = 0; i < 4 && (connect_ev.is_null() || disconnect_ev.is_null()); ++i) {
    auto m = next_msg(sub.get(), 5s);
    if (!m) break;
    const std::string subject = natsMsg_GetSubject(m.get());
    auto j = json::parse(std::string(natsMsg_GetData(m.get()), natsMsg_GetDataLength(m.get())), nullptr, false);
    if (subject == "$SYS.ACCOUNT.A.CONNECT") connect_ev = j;
    if (subject == "$SYS.ACCOUNT.A.DISCONNECT") disconnect_ev = j;
  }
  ASSERT_TRUE(connect_ev.is_object()) << "no CONNECT event";
  EXPECT_EQ(keys(connect_ev), (std::vector<std::string>{"type", "id", "timestamp", "server", "client"}));
  EXPECT_EQ(connect_ev["type"], "io.nats.server.advisory.v1.client_connect");
  EXPECT_EQ(connect_ev["id"].get<std::string>().size(), 22u);
  const json& c = connect_ev["client"];
  EXPECT_EQ(c["acc"], "A");
  EXPECT_EQ(c["user"], "a");
  EXPECT_EQ(c["name"], "event-client");
  EXPECT_EQ(c["host"], "127.0.0.1");
  EXPECT_EQ(c["kind"], "Client");
  EXPECT_EQ(c["client_type"], "nats");
  EXPECT_FALSE(c.contains("stop"));
  ASSERT_TRUE(disconnect_ev.is_object()) << "no DISCONNECT event";
  EXPECT_EQ(keys(disconnect_ev),
            (std::vector<std::string>{"type", "id", "timestamp", "server", "client", "sent", "received", "reason"}));
  EXPECT_EQ(disconnect_ev["type"], "io.nats.server.advisory.v1.client_disconnect");
  EXPECT_EQ(disconnect_ev["client"]["id"], c["id"]);
  EXPECT_TRUE(disconnect_ev["client"].contains("stop"));
  EXPECT_EQ(disconnect_ev["sent"]["msgs"], 1);
  EXPECT_EQ(disconnect_ev["sent"]["bytes"], 5);
  EXPECT_EQ(disconnect_ev["reason"], "Client Closed");
  EXPECT_GT(disconnect_ev["server"]["seq"].get<std::uint64_t>(), connect_ev["server"]["seq"].get<std::uint64_t>());
}

// $SYS.REQ.ACCOUNT.<acc>.<EP>: one account's view, answered as nats-server 2.9.10 does (no
// answer for STATZ/CONNS of an account without connections unless include_unused).
TEST_F(system_account, account_requests_answer_for_one_account) {
  auto sys = open_as("sys", "ps");
  ASSERT_TRUE(sys);
  natsStatus st = NATS_OK;
  // A has no connections yet: STATZ and CONNS stay silent, include_unused answers.
  ask(sys.get(), "$SYS.REQ.ACCOUNT.A.STATZ", "", &st, 700);
  EXPECT_EQ(st, NATS_TIMEOUT);
  const json unused = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.STATZ", R"({"include_unused":true})");
  ASSERT_TRUE(unused.is_object()) << unused.dump();
  EXPECT_EQ(keys(unused["data"]), (std::vector<std::string>{"server_id", "now", "account_statz"}));
  ASSERT_EQ(unused["data"]["account_statz"].size(), 1u);
  EXPECT_EQ(keys(unused["data"]["account_statz"][0]),
            (std::vector<std::string>{"acc", "conns", "leafnodes", "total_conns", "sent", "received", "slow_consumers"}));
  EXPECT_EQ(unused["data"]["account_statz"][0]["conns"], 0);

  auto a = open_as("a", "pa");
  ASSERT_TRUE(a);
  auto sub = subscribe_sync(a.get(), "orders.>");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  const json statz = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.STATZ");
  ASSERT_TRUE(statz.is_object());
  EXPECT_EQ(statz["data"]["account_statz"][0]["acc"], "A");
  EXPECT_EQ(statz["data"]["account_statz"][0]["conns"], 1);
  const json conns = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.CONNS");
  ASSERT_TRUE(conns.is_object());
  EXPECT_EQ(keys(conns), (std::vector<std::string>{"type", "id", "timestamp", "server", "acc", "conns", "leafnodes",
                                                   "total_conns", "sent", "received", "slow_consumers"}));
  EXPECT_EQ(conns["type"], "io.nats.server.advisory.v1.account_connections");
  EXPECT_EQ(conns["conns"], 1);
  const json connz = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.CONNZ");
  ASSERT_TRUE(connz.is_object());
  EXPECT_EQ(connz["data"]["num_connections"], 1) << connz.dump();  // A's only, not sys's
  const json subsz = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.SUBSZ");
  ASSERT_TRUE(subsz.is_object());
  bool found = false;
  for (const auto& e : subsz["data"]["subscriptions_list"]) {
    EXPECT_EQ(e["account"], "A");
    found = found || e["subject"] == "orders.>";
  }
  EXPECT_TRUE(found) << subsz.dump();
  const json info = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.INFO");
  ASSERT_TRUE(info.is_object());
  EXPECT_EQ(info["data"]["account_name"], "A");
  EXPECT_EQ(info["data"]["client_connections"], 1);
  EXPECT_EQ(info["data"]["jetstream_enabled"], false);
  std::set<std::string> imported;
  for (const auto& i : info["data"]["imports"]) imported.insert(i["subject"].get<std::string>());
  EXPECT_EQ(imported, (std::set<std::string>{"$SYS.REQ.ACCOUNT.PING.CONNZ", "$SYS.REQ.SERVER.PING.CONNZ",
                                             "$SYS.REQ.ACCOUNT.PING.STATZ"}));
  const json leafz = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.LEAFZ");
  ASSERT_TRUE(leafz.is_object());
  EXPECT_EQ(leafz["data"]["leafnodes"], 0);
  const json jsz = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.JSZ");
  ASSERT_TRUE(jsz.is_object());
  EXPECT_EQ(jsz["error"]["description"], "jetstream not enabled");
  const json bad = ask(sys.get(), "$SYS.REQ.ACCOUNT.A.STATZ", "{bad");
  ASSERT_TRUE(bad.is_object());
  EXPECT_EQ(bad["error"]["code"], 400);
  // Every account with connections, or those named.
  const json all = ask(sys.get(), "$SYS.REQ.ACCOUNT.PING.STATZ");
  ASSERT_TRUE(all.is_object());
  std::set<std::string> accs;
  for (const auto& e : all["data"]["account_statz"]) accs.insert(e["acc"].get<std::string>());
  EXPECT_EQ(accs, (std::set<std::string>{"$SYS", "A"}));
  const json named = ask(sys.get(), "$SYS.REQ.ACCOUNT.PING.STATZ", R"({"accounts":["A"]})");
  ASSERT_TRUE(named.is_object());
  ASSERT_EQ(named["data"]["account_statz"].size(), 1u);
  EXPECT_EQ(named["data"]["account_statz"][0]["acc"], "A");
}

// Every account imports its own connz and statz from the system account, as in nats-server.
TEST_F(system_account, accounts_ask_for_their_own_connz_and_statz) {
  auto a = open_as("a", "pa");
  auto a2 = open_as("a", "pa");
  auto sys = open_as("sys", "ps");
  ASSERT_TRUE(a && a2 && sys);
  const json connz = ask(a.get(), "$SYS.REQ.ACCOUNT.PING.CONNZ");
  ASSERT_TRUE(connz.is_object()) << connz.dump();
  EXPECT_EQ(connz["data"]["num_connections"], 2) << connz.dump();
  const json server_connz = ask(a.get(), "$SYS.REQ.SERVER.PING.CONNZ");
  ASSERT_TRUE(server_connz.is_object());
  EXPECT_EQ(server_connz["data"]["num_connections"], 2);
  const json statz = ask(a.get(), "$SYS.REQ.ACCOUNT.PING.STATZ");
  ASSERT_TRUE(statz.is_object()) << statz.dump();
  ASSERT_EQ(statz["data"]["account_statz"].size(), 1u);
  EXPECT_EQ(statz["data"]["account_statz"][0]["acc"], "A");
  EXPECT_EQ(statz["data"]["account_statz"][0]["conns"], 2);
  // Only those: the server's other requests stay in the system account.
  natsStatus st = NATS_OK;
  ask(a.get(), "$SYS.REQ.SERVER.PING", "", &st);
  EXPECT_EQ(st, NATS_NO_RESPONDERS);
}

TEST_F(system_account, statsz_is_sent_periodically_to_listeners) {
  auto sys = open_as("sys", "ps");
  ASSERT_TRUE(sys);
  auto sub = subscribe_sync(sys.get(), "$SYS.SERVER.*.STATSZ");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(sys.get()), NATS_OK);
  // 1 s after start, then every 2, 4, 8 and 10 s.
  auto m = next_msg(sub.get(), 15s);
  ASSERT_TRUE(m) << "no STATSZ";
  const json j = json::parse(std::string(natsMsg_GetData(m.get()), natsMsg_GetDataLength(m.get())), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(keys(j), (std::vector<std::string>{"server", "statsz"}));
  EXPECT_EQ(std::string(natsMsg_GetSubject(m.get())), "$SYS.SERVER." + j["server"]["id"].get<std::string>() + ".STATSZ");
  EXPECT_GE(j["statsz"]["connections"].get<int>(), 1);
}

TEST_F(system_account, account_connection_counts_are_sent_when_they_change) {
  auto sys = open_as("sys", "ps");
  ASSERT_TRUE(sys);
  auto fresh = subscribe_sync(sys.get(), "$SYS.ACCOUNT.A.SERVER.CONNS");
  auto old = subscribe_sync(sys.get(), "$SYS.SERVER.ACCOUNT.A.CONNS");
  ASSERT_TRUE(fresh && old);
  ASSERT_EQ(natsConnection_Flush(sys.get()), NATS_OK);
  auto count_of = [](natsSubscription* s) -> int {
    auto m = next_msg(s, 5s);
    if (!m) return -1;
    const json j = json::parse(std::string(natsMsg_GetData(m.get()), natsMsg_GetDataLength(m.get())), nullptr, false);
    if (!j.is_object() || j["acc"] != "A" || j["type"] != "io.nats.server.advisory.v1.account_connections") return -2;
    return j["conns"].get<int>();
  };
  {
    auto a = open_as("a", "pa");
    ASSERT_TRUE(a);
    EXPECT_EQ(count_of(fresh.get()), 1);
    EXPECT_EQ(count_of(old.get()), 1);
  }
  EXPECT_EQ(count_of(fresh.get()), 0);
  EXPECT_EQ(count_of(old.get()), 0);
}

TEST_F(system_account, shutdown_event_carries_the_server_info) {
  auto sys = open_as("sys", "ps");
  ASSERT_TRUE(sys);
  const json ping = ask(sys.get(), "$SYS.REQ.SERVER.PING");
  ASSERT_TRUE(ping.is_object());
  // A raw client reads what arrived before the close (libnats drops it on the disconnect).
  raw_client watcher;
  ASSERT_TRUE(watcher.open(port(), "CONNECT {\"verbose\":false,\"user\":\"sys\",\"pass\":\"ps\"}\r\n"));
  ASSERT_TRUE(watcher.send("SUB $SYS.SERVER.*.SHUTDOWN 1\r\n"));
  ASSERT_TRUE(watcher.ping_pong());
  server_->stop();
  const auto all = watcher.read_until_closed(5s);
  ASSERT_TRUE(all) << "still open";
  const std::string id = ping["server"]["id"];
  const std::string head = "MSG $SYS.SERVER." + id + ".SHUTDOWN 1 ";
  const auto at = all->find(head);
  ASSERT_NE(at, std::string::npos) << "no SHUTDOWN in: " << *all << "\nserver log:\n" << server_->log();
  const auto body_at = all->find("\r\n", at) + 2;
  const json j = json::parse(all->substr(body_at, all->find("\r\n", body_at) - body_at), nullptr, false);
  ASSERT_TRUE(j.is_object()) << *all;
  EXPECT_EQ(j["id"], id);
  EXPECT_EQ(keys(j), (std::vector<std::string>{"name", "host", "id", "ver", "seq", "jetstream", "time"}));
}


// A CONNECT that fails authentication is reported on $SYS.SERVER.<id>.CLIENT.AUTH.ERR as a
// client_disconnect event in $G with the user the client claimed (nats-server 2.9.10's
// shape, checked by running this against it too).
TEST_F(system_account, failed_authentication_is_an_auth_error_event) {
  raw_client watcher;
  ASSERT_TRUE(watcher.open(port(), "CONNECT {\"verbose\":false,\"user\":\"sys\",\"pass\":\"ps\"}\r\n"));
  ASSERT_TRUE(watcher.send("SUB $SYS.SERVER.*.CLIENT.AUTH.ERR 1\r\n"));
  ASSERT_TRUE(watcher.ping_pong());
  raw_client bad;
  ASSERT_TRUE(bad.connect(port()));
  ASSERT_FALSE(bad.read_info().empty());
  ASSERT_TRUE(bad.send("CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"wrong\",\"name\":\"badclient\"}\r\nPING\r\n"));
  const auto err = bad.read_line(5s);
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "-ERR 'Authorization Violation'\r\n");
  std::optional<std::string> line;
  while ((line = watcher.read_line(5s)) && line->rfind("MSG $SYS.SERVER.", 0) != 0) {
  }
  ASSERT_TRUE(line) << "no AUTH.ERR event";
  EXPECT_NE(line->find(".CLIENT.AUTH.ERR 1 "), std::string::npos) << *line;
  const auto body = watcher.read_line(5s);
  ASSERT_TRUE(body);
  const json j = json::parse(*body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << *body;
  EXPECT_EQ(keys(j), (std::vector<std::string>{"type", "id", "timestamp", "server", "client", "sent", "received",
                                               "reason"}));
  EXPECT_EQ(j["type"], "io.nats.server.advisory.v1.client_disconnect");
  EXPECT_EQ(j["reason"], "Authentication Failure");
  EXPECT_EQ(line->find("$SYS.SERVER." + j["server"]["id"].get<std::string>() + ".CLIENT.AUTH.ERR"), 4u) << *line;
  const json& c = j["client"];
  EXPECT_EQ(keys(c), (std::vector<std::string>{"start", "host", "id", "acc", "user", "name", "rtt", "stop", "kind",
                                               "client_type"}));
  EXPECT_EQ(c["acc"], "$G");
  EXPECT_EQ(c["user"], "a");
  EXPECT_EQ(c["name"], "badclient");
  EXPECT_EQ(j["sent"], json({{"msgs", 0}, {"bytes", 0}}));
}

}  // namespace
}  // namespace peregrine::test
