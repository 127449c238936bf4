// The system account's pure parts (src/core/system_account.h): which requests it answers,
// request bodies as monitor queries, nats-server's ServerInfo and statsz shapes, and which
// account is the system account (src/core/auth.h).
#include "src/core/system_account.h"

#include <gtest/gtest.h>

#include "src/core/auth.h"

namespace {

using namespace core;

TEST(SystemAccount, RequestSubjects) {
  const std::string id = "NABC";
  EXPECT_EQ(parse_sys_request("$SYS.REQ.SERVER.PING", id).k, sys_request::kind::statsz);
  EXPECT_EQ(parse_sys_request("$SYS.REQ.SERVER.PING.STATSZ", id).k, sys_request::kind::statsz);
  EXPECT_EQ(parse_sys_request("$SYS.REQ.SERVER.NABC.STATSZ", id).k, sys_request::kind::statsz);
  auto r = parse_sys_request("$SYS.REQ.SERVER.PING.VARZ", id);
  EXPECT_EQ(r.k, sys_request::kind::server_api);
  EXPECT_EQ(r.endpoint, "VARZ");
  r = parse_sys_request("$SYS.REQ.SERVER.NABC.JSZ", id);
  EXPECT_EQ(r.k, sys_request::kind::server_api);
  EXPECT_EQ(r.endpoint, "JSZ");
  EXPECT_EQ(parse_sys_request("$SYS.REQ.SERVER.NOTME.VARZ", id).k, sys_request::kind::none);
  EXPECT_EQ(parse_sys_request("$SYS.REQ.SERVER.PING.NOPE", id).k, sys_request::kind::none);
  EXPECT_EQ(parse_sys_request("$SYS.REQ.SERVER.PING.STATZ", id).k, sys_request::kind::none);  // 2.9 has no STATZ
  EXPECT_EQ(parse_sys_request("foo", id).k, sys_request::kind::none);
}

TEST(SystemAccount, BodyBecomesQuery) {
  http_query q;
  std::string err;
  ASSERT_TRUE(sys_query_from_body(R"({"limit":5,"sort":"cid","auth":true,"subscriptions":true})", q, err));
  EXPECT_EQ(q["limit"], "5");
  EXPECT_EQ(q["sort"], "cid");
  EXPECT_EQ(q["auth"], "true");
  EXPECT_EQ(q["subs"], "1");
  ASSERT_TRUE(sys_query_from_body(R"({"subscriptions_detail":true})", q, err));
  EXPECT_EQ(q["subs"], "detail");
  ASSERT_TRUE(sys_query_from_body("", q, err));
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(sys_query_from_body("{bad", q, err));
  EXPECT_FALSE(err.empty());
  EXPECT_FALSE(sys_query_from_body("[1]", q, err));
}

TEST(SystemAccount, ServerInfoFieldsInNatsServerOrder) {
  sys_server_info s{"n1", "0.0.0.0", "NID", "", "", "2.9.10", true};
  auto j = sys_server_json(s, 7, 1'000'000'000);
  EXPECT_EQ(j.dump(), R"({"name":"n1","host":"0.0.0.0","id":"NID","ver":"2.9.10","seq":7,"jetstream":true,)"
                      R"("time":"1970-01-01T00:00:01Z"})");
  s.cluster = "c";
  s.domain = "d";
  j = sys_server_json(s, 1, 0);
  EXPECT_EQ(j["cluster"], "c");
  EXPECT_EQ(j["domain"], "d");
}

TEST(SystemAccount, StatszFromVarz) {
  const auto varz = nlohmann::json::parse(
      R"({"start":"s","mem":10,"cores":2,"cpu":1.5,"connections":3,"total_connections":4,"subscriptions":5,)"
      R"("in_msgs":6,"in_bytes":7,"out_msgs":8,"out_bytes":9,"slow_consumers":1,"routes":2})");
  EXPECT_EQ(sys_statsz_json(varz, 2).dump(),
            R"({"start":"s","mem":10,"cores":2,"cpu":1.5,"connections":3,"total_connections":4,"active_accounts":2,)"
            R"("subscriptions":5,"sent":{"msgs":8,"bytes":9},"received":{"msgs":6,"bytes":7},"slow_consumers":1,)"
            R"("active_servers":3})");
}

TEST(SystemAccount, WhichAccountIsTheSystemAccount) {
  server_options o;
  EXPECT_EQ(build_auth_table(o)->accounts[build_auth_table(o)->system_account].name, "$SYS");
  o.accounts.push_back(account_config{"SYS", {}, {}, {}, {}, false});
  o.system_account = "SYS";
  auto t = build_auth_table(o);
  EXPECT_EQ(t->system_account, 1u);
  EXPECT_EQ(t->accounts.size(), 2u);  // no $SYS made beside it
  o.no_system_account = true;
  EXPECT_EQ(build_auth_table(o)->system_account, kGlobalAccount);
}

TEST(SystemAccount, AccountRequestSubjects) {
  sys_request r;
  ASSERT_TRUE(parse_account_request("$SYS.REQ.ACCOUNT.A.CONNZ", r));
  EXPECT_EQ(r.k, sys_request::kind::account_api);
  EXPECT_EQ(r.account, "A");
  EXPECT_EQ(r.endpoint, "CONNZ");
  for (const char* ep : {"SUBSZ", "LEAFZ", "JSZ", "INFO", "STATZ", "CONNS"})
    EXPECT_TRUE(parse_account_request(std::string("$SYS.REQ.ACCOUNT.$G.") + ep, r)) << ep;
  EXPECT_TRUE(parse_account_request("$SYS.REQ.ACCOUNT.PING.STATZ", r));
  EXPECT_EQ(r.account, "PING");
  EXPECT_TRUE(parse_account_request("$SYS.REQ.ACCOUNT.PING.CONNZ", r));
  EXPECT_FALSE(parse_account_request("$SYS.REQ.ACCOUNT.PING.INFO", r));  // PING: STATZ and CONNZ only
  EXPECT_FALSE(parse_account_request("$SYS.REQ.ACCOUNT.A.VARZ", r));
  EXPECT_FALSE(parse_account_request("$SYS.REQ.ACCOUNT.A.B.CONNZ", r));
  EXPECT_FALSE(parse_account_request("$SYS.REQ.ACCOUNT.CONNZ", r));
  EXPECT_FALSE(parse_account_request("$SYS.REQ.SERVER.PING", r));
}

TEST(SystemAccount, AccountStatsFromConnections) {
  std::vector<conn_snapshot> open(3);
  open[0].account = "A";
  open[0].in_msgs = 2;
  open[0].in_bytes = 10;
  open[0].out_msgs = 1;
  open[0].out_bytes = 4;
  open[1].account = "A";
  open[1].out_msgs = 3;
  open[2].account = "";  // $G
  const auto stats = account_stats(open);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats.at("A").conns, 2u);
  EXPECT_EQ(stats.at("A").sent_msgs, 4u);
  EXPECT_EQ(stats.at("A").received_bytes, 10u);
  EXPECT_EQ(stats.at("$G").conns, 1u);
  // Accounts without connections are left out unless asked for.
  auto list = account_statz_list({"A", "B"}, stats, false);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["acc"], "A");
  EXPECT_EQ(list[0].dump(),
            R"({"acc":"A","conns":2,"leafnodes":0,"total_conns":2,"sent":{"msgs":4,"bytes":4},)"
            R"("received":{"msgs":2,"bytes":10},"slow_consumers":0})");
  EXPECT_EQ(account_statz_list({"A", "B"}, stats, true).size(), 2u);
  const auto ev = account_conns_event_json("A", stats.at("A"), nlohmann::ordered_json{{"id", "N"}}, "E", 0);
  std::vector<std::string> keys;
  for (const auto& [k, v] : ev.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"type", "id", "timestamp", "server", "acc", "conns", "leafnodes",
                                            "total_conns", "sent", "received", "slow_consumers"}));
}

TEST(SystemAccount, AccountInfoListsExportsAndImports) {
  account_config a;
  a.name = "A";
  a.exports.push_back(account_export{true, "help.>", {}, "stream"});
  a.exports.push_back(account_export{false, "feed.>", {}, ""});
  account_info_input in;
  in.name = "A";
  in.config = &a;
  in.conns = 2;
  in.system_account = "$SYS";
  in.system_imports = {{"$SYS.REQ.ACCOUNT.PING.CONNZ", "$SYS.REQ.ACCOUNT.A.CONNZ"}};
  const auto j = account_info_json(in);
  EXPECT_EQ(j["account_name"], "A");
  EXPECT_EQ(j["client_connections"], 2);
  ASSERT_EQ(j["exports"].size(), 2u);
  EXPECT_EQ(j["exports"][0]["response_type"], "Streamed");
  EXPECT_FALSE(j["exports"][1].contains("response_type"));
  ASSERT_EQ(j["imports"].size(), 1u);
  EXPECT_EQ(j["imports"][0]["account"], "$SYS");
  EXPECT_EQ(j["imports"][0]["to"], "$SYS.REQ.ACCOUNT.A.CONNZ");
}

}  // namespace
