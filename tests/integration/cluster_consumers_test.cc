// Consumers of replicated (R3) streams on three real peregrine-server processes: durable and
// ephemeral pull consumers and a push consumer created, asked about, fetched from and acked
// with libnats through any server; ConsumerInfo's cluster section; the config errors of
// clustered consumers (10126, 10134); delete; and kill -9 of the consumer's leader while a
// client fetches and ack-syncs: the consumer goes on under a new leader, no message whose ack
// was confirmed comes back, every unacknowledged one is redelivered. Every wait polls.
#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_consumers : public cluster_js_fixture {
 protected:
  // The consumer's leader as every running server reports it, once they agree (and it is
  // not `not_this`).
  std::string consumer_leader(const std::string& stream, const std::string& name, std::chrono::milliseconds limit,
                              const std::string& not_this = {}) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      std::set<std::string> seen;
      for (int i = 0; i < 3; ++i)
        if (servers_[i]->running())
          seen.insert(consumer_info(i, stream, name).value("cluster", json::object()).value("leader", ""));
      if (seen.size() == 1 && !seen.begin()->empty() && *seen.begin() != not_this) return *seen.begin();
      std::this_thread::sleep_for(50ms);
    }
    return {};
  }

  void publish_n(int i, const std::string& subject, int from, int n) {
    auto nc = connect(servers_[i]->url());
    ASSERT_TRUE(nc);
    for (int k = from; k < from + n; ++k)
      ASSERT_NE(publish(nc.get(), subject, "m-" + std::to_string(k), "id-" + std::to_string(k), scaled(5000)), 0u)
          << "publish " << k;
  }
};

// What a fetching, ack-syncing client saw.
struct fetch_log {
  std::set<std::uint64_t> confirmed;         // stream seqs whose ack sync was answered
  std::vector<std::uint64_t> after_confirm;  // deliveries of an already confirmed seq
  std::size_t deliveries = 0;
};

// Fetches from durable `name` through `url` and ack-syncs until `want` sequences are
// confirmed, `stop_after` more are confirmed (0: no such stop) or the limit passes.
void fetch_and_ack(const std::string& url, const std::string& stream, const std::string& name, fetch_log& log,
                   std::size_t want, std::chrono::milliseconds limit, std::size_t stop_after = 0,
                   std::set<std::uint64_t>* leave_unacked = nullptr) {
  auto nc = connect(url);
  ASSERT_TRUE(nc);
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, nc.get(), nullptr), NATS_OK);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Consumer = name.c_str();
  natsSubscription* sub = nullptr;
  jsErrCode jerr{};
  natsStatus s = NATS_ERR;
  const auto deadline = clock_type::now() + limit;
  while (clock_type::now() < deadline) {  // binding asks CONSUMER.INFO: retried during an election
    s = js_PullSubscribe(&sub, js, nullptr, name.c_str(), nullptr, &so, &jerr);
    if (s == NATS_OK) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(s, NATS_OK) << nats_GetLastError(nullptr);
  jsOptions ack_opts;  // an ack sent to a killed leader is given up on after 2 s
  jsOptions_Init(&ack_opts);
  ack_opts.Wait = 2000;
  const std::size_t start = log.confirmed.size();
  while (clock_type::now() < deadline && log.confirmed.size() < want &&
         (stop_after == 0 || log.confirmed.size() - start < stop_after)) {
    natsMsgList list{};
    s = natsSubscription_Fetch(&list, sub, 5, 500, &jerr);
    if (s != NATS_OK) continue;  // a timeout, or 408/409 during the failover
    for (int i = 0; i < list.Count; ++i) {
      jsMsgMetaData* md = nullptr;
      if (natsMsg_GetMetaData(&md, list.Msgs[i]) != NATS_OK) continue;
      const std::uint64_t seq = md->Sequence.Stream;
      jsMsgMetaData_Destroy(md);
      ++log.deliveries;
      if (log.confirmed.count(seq)) log.after_confirm.push_back(seq);
      if (leave_unacked && leave_unacked->insert(seq).second && leave_unacked->size() <= 3) continue;
      if (natsMsg_AckSync(list.Msgs[i], &ack_opts, &jerr) == NATS_OK) log.confirmed.insert(seq);
    }
    natsMsgList_Destroy(&list);
  }
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
}

TEST_F(cluster_consumers, durable_pull_consumer_served_from_every_server) {
  create_r3(0, "ORDERS", "orders.>");
  ASSERT_FALSE(stream_leader("ORDERS", scaled(10000)).empty());
  publish_n(0, "orders.new", 0, 20);

  // Created with libnats on B: ConsumerInfo comes from the consumer's leader.
  {
    auto nc = connect(servers_[1]->url());
    ASSERT_TRUE(nc);
    jsCtx* js = nullptr;
    ASSERT_EQ(natsConnection_JetStream(&js, nc.get(), nullptr), NATS_OK);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "WORKER";
    cc.AckPolicy = js_AckExplicit;
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr{};
    natsStatus s = NATS_ERR;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      s = js_AddConsumer(&ci, js, "ORDERS", &cc, nullptr, &jerr);
      if (s == NATS_OK || (jerr != 10008 && s != NATS_TIMEOUT)) break;
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(s, NATS_OK) << "err_code " << int(jerr) << " " << nats_GetLastError(nullptr);
    EXPECT_STREQ(ci->Name, "WORKER");
    ASSERT_NE(ci->Cluster, nullptr);
    EXPECT_STREQ(ci->Cluster->Name, "pgtest");
    ASSERT_NE(ci->Cluster->Leader, nullptr);
    EXPECT_EQ(ci->Cluster->ReplicasLen, 2);
    EXPECT_EQ(ci->NumPending, 20u);
    jsConsumerInfo_Destroy(ci);
    jsCtx_Destroy(js);
  }
  const std::string leader = consumer_leader("ORDERS", "WORKER", scaled(10000));
  ASSERT_FALSE(leader.empty());

  // INFO on every server: the same consumer, the cluster object in nats-server's field order.
  for (int i = 0; i < 3; ++i) {
    const json ci = consumer_info(i, "ORDERS", "WORKER");
    ASSERT_EQ(ci.value("type", ""), "io.nats.jetstream.api.v1.consumer_info_response") << ci.dump();
    EXPECT_EQ(ci.value("stream_name", ""), "ORDERS");
    EXPECT_EQ(ci["config"].value("ack_policy", ""), "explicit");
    std::vector<std::string> keys;
    for (auto it = ci["cluster"].begin(); it != ci["cluster"].end(); ++it) keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"name", "leader", "replicas"})) << ci["cluster"].dump();
    EXPECT_EQ(ci["cluster"].value("leader", ""), leader);
    EXPECT_EQ(ci.value("num_pending", 0u), 20u) << ci.dump();
  }
  // NAMES and LIST on every server (from the meta log).
  for (int i = 0; i < 3; ++i) {
    auto nc = connect(servers_[i]->url());
    const json n = api(nc.get(), "$JS.API.CONSUMER.NAMES.ORDERS", "");
    EXPECT_EQ(n.value("consumers", json::array()), json::array({"WORKER"})) << n.dump();
    const json l = api(nc.get(), "$JS.API.CONSUMER.LIST.ORDERS", "");
    EXPECT_EQ(l.value("total", 0), 1) << l.dump();
    ASSERT_EQ(l.value("consumers", json::array()).size(), 1u) << l.dump();
    EXPECT_EQ(l["consumers"][0].value("name", ""), "WORKER");
  }

  // Fetched and acked through each server in turn: every message once, confirmed acks.
  fetch_log log;
  for (int i = 0; i < 3; ++i)
    fetch_and_ack(servers_[i]->url(), "ORDERS", "WORKER", log, std::size_t(7 * (i + 1)), scaled(10000));
  EXPECT_EQ(log.confirmed.size(), 20u);
  EXPECT_TRUE(log.after_confirm.empty());
  EXPECT_EQ(log.deliveries, 20u);
  // The ack floor is replicated: INFO agrees on every server, whoever answers.
  for (int i = 0; i < 3; ++i) {
    const json ci = consumer_info(i, "ORDERS", "WORKER");
    EXPECT_EQ(ci["ack_floor"].value("stream_seq", 0u), 20u) << ci.dump();
    EXPECT_EQ(ci.value("num_ack_pending", 1u), 0u);
    EXPECT_EQ(ci.value("num_pending", 1u), 0u);
  }

  // Stepdown from a server that does not lead: the leader moves and keeps the state.
  const int other = (index_of(leader) + 1) % 3;
  const json sd = api_retry(other, "$JS.API.CONSUMER.LEADER.STEPDOWN.ORDERS.WORKER", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  const std::string next = consumer_leader("ORDERS", "WORKER", scaled(10000), leader);
  ASSERT_FALSE(next.empty()) << "the consumer's leader did not move from " << leader;
  EXPECT_EQ(consumer_info(other, "ORDERS", "WORKER")["delivered"].value("stream_seq", 0u), 20u);

  // A scale of the stream (3 -> 1) takes the consumer along, with its state.
  const json scale = api_retry(1, "$JS.API.STREAM.UPDATE.ORDERS",
                               R"({"name":"ORDERS","subjects":["orders.>"],"storage":"file","num_replicas":1})");
  EXPECT_FALSE(scale.contains("error")) << scale.dump();
  json after;
  for (const auto deadline = clock_type::now() + scaled(10000); clock_type::now() < deadline;) {
    after = consumer_info(1, "ORDERS", "WORKER");
    const json cl = after.value("cluster", json::object());
    if (!cl.value("leader", "").empty() && cl.value("replicas", json::array()).empty()) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(after["ack_floor"].value("stream_seq", 0u), 20u) << after.dump();
  EXPECT_EQ(after["delivered"].value("stream_seq", 0u), 20u) << after.dump();

  // Delete through the meta leader, from any server; every server forgets it.
  const json d = api_retry(2, "$JS.API.CONSUMER.DELETE.ORDERS.WORKER", "");
  EXPECT_TRUE(d.value("success", false)) << d.dump();
  for (int i = 0; i < 3; ++i) {
    const auto deadline = clock_type::now() + scaled(5000);
    json gone;
    while (clock_type::now() < deadline) {
      gone = consumer_info(i, "ORDERS", "WORKER");
      if (gone.value("error", json::object()).value("err_code", 0) == 10014) break;
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(gone.value("error", json::object()).value("err_code", 0), 10014) << gone.dump();
  }
}

TEST_F(cluster_consumers, ephemeral_push_and_config_errors) {
  create_r3(0, "EV", "ev.>");
  ASSERT_FALSE(stream_leader("EV", scaled(10000)).empty());
  publish_n(1, "ev.x", 0, 5);

  // An ephemeral pull consumer (server-chosen name), R1 on an R3 limits stream.
  const json e = api_retry(2, "$JS.API.CONSUMER.CREATE.EV",
                           R"({"stream_name":"EV","config":{"ack_policy":"explicit","num_replicas":1}})");
  ASSERT_FALSE(e.contains("error")) << e.dump();
  const std::string ename = e.value("name", "");
  EXPECT_EQ(ename.size(), 8u) << e.dump();
  EXPECT_EQ(e["config"].value("num_replicas", 0), 1);
  EXPECT_FALSE(e["cluster"].value("leader", "").empty()) << e.dump();
  EXPECT_FALSE(e["cluster"].contains("replicas")) << "R1: the leader alone";
  // Its one replica reads its server's copy of the stream, which may still be applying the
  // last publish: num_pending reaches 5 once it has.
  {
    const auto deadline = clock_type::now() + scaled(5000);
    json ci;
    while (clock_type::now() < deadline) {
      ci = consumer_info(1, "EV", ename);
      if (ci.value("num_pending", 0u) == 5u) break;
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(ci.value("num_pending", 0u), 5u) << ci.dump();
  }
  {  // a pull through a server that may not host it
    auto nc = connect(servers_[0]->url());
    auto inbox = subscribe_sync(nc.get(), "_INBOX.eph");
    ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
    ASSERT_EQ(natsConnection_PublishRequestString(nc.get(), ("$JS.API.CONSUMER.MSG.NEXT.EV." + ename).c_str(),
                                                  "_INBOX.eph", R"({"batch":5,"expires":3000000000})"),
              NATS_OK);
    std::set<std::string> got;
    for (int i = 0; i < 5; ++i) {
      auto m = next_msg(inbox.get(), scaled(5000));
      ASSERT_TRUE(m) << "message " << i;
      got.insert(std::string(natsMsg_GetData(m.get()), natsMsg_GetDataLength(m.get())));
      EXPECT_TRUE(std::string(natsMsg_GetReply(m.get())).starts_with("$JS.ACK.EV." + ename + ".1."));
    }
    EXPECT_EQ(got.size(), 5u);
  }

  // A durable push consumer: deliveries reach a subscriber on another server; acks replicate.
  const json p = api_retry(0, "$JS.API.CONSUMER.DURABLE.CREATE.EV.PUSH",
                           R"({"stream_name":"EV","config":{"durable_name":"PUSH","deliver_subject":"push.ev",)"
                           R"("ack_policy":"explicit"}})");
  ASSERT_FALSE(p.contains("error")) << p.dump();
  {
    auto nc = connect(servers_[1]->url());
    auto sub = subscribe_sync(nc.get(), "push.ev");
    ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
    for (int i = 0; i < 5; ++i) {
      auto m = next_msg(sub.get(), scaled(5000));
      ASSERT_TRUE(m) << "push message " << i;
      natsMsg* reply = nullptr;
      ASSERT_EQ(natsConnection_Request(&reply, nc.get(), natsMsg_GetReply(m.get()), "+ACK", 4, 5000), NATS_OK)
          << "ack sync " << i;
      natsMsg_Destroy(reply);
    }
  }
  EXPECT_EQ(consumer_info(2, "EV", "PUSH")["ack_floor"].value("stream_seq", 0u), 5u);

  // Errors as nats-server's: more replicas than the stream; fewer on an interest stream.
  const json big = api_retry(1, "$JS.API.CONSUMER.DURABLE.CREATE.EV.BIG",
                             R"({"stream_name":"EV","config":{"durable_name":"BIG","num_replicas":5}})");
  EXPECT_EQ(big.value("error", json::object()).value("err_code", 0), 10126) << big.dump();
  {
    auto nc = connect(servers_[0]->url());
    json s;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      s = api(nc.get(), "$JS.API.STREAM.CREATE.INT",
              R"({"name":"INT","subjects":["int.>"],"retention":"interest","num_replicas":3})");
      if (!s.empty() && s.value("error", json::object()).value("err_code", 0) != 10008) break;
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_FALSE(s.contains("error")) << s.dump();
  }
  const json r1 = api_retry(2, "$JS.API.CONSUMER.DURABLE.CREATE.INT.R1",
                            R"({"stream_name":"INT","config":{"durable_name":"R1","num_replicas":1}})");
  EXPECT_EQ(r1.value("error", json::object()).dump(),
            R"({"code":400,"err_code":10134,"description":"consumer config replicas must match interest retention stream's replicas"})");
  const json missing = api_retry(1, "$JS.API.CONSUMER.INFO.EV.NOPE", "");
  EXPECT_EQ(missing.value("error", json::object()).value("err_code", 0), 10014) << missing.dump();
}

TEST_F(cluster_consumers, consumer_leader_kill9_loses_no_confirmed_ack_and_redelivers_the_rest) {
  create_r3(1, "JOBS", "jobs.>");
  ASSERT_FALSE(stream_leader("JOBS", scaled(10000)).empty());
  publish_n(1, "jobs.x", 0, 40);
  // ack_wait 2 s: what the kill left unacknowledged comes back quickly.
  const json c = api_retry(0, "$JS.API.CONSUMER.DURABLE.CREATE.JOBS.W",
                           R"({"stream_name":"JOBS","config":{"durable_name":"W","ack_policy":"explicit",)"
                           R"("ack_wait":2000000000}})");
  ASSERT_FALSE(c.contains("error")) << c.dump();
  const std::string leader = consumer_leader("JOBS", "W", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader);
  const int client_on = (li + 1) % 3;

  // Fetch and ack-sync 12, leaving 3 delivered and unacknowledged, then kill -9 the leader.
  fetch_log log;
  std::set<std::uint64_t> seen;
  fetch_and_ack(servers_[client_on]->url(), "JOBS", "W", log, 40, scaled(10000), 12, &seen);
  ASSERT_GE(log.confirmed.size(), 12u);
  const std::set<std::uint64_t> confirmed_before = log.confirmed;
  ::kill(servers_[li]->pid(), SIGKILL);
  const auto killed = clock_type::now();
  servers_[li]->stop();

  // The same client's server goes on under the new leader: everything is confirmed at last,
  // nothing confirmed is delivered again.
  fetch_and_ack(servers_[client_on]->url(), "JOBS", "W", log, 40, scaled(30000));
  const long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - killed).count());
  std::cerr << "killed consumer leader " << leader << "; all 40 confirmed " << ms << " ms later, "
            << log.deliveries << " deliveries\n";
  EXPECT_EQ(log.confirmed.size(), 40u);
  EXPECT_TRUE(log.after_confirm.empty()) << "a confirmed ack was redelivered, e.g. seq "
                                         << (log.after_confirm.empty() ? 0 : log.after_confirm.front());
  for (auto s : confirmed_before) EXPECT_TRUE(log.confirmed.count(s));
  const std::string next = consumer_leader("JOBS", "W", scaled(10000));
  ASSERT_FALSE(next.empty());
  EXPECT_NE(next, leader);
  const json ci = consumer_info(client_on, "JOBS", "W");
  EXPECT_EQ(ci["ack_floor"].value("stream_seq", 0u), 40u) << ci.dump();
  EXPECT_EQ(ci.value("num_ack_pending", 1u), 0u);

  // The killed server comes back, replays the consumer's log and agrees.
  ASSERT_TRUE(servers_[li]->start()) << servers_[li]->error();
  const auto deadline = clock_type::now() + scaled(15000);
  json back;
  while (clock_type::now() < deadline) {
    back = consumer_info(li, "JOBS", "W");
    if (back.value("ack_floor", json::object()).value("stream_seq", 0u) == 40u) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(back.value("ack_floor", json::object()).value("stream_seq", 0u), 40u) << back.dump();
}

}  // namespace
}  // namespace peregrine::test
