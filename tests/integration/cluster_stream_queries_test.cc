// The stream API a user runs against replicated streams (issue 11), on three real
// peregrine-server processes with R3, R2 and R1 streams mixed: `nats stream ls` (STREAM.NAMES
// and STREAM.LIST from every server: the replicated streams and every server's R1 ones, one
// name order, paging, the subject filter, each replicated entry's cluster and state from its
// leader, an unreachable leader's stream in `missing`), `nats stream rmm` (STREAM.MSG.DELETE
// through a follower, with and without no_erase: gone on every replica, also after a leader
// stepdown), `nats stream get --direct` (DIRECT.GET from every server, answered by the leader:
// the R1 headers and statuses, once each; none for a stream without allow_direct) and `nats account
// info` ($JS.API.INFO counts each replicated stream once). libnats (js_StreamNames, js_Streams,
// js_DeleteMsg, js_EraseMsg, js_DirectGetMsg, js_GetAccountInfo) and raw $JS.API requests.
// Every wait polls with a bound.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_stream_queries : public cluster_js_clients {
 protected:
  // The request retried while the cluster answers 10008 (an election) or times out.
  json api_retried(int i, const std::string& subject, const std::string& body) {
    json r;
    const auto deadline = clock_type::now() + scaled(15000);
    while (clock_type::now() < deadline) {
      r = api(i, subject, body);
      if (!r.empty() && r.value("error", json::object()).value("err_code", 0) != 10008) break;
      std::this_thread::sleep_for(100ms);
    }
    return r;
  }

  // A stream created through server i (an R1 stream stays on that server).
  void create(int i, const std::string& name, const std::string& subject, int replicas, bool direct = false,
              const std::string& storage = "file") {
    const json cfg{{"name", name},          {"subjects", {subject}},   {"storage", storage},
                   {"num_replicas", replicas}, {"allow_direct", direct}};
    const json r = api_retried(i, "$JS.API.STREAM.CREATE." + name, cfg.dump());
    ASSERT_TRUE(r.contains("config")) << name << ": " << r.dump();
    if (replicas > 1) {
      ASSERT_FALSE(stream_leader(name, scaled(10000)).empty()) << name;
    }
  }

  void publish_n(int i, const std::string& subject, int n, const std::string& tag) {
    for (int k = 0; k < n; ++k)
      ASSERT_NE(cluster_js_fixture::publish(nc_[i].get(), subject, tag + std::to_string(k),
                                            tag + "-" + subject + "-" + std::to_string(k), scaled(5000)),
                0u)
          << subject << " #" << k;
  }

  // Waits until server i's replica of `name` holds `messages` messages.
  bool wait_replica(int i, const std::string& name, std::uint64_t messages) {
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      if (replica_state(i, name).value("messages", ~0ull) == messages) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  static std::vector<std::string> names_of(const json& list) {
    std::vector<std::string> out;
    for (const auto& s : list) out.push_back(s.is_string() ? s.get<std::string>() : s["config"].value("name", ""));
    return out;
  }

  static std::vector<std::string> keys_of(const json& j) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    return keys;
  }

  // A direct get through server i's connection: the reply (null on timeout or no responders).
  natsMsg* direct(int i, const std::string& subject, const std::string& body, natsStatus* st = nullptr) {
    natsMsg* reply = nullptr;
    const natsStatus s = natsConnection_RequestString(&reply, nc_[i].get(), subject.c_str(), body.c_str(), 3000);
    if (st) *st = s;
    return s == NATS_OK ? reply : nullptr;
  }

  // How many answers one request through server i gets within 500 ms.
  int answers(int i, const std::string& subject, const std::string& body) {
    natsInbox* inbox = nullptr;
    natsSubscription* sub = nullptr;
    if (natsInbox_Create(&inbox) != NATS_OK) return -1;
    int n = -1;
    if (natsConnection_SubscribeSync(&sub, nc_[i].get(), inbox) == NATS_OK &&
        natsConnection_Flush(nc_[i].get()) == NATS_OK &&
        natsConnection_PublishRequestString(nc_[i].get(), subject.c_str(), inbox, body.c_str()) == NATS_OK) {
      n = 0;
      for (natsMsg* m = nullptr; natsSubscription_NextMsg(&m, sub, 500) == NATS_OK; ++n) natsMsg_Destroy(m);
    }
    if (sub) natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    return n;
  }

  static std::string header(natsMsg* m, const char* key) {
    const char* v = nullptr;
    return natsMsgHeader_Get(m, key, &v) == NATS_OK && v ? std::string(v) : std::string();
  }

};

// `nats stream ls` and `nats account info` on each of the three servers: AUDIT (R2), BILLING
// (R3, memory), ORDERS (R3, a durable consumer) and the R1 streams LOCAL_A (held by A) and
// LOCAL_B (held by B), listed by every server.
TEST_F(cluster_stream_queries, names_list_and_account_info_from_every_server) {
  create(0, "ORDERS", "orders.>", 3);
  create(1, "BILLING", "billing.>", 3, false, "memory");
  create(2, "AUDIT", "audit.>", 2);
  create(0, "LOCAL_A", "local.a.>", 1);
  create(1, "LOCAL_B", "local.b.>", 1);
  const json c = api_retried(2, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.C1",
                             R"({"stream_name":"ORDERS","config":{"durable_name":"C1","ack_policy":"explicit"}})");
  ASSERT_FALSE(c.contains("error")) << c.dump();
  publish_n(1, "orders.new", 5, "o");
  publish_n(2, "billing.x", 3, "b");
  publish_n(0, "audit.y", 2, "a");
  publish_n(0, "local.a.1", 1, "la");
  publish_n(1, "local.b.1", 4, "lb");
  const std::map<std::string, std::uint64_t> msgs{{"AUDIT", 2}, {"BILLING", 3}, {"LOCAL_A", 1}, {"LOCAL_B", 4},
                                                  {"ORDERS", 5}};
  const std::map<std::string, int> replicas{{"AUDIT", 2}, {"BILLING", 3}, {"ORDERS", 3}};
  // Every server lists every stream, the other servers' R1 ones too (as nats-server does).
  const std::vector<std::string> all{"AUDIT", "BILLING", "LOCAL_A", "LOCAL_B", "ORDERS"};
  const std::array<std::vector<std::string>, 3> expected{all, all, all};
  const std::map<std::string, std::string> r1_home{{"LOCAL_A", "A"}, {"LOCAL_B", "B"}};
  // Each server reports its R1 streams to the meta log: wait until every server knows them.
  for (int i = 0; i < 3; ++i) {
    const auto deadline = clock_type::now() + scaled(10000);
    while (names_of(api(i, "$JS.API.STREAM.NAMES", "").value("streams", json::array())) != all &&
           clock_type::now() < deadline)
      std::this_thread::sleep_for(50ms);
  }
  // Every replica has applied what was acknowledged (account info reads a local replica).
  int hosted = 0;
  for (int i = 0; i < 3; ++i)
    for (const auto& [name, n] : replicas)
      if (replica_state(i, name).contains("messages")) {
        ++hosted;
        ASSERT_TRUE(wait_replica(i, name, msgs.at(name))) << name << " on " << char('A' + i);
      }
  ASSERT_EQ(hosted, 3 + 3 + 2);

  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(std::string("server ") + char('A' + i));
    // js_StreamNames / js_Streams: the replicated streams and this server's R1 ones, sorted.
    jsStreamNamesList* nl = nullptr;
    ASSERT_EQ(js_StreamNames(&nl, js_[i], nullptr, nullptr), NATS_OK);
    std::vector<std::string> got;
    for (int k = 0; k < nl->Count; ++k) got.emplace_back(nl->List[k]);
    jsStreamNamesList_Destroy(nl);
    std::sort(got.begin(), got.end());  // libnats lists them in its own order
    EXPECT_EQ(got, expected[i]);

    jsStreamInfoList* sl = nullptr;
    ASSERT_EQ(js_Streams(&sl, js_[i], nullptr, nullptr), NATS_OK);
    got.clear();
    for (int k = 0; k < sl->Count; ++k) {
      const jsStreamInfo* si = sl->List[k];
      const std::string name = si->Config->Name;
      got.push_back(name);
      EXPECT_EQ(si->State.Msgs, msgs.at(name)) << name;
      ASSERT_NE(si->Cluster, nullptr) << name;
      ASSERT_NE(si->Cluster->Leader, nullptr) << name;
      if (auto r = replicas.find(name); r != replicas.end()) {  // from its leader: the peers it sees
        EXPECT_EQ(si->Config->Replicas, r->second) << name;
        EXPECT_STREQ(si->Cluster->Name, "pgtest") << name;
        EXPECT_EQ(si->Cluster->ReplicasLen, r->second - 1) << name;
        EXPECT_EQ(si->State.Consumers, name == "ORDERS" ? 1 : 0) << name;
      } else {  // an R1 stream: from the server that holds it
        EXPECT_EQ(std::string(si->Cluster->Leader), r1_home.at(name)) << name;
      }
    }
    jsStreamInfoList_Destroy(sl);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected[i]);

    // The raw LIST: nats-server's fields in its order, a replicated entry as STREAM.INFO
    // gives it (no type or paging fields), an R1 entry as before.
    const json list = api(i, "$JS.API.STREAM.LIST", "", 6000);
    EXPECT_EQ(keys_of(list), (std::vector<std::string>{"type", "total", "offset", "limit", "streams"})) << list.dump();
    EXPECT_EQ(list.value("type", ""), "io.nats.jetstream.api.v1.stream_list_response");
    EXPECT_EQ(list.value("total", 0u), expected[i].size());
    EXPECT_EQ(list.value("limit", 0), 256);
    for (const auto& e : list.value("streams", json::array())) {
      const std::string name = e["config"].value("name", "");
      if (!replicas.count(name)) continue;
      EXPECT_EQ(keys_of(e), (std::vector<std::string>{"config", "created", "state", "cluster", "ts"})) << e.dump();
      const json info = api(i, "$JS.API.STREAM.INFO." + name, "");
      EXPECT_EQ(e["cluster"].value("leader", ""), info["cluster"].value("leader", "")) << name;
      EXPECT_EQ(e["created"], info["created"]) << name;
      EXPECT_EQ(e["state"].value("bytes", 0u), info["state"].value("bytes", 0u)) << name;
      EXPECT_EQ(e["cluster"].value("replicas", json::array()).size(), std::size_t(replicas.at(name) - 1)) << name;
    }

    // Paging and the subject filter, as for R1 streams.
    const json page = api(i, "$JS.API.STREAM.LIST", R"({"offset":2})", 6000);
    EXPECT_EQ(page.value("total", 0u), expected[i].size()) << page.dump();
    EXPECT_EQ(page.value("offset", 0), 2);
    EXPECT_EQ(names_of(page.value("streams", json::array())),
              std::vector<std::string>(expected[i].begin() + 2, expected[i].end()));
    const json past = api(i, "$JS.API.STREAM.LIST", R"({"offset":9})", 6000);
    EXPECT_EQ(past.value("streams", json(nullptr)), json::array()) << past.dump();
    const json names_page = api(i, "$JS.API.STREAM.NAMES", R"({"offset":1})");
    EXPECT_EQ(names_page.value("total", 0u), expected[i].size()) << names_page.dump();
    EXPECT_EQ(names_of(names_page.value("streams", json::array())),
              std::vector<std::string>(expected[i].begin() + 1, expected[i].end()));
    const json filtered = api(i, "$JS.API.STREAM.LIST", R"({"subject":"billing.*"})", 6000);
    EXPECT_EQ(filtered.value("total", 0), 1) << filtered.dump();
    EXPECT_EQ(names_of(filtered.value("streams", json::array())), std::vector<std::string>{"BILLING"});
    const json fnames = api(i, "$JS.API.STREAM.NAMES", R"({"subject":"local.>"})");
    EXPECT_EQ(names_of(fnames.value("streams", json::array())), (std::vector<std::string>{"LOCAL_A", "LOCAL_B"}))
        << fnames.dump();
    const json none = api(i, "$JS.API.STREAM.LIST", R"({"subject":"nothing.here"})", 6000);
    EXPECT_EQ(none.value("total", -1), 0) << none.dump();
    EXPECT_EQ(none.value("streams", json(nullptr)), json::array());

    // `nats account info`: every replicated stream and its consumer once, whatever this
    // server holds of it, with its leader's bytes.
    std::uint64_t memory = 0, storage = 0;
    for (const auto& e : list.value("streams", json::array()))
      (e["config"].value("storage", "") == "memory" ? memory : storage) += e["state"].value("bytes", 0u);
    jsAccountInfo* ai = nullptr;
    ASSERT_EQ(js_GetAccountInfo(&ai, js_[i], nullptr, nullptr), NATS_OK);
    EXPECT_EQ(ai->Streams, std::int64_t(expected[i].size()));
    EXPECT_EQ(ai->Consumers, 1);
    EXPECT_EQ(ai->Memory, memory);
    EXPECT_EQ(ai->Store, storage);
    EXPECT_GT(ai->Memory, 0u);
    jsAccountInfo_Destroy(ai);
  }
}

// `nats stream rmm` through servers that do not lead the stream: the delete goes through the
// stream's log, so every replica drops the message, and a new leader no longer has it.
TEST_F(cluster_stream_queries, message_deleted_through_a_follower_is_gone_on_every_replica) {
  create(0, "ORDERS", "orders.>", 3);
  publish_n(0, "orders.new", 6, "o");
  const std::string leader = stream_leader("ORDERS", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int f1 = (index_of(leader) + 1) % 3, f2 = (index_of(leader) + 2) % 3;

  jsErrCode jerr = jsErrCode(0);
  ASSERT_EQ(js_DeleteMsg(js_[f1], "ORDERS", 2, nullptr, &jerr), NATS_OK) << int(jerr);  // no_erase
  ASSERT_EQ(js_EraseMsg(js_[f2], "ORDERS", 4, nullptr, &jerr), NATS_OK) << int(jerr);
  const json raw = api(f1, "$JS.API.STREAM.MSG.DELETE.ORDERS", R"({"seq":6,"no_erase":true})");
  EXPECT_EQ(raw, json::parse(R"({"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","success":true})"));

  // The R1 handler's errors.
  const json again = api(f2, "$JS.API.STREAM.MSG.DELETE.ORDERS", R"({"seq":2})");
  EXPECT_EQ(again.dump(), R"({"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","error":)"
                          R"({"code":400,"err_code":10043,"description":"sequence 2 not found"}})");
  EXPECT_EQ(js_DeleteMsg(js_[f1], "ORDERS", 99, nullptr, &jerr), NATS_ERR);
  EXPECT_EQ(int(jerr), 10043);
  const json empty = api(f1, "$JS.API.STREAM.MSG.DELETE.ORDERS", "");
  EXPECT_EQ(empty.value("error", json::object()).value("err_code", 0), 10003) << empty.dump();
  const json bad = api(f1, "$JS.API.STREAM.MSG.DELETE.ORDERS", R"({"seq":"x"})");
  EXPECT_EQ(bad.value("error", json::object()).value("err_code", 0), 10025) << bad.dump();

  // Every replica holds 1, 3, 5: three messages, 2, 4 and 6 deleted (last_seq stays 6).
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(wait_replica(i, "ORDERS", 3)) << char('A' + i) << ": " << replica_state(i, "ORDERS").dump();
    const json st = replica_state(i, "ORDERS");
    EXPECT_EQ(st.value("first_seq", 0), 1) << st.dump();
    EXPECT_EQ(st.value("last_seq", 0), 6) << st.dump();
    EXPECT_EQ(st.value("num_deleted", 0), 3) << st.dump();
  }
  // After a stepdown another replica leads and serves the same contents.
  const json sd = api(f1, "$JS.API.STREAM.LEADER.STEPDOWN.ORDERS", "");
  ASSERT_TRUE(sd.value("success", false)) << sd.dump();
  const std::string next = stream_leader("ORDERS", scaled(10000), leader);
  ASSERT_FALSE(next.empty());
  for (int i = 0; i < 3; ++i) {
    for (std::uint64_t seq : {2u, 4u, 6u}) {
      const json g = api_retried(i, "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":)" + std::to_string(seq) + "}");
      EXPECT_EQ(g.value("error", json::object()).value("err_code", 0), 10037) << seq << ": " << g.dump();
    }
    const json g3 = api_retried(i, "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":3})");
    EXPECT_EQ(g3.value("message", json::object()).value("seq", 0), 3) << g3.dump();
  }
  const json info = api(f2, "$JS.API.STREAM.INFO.ORDERS", "");
  EXPECT_EQ(info["cluster"].value("leader", ""), next);
  EXPECT_EQ(info["state"].value("messages", 0), 3) << info.dump();
  // The new leader takes deletes too.
  ASSERT_EQ(js_DeleteMsg(js_[index_of(leader)], "ORDERS", 1, nullptr, &jerr), NATS_OK) << int(jerr);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(wait_replica(i, "ORDERS", 2)) << char('A' + i);
    EXPECT_EQ(replica_state(i, "ORDERS").value("first_seq", 0), 3);
  }
  // deny_delete streams refuse, as R1 ones.
  create(1, "KEEP", "keep.>", 3);
  publish_n(1, "keep.x", 1, "k");
  json cfg{{"name", "KEEP"}, {"subjects", {"keep.>"}}, {"storage", "file"}, {"num_replicas", 3}, {"deny_delete", true}};
  const json up = api_retried(2, "$JS.API.STREAM.UPDATE.KEEP", cfg.dump());
  ASSERT_FALSE(up.contains("error")) << up.dump();
  const json denied = api_retried(0, "$JS.API.STREAM.MSG.DELETE.KEEP", R"({"seq":1})");
  EXPECT_EQ(denied.value("error", json::object()).dump(),
            R"({"code":500,"err_code":10057,"description":"message delete not permitted"})");
}

// `nats stream get --direct` through each server: the stream's leader answers (from any server,
// also one without a replica of the R2 stream), with the R1 direct get's headers and statuses.
TEST_F(cluster_stream_queries, direct_get_from_every_server) {
  create(0, "KV", "kv.>", 3, true);
  create(1, "DR2", "dr2.>", 2, true);
  create(2, "PLAIN", "plain.>", 3, false);
  ASSERT_NE(cluster_js_fixture::publish(nc_[0].get(), "kv.a", "1", "m1", scaled(5000)), 0u);
  ASSERT_NE(cluster_js_fixture::publish(nc_[1].get(), "kv.b", "2", "m2", scaled(5000)), 0u);
  ASSERT_NE(cluster_js_fixture::publish(nc_[2].get(), "kv.a", "3", "m3", scaled(5000)), 0u);
  ASSERT_NE(cluster_js_fixture::publish(nc_[0].get(), "dr2.x", "x", "d1", scaled(5000)), 0u);
  ASSERT_NE(cluster_js_fixture::publish(nc_[0].get(), "plain.x", "p", "p1", scaled(5000)), 0u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(wait_replica(i, "KV", 3)) << char('A' + i);
  std::set<std::string> dr2_hosts;
  for (int i = 0; i < 3; ++i)
    if (replica_state(i, "DR2").contains("messages")) dr2_hosts.insert(std::string(1, char('A' + i)));
  ASSERT_EQ(dr2_hosts.size(), 2u);
  for (int i = 0; i < 3; ++i)
    if (dr2_hosts.count(std::string(1, char('A' + i)))) {
      ASSERT_TRUE(wait_replica(i, "DR2", 1));
    }

  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(std::string("server ") + char('A' + i));
    for (int round = 0; round < 3; ++round) {
      natsMsg* m = nullptr;
      jsDirectGetMsgOptions o;
      jsDirectGetMsgOptions_Init(&o);
      o.Sequence = 2;
      ASSERT_EQ(js_DirectGetMsg(&m, js_[i], "KV", nullptr, &o), NATS_OK) << nats_GetLastError(nullptr);
      EXPECT_EQ(data_of(m), "2");
      EXPECT_EQ(header(m, "Nats-Stream"), "KV");
      EXPECT_EQ(header(m, "Nats-Subject"), "kv.b");
      EXPECT_EQ(header(m, "Nats-Sequence"), "2");
      EXPECT_FALSE(header(m, "Nats-Time-Stamp").empty());
      natsMsg_Destroy(m);
      jsDirectGetMsgOptions_Init(&o);
      o.LastBySubject = "kv.a";
      ASSERT_EQ(js_DirectGetMsg(&m, js_[i], "KV", nullptr, &o), NATS_OK);
      EXPECT_EQ(data_of(m), "3");
      EXPECT_EQ(header(m, "Nats-Sequence"), "3");
      natsMsg_Destroy(m);
    }
    EXPECT_EQ(answers(i, "$JS.API.DIRECT.GET.KV", R"({"seq":1})"), 1);
    // The last-by-subject form, a missing message, an empty request.
    natsMsg* last = direct(i, "$JS.API.DIRECT.GET.KV.kv.a", "");
    ASSERT_NE(last, nullptr);
    EXPECT_EQ(data_of(last), "3");
    EXPECT_EQ(header(last, "Nats-Subject"), "kv.a");
    natsMsg_Destroy(last);
    natsMsg* missing = direct(i, "$JS.API.DIRECT.GET.KV", R"({"seq":99})");
    ASSERT_NE(missing, nullptr);
    EXPECT_EQ(header(missing, "Status"), "404");
    EXPECT_EQ(header(missing, "Description"), "Message Not Found");
    natsMsg_Destroy(missing);
    natsMsg* empty = direct(i, "$JS.API.DIRECT.GET.KV", "");
    ASSERT_NE(empty, nullptr);
    EXPECT_EQ(header(empty, "Status"), "408");
    natsMsg_Destroy(empty);
    // The R2 stream, from its hosts and from the server without a replica.
    natsMsg* d = direct(i, "$JS.API.DIRECT.GET.DR2", R"({"seq":1})");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(data_of(d), "x");
    EXPECT_EQ(header(d, "Nats-Stream"), "DR2");
    natsMsg_Destroy(d);
    // Without allow_direct nobody answers: no responders, as for an R1 stream.
    natsStatus st = NATS_OK;
    EXPECT_EQ(direct(i, "$JS.API.DIRECT.GET.PLAIN", R"({"seq":1})", &st), nullptr);
    EXPECT_EQ(st, NATS_NO_RESPONDERS);
  }

  // allow_direct turned on and off by STREAM.UPDATE: the replicas follow.
  json cfg{{"name", "PLAIN"}, {"subjects", {"plain.>"}}, {"storage", "file"}, {"num_replicas", 3}, {"allow_direct", true}};
  ASSERT_FALSE(api_retried(0, "$JS.API.STREAM.UPDATE.PLAIN", cfg.dump()).contains("error"));
  for (int i = 0; i < 3; ++i) {
    natsMsg* m = nullptr;
    const auto deadline = clock_type::now() + scaled(10000);
    while (!m && clock_type::now() < deadline) {
      m = direct(i, "$JS.API.DIRECT.GET.PLAIN", R"({"seq":1})");
      if (!m) std::this_thread::sleep_for(100ms);
    }
    ASSERT_NE(m, nullptr) << char('A' + i);
    EXPECT_EQ(data_of(m), "p");
    natsMsg_Destroy(m);
  }
  cfg["allow_direct"] = false;
  ASSERT_FALSE(api_retried(1, "$JS.API.STREAM.UPDATE.PLAIN", cfg.dump()).contains("error"));
  for (int i = 0; i < 3; ++i) {
    natsStatus st = NATS_OK;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      natsMsg* m = direct(i, "$JS.API.DIRECT.GET.PLAIN", R"({"seq":1})", &st);
      if (!m && st == NATS_NO_RESPONDERS) break;
      if (m) natsMsg_Destroy(m);
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(st, NATS_NO_RESPONDERS) << char('A' + i);
  }
}

// A replicated stream whose leader cannot be reached is listed in `missing` (as nats-server's
// meta leader does when a leader does not answer), the server's R1 stream still listed.
TEST_F(cluster_stream_queries, list_reports_an_unreachable_stream_as_missing) {
  create(0, "ORDERS", "orders.>", 3);
  create(0, "LOCAL", "local.>", 1);
  publish_n(0, "local.x", 2, "l");
  servers_[1]->stop();
  servers_[2]->stop();
  // A alone cannot lead ORDERS (no quorum).
  const auto deadline = clock_type::now() + scaled(15000);
  while (clock_type::now() < deadline) {
    const json si = api(0, "$JS.API.STREAM.INFO.ORDERS", "", 1000);
    if (si.empty() || si.contains("error")) break;
    std::this_thread::sleep_for(200ms);
  }
  const json list = api(0, "$JS.API.STREAM.LIST", "", 10000);
  EXPECT_EQ(keys_of(list), (std::vector<std::string>{"type", "total", "offset", "limit", "streams", "missing"}))
      << list.dump();
  EXPECT_EQ(list.value("total", 0), 2);
  EXPECT_EQ(names_of(list.value("streams", json::array())), std::vector<std::string>{"LOCAL"});
  EXPECT_EQ(list.value("missing", json::array()), json::array({"ORDERS"}));
  // The names come from the meta log every server holds.
  const json names = api(0, "$JS.API.STREAM.NAMES", "");
  EXPECT_EQ(names_of(names.value("streams", json::array())), (std::vector<std::string>{"LOCAL", "ORDERS"}));
  jsAccountInfo* ai = nullptr;
  ASSERT_EQ(js_GetAccountInfo(&ai, js_[0], nullptr, nullptr), NATS_OK);
  EXPECT_EQ(ai->Streams, 2);
  jsAccountInfo_Destroy(ai);
}

}  // namespace
}  // namespace peregrine::test
