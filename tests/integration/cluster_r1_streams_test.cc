// An R1 stream in a cluster, used from clients on every server (issue 11), as on
// nats-server, where any server serves every stream: the chapter's ORDERS created with one
// replica through server A, other streams with overlapping subjects refused through B and C
// (10065), then published to through B and C (PubAcks from A's stream),
// its info, a direct get and a message get through the others, a durable pull consumer
// made through B and fetched from and acked through C, an ordered push consumer through C,
// a create of the same name through another server (the same config answers as a create,
// another config is 10058), and a delete through C that every server sees; a restarted
// server's R1 stream served again; clients kept out of the servers' own $PG. subjects.
// libnats and a raw client on three real peregrine-server processes. Every wait polls with a
// bound.
#include <gtest/gtest.h>

#include "tests/integration/cluster_js_fixture.h"
#include "tests/integration/raw_client.h"

namespace peregrine::test {
namespace {

class cluster_r1_streams : public cluster_js_clients {
 protected:
  // nats-server 2.9.10 serves an R1 stream through every server too (it places the stream on
  // any server: the checks follow where it went).
  bool runs_on_reference() const override { return true; }

  std::vector<std::string> names(int i) {
    std::vector<std::string> out;
    const json r = api(i, "$JS.API.STREAM.NAMES", "");
    if (r.contains("streams") && r["streams"].is_array())
      for (const auto& n : r["streams"]) out.push_back(n.get<std::string>());
    return out;
  }

  // Until server i lists exactly `want` (each server learns the others' R1 streams from the
  // meta log).
  bool wait_names(int i, const std::vector<std::string>& want) {
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      if (names(i) == want) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

};

TEST_F(cluster_r1_streams, an_r1_stream_is_served_through_every_server) {
  // `nats stream add ORDERS --subjects 'orders.>' --replicas 1` through A.
  const json cfg{{"name", "ORDERS"}, {"subjects", {"orders.>"}}, {"storage", "file"}, {"num_replicas", 1},
                 {"allow_direct", true}};
  json created;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {  // the cluster may still be settling
    created = api(0, "$JS.API.STREAM.CREATE.ORDERS", cfg.dump());
    if (created.contains("config")) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(created.contains("config")) << created.dump();
  // Peregrine keeps it on the server asked; nats-server's meta leader places it anywhere.
  const std::string home = created["cluster"].value("leader", "");
  if (!reference_server()) {
    EXPECT_EQ(home, "A") << created.dump();
  }
  ASSERT_FALSE(home.empty()) << created.dump();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(wait_names(i, {"ORDERS"})) << char('A' + i) << logs();

  // Subjects that overlap ORDERS' are refused through any server, for an R1 or an R3 stream.
  const json r1_clash = api(2, "$JS.API.STREAM.CREATE.SHIPPING",
                            json{{"name", "SHIPPING"}, {"subjects", {"orders.shipped"}}, {"num_replicas", 1}}.dump());
  EXPECT_EQ(r1_clash.value("error", json::object()).value("err_code", 0), 10065) << r1_clash.dump();
  const json r3_clash = api(1, "$JS.API.STREAM.CREATE.AUDIT",
                            json{{"name", "AUDIT"}, {"subjects", {"orders.*"}}, {"num_replicas", 3}}.dump(), 6000);
  EXPECT_EQ(r3_clash.value("error", json::object()).value("err_code", 0), 10065) << r3_clash.dump();
  EXPECT_EQ(names(0), std::vector<std::string>{"ORDERS"});

  // Publishes through B and C: PubAcks from A's stream, in one sequence.
  for (int k = 0; k < 6; ++k) {
    const int via = 1 + k % 2;
    jsPubAck* pa = nullptr;
    jsErrCode jerr = jsErrCode(0);
    const std::string data = "order-" + std::to_string(k);
    ASSERT_EQ(js_Publish(&pa, js_[via], "orders.new", data.data(), int(data.size()), nullptr, &jerr), NATS_OK)
        << "via " << char('A' + via) << " err " << int(jerr);
    EXPECT_STREQ(pa->Stream, "ORDERS");
    EXPECT_EQ(pa->Sequence, std::uint64_t(k + 1));
    jsPubAck_Destroy(pa);
  }

  // `nats stream info ORDERS` through C: A's state.
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = jsErrCode(0);
  ASSERT_EQ(js_GetStreamInfo(&si, js_[2], "ORDERS", nullptr, &jerr), NATS_OK) << int(jerr);
  EXPECT_EQ(si->State.Msgs, 6u);
  EXPECT_EQ(si->State.LastSeq, 6u);
  ASSERT_NE(si->Cluster, nullptr);
  EXPECT_EQ(std::string(si->Cluster->Leader), home);
  EXPECT_EQ(si->Config->Replicas, 1);
  jsStreamInfo_Destroy(si);

  // A message get and a direct get through B.
  const json got = api(1, "$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":3})");
  ASSERT_TRUE(got.contains("message")) << got.dump();
  EXPECT_EQ(base64_decode(got["message"].value("data", "")), "order-2");
  natsMsg* direct = nullptr;
  ASSERT_EQ(natsConnection_RequestString(&direct, nc_[1].get(), "$JS.API.DIRECT.GET.ORDERS", R"({"seq":4})", 3000),
            NATS_OK);
  EXPECT_EQ(data_of(direct), "order-3");
  const char* seq = nullptr;
  ASSERT_EQ(natsMsgHeader_Get(direct, "Nats-Sequence", &seq), NATS_OK);
  EXPECT_STREQ(seq, "4");
  natsMsg_Destroy(direct);

  // A durable pull consumer made through B; C fetches and acks; the consumer sees the acks.
  const json durable = api(1, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.WORKER",
                           R"({"stream_name":"ORDERS","config":{"durable_name":"WORKER","ack_policy":"explicit"}})");
  ASSERT_TRUE(durable.contains("config")) << durable.dump();
  EXPECT_EQ(durable["cluster"].value("leader", ""), home) << durable.dump();
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = "ORDERS";
  so.Consumer = "WORKER";
  natsSubscription* pull = nullptr;
  ASSERT_EQ(js_PullSubscribe(&pull, js_[2], "orders.>", "WORKER", nullptr, &so, &jerr), NATS_OK) << int(jerr);
  int fetched = 0;
  const auto fetch_deadline = clock_type::now() + scaled(10000);
  while (fetched < 6 && clock_type::now() < fetch_deadline) {
    natsMsgList list{};
    if (natsSubscription_Fetch(&list, pull, 6 - fetched, 1000, &jerr) != NATS_OK) continue;
    for (int k = 0; k < list.Count; ++k) {
      EXPECT_EQ(data_of(list.Msgs[k]), "order-" + std::to_string(fetched));
      EXPECT_EQ(natsMsg_AckSync(list.Msgs[k], nullptr, &jerr), NATS_OK) << int(jerr);
      ++fetched;
    }
    natsMsgList_Destroy(&list);
  }
  EXPECT_EQ(fetched, 6);
  natsSubscription_Destroy(pull);
  json ci;
  const auto ack_deadline = clock_type::now() + scaled(5000);
  while (clock_type::now() < ack_deadline) {
    ci = consumer_info(0, "ORDERS", "WORKER");
    if (ci.value("ack_floor", json::object()).value("stream_seq", 0) == 6) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 6) << ci.dump();
  EXPECT_EQ(ci.value("num_ack_pending", -1), 0) << ci.dump();

  // An ordered push consumer through C (flow control and heartbeats across the route).
  jsSubOptions_Init(&so);
  so.Ordered = true;
  natsSubscription* ordered = nullptr;
  ASSERT_EQ(js_SubscribeSync(&ordered, js_[2], "orders.>", nullptr, &so, &jerr), NATS_OK) << int(jerr);
  for (int k = 0; k < 6; ++k) {
    natsMsg* m = nullptr;
    ASSERT_EQ(natsSubscription_NextMsg(&m, ordered, 5000), NATS_OK) << k;
    EXPECT_EQ(data_of(m), "order-" + std::to_string(k));
    // The message's own subject, not the consumer's inbox, though it crossed a route (when C
    // is not A) as "<ack reply>@<subject>".
    EXPECT_STREQ(natsMsg_GetSubject(m), "orders.new") << k;
    natsMsg_Destroy(m);
  }
  natsSubscription_Destroy(ordered);

  // The same name through B: the same config answers as a create, another is refused.
  const json again = api(1, "$JS.API.STREAM.CREATE.ORDERS", cfg.dump());
  EXPECT_TRUE(again.contains("config")) << again.dump();
  EXPECT_EQ(again.value("state", json::object()).value("messages", 0), 6) << again.dump();
  json other = cfg;
  other["subjects"] = {"other.>"};
  const json refused = api(2, "$JS.API.STREAM.CREATE.ORDERS", other.dump());
  EXPECT_EQ(refused.value("error", json::object()).value("err_code", 0), 10058) << refused.dump();

  // `nats stream rm ORDERS` through C: gone, and from every server's list.
  jsErrCode derr = jsErrCode(0);
  ASSERT_EQ(js_DeleteStream(js_[2], "ORDERS", nullptr, &derr), NATS_OK) << int(derr);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(wait_names(i, {})) << char('A' + i);
  const json gone = api(0, "$JS.API.STREAM.INFO.ORDERS", "");
  EXPECT_EQ(gone.value("error", json::object()).value("err_code", 0), 10059) << gone.dump();
  // A stream of that name can be made again, here through C (Peregrine: C now holds it).
  json remade;
  const auto remake_deadline = clock_type::now() + scaled(5000);
  while (clock_type::now() < remake_deadline) {  // until C's report of the delete applied
    remade = api(2, "$JS.API.STREAM.CREATE.ORDERS", other.dump());
    if (remade.contains("config")) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(remade.contains("config")) << remade.dump();
  if (!reference_server()) {
    EXPECT_EQ(remade["cluster"].value("leader", ""), "C") << remade.dump();
  }
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(wait_names(i, {"ORDERS"})) << char('A' + i);
  jsPubAck* pa = nullptr;
  ASSERT_EQ(js_Publish(&pa, js_[0], "other.x", "y", 1, nullptr, &jerr), NATS_OK) << int(jerr);
  EXPECT_EQ(pa->Sequence, 1u);
  jsPubAck_Destroy(pa);
}

// A restarted server reports its R1 streams again. While it is down, STREAM.INFO about one is
// answered 10118 "stream is offline" (other requests wait for no one: the client times out),
// then everything works again.
TEST_F(cluster_r1_streams, a_restarted_server_serves_its_r1_stream_again) {
  const json cfg{{"name", "LOCAL"}, {"subjects", {"local.>"}}, {"storage", "file"}, {"num_replicas", 1}};
  json created;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {
    created = api(1, "$JS.API.STREAM.CREATE.LOCAL", cfg.dump());
    if (created.contains("config")) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(created.contains("config")) << created.dump();
  const std::string home = created["cluster"].value("leader", "");
  ASSERT_EQ(home.size(), 1u) << created.dump();
  const int h = home[0] - 'A', other = (h + 1) % 3, third = (h + 2) % 3;
  ASSERT_TRUE(wait_names(other, {"LOCAL"}));
  jsPubAck* pa = nullptr;
  jsErrCode jerr = jsErrCode(0);
  ASSERT_EQ(js_Publish(&pa, js_[other], "local.a", "1", 1, nullptr, &jerr), NATS_OK) << int(jerr);
  jsPubAck_Destroy(pa);
  const json durable = api(other, "$JS.API.CONSUMER.DURABLE.CREATE.LOCAL.D",
                           R"({"stream_name":"LOCAL","config":{"durable_name":"D","ack_policy":"explicit"}})");
  ASSERT_TRUE(durable.contains("config")) << durable.dump();
  nc_[h].reset();
  jsCtx_Destroy(std::exchange(js_[h], nullptr));
  ::kill(servers_[h]->pid(), SIGKILL);
  servers_[h]->stop();
  // While its server is down, its info is answered "stream is offline" (10118), as nats-server
  // answers (not left to time out). Not asked of nats-server 2.9.10: it takes a server killed
  // with SIGKILL for offline only once that server's statsz stop coming (past this wait).
  json offline = reference_server() ? json{{"error", {{"err_code", 10118}, {"description", "stream is offline"}}}}
                                    : json::object();
  const auto down = clock_type::now() + scaled(10000);
  while (!reference_server() && clock_type::now() < down) {
    offline = api(other, "$JS.API.STREAM.INFO.LOCAL", "", 1000);
    if (offline.value("error", json::object()).value("err_code", 0) == 10118) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(offline.value("error", json::object()).value("err_code", 0), 10118) << offline.dump();
  EXPECT_EQ(offline.value("error", json::object()).value("description", ""), "stream is offline") << offline.dump();
  if (!reference_server()) {
    // Through the server that knows the stream's home (the third may not have applied its
    // report yet).
    const json ci = api(other, "$JS.API.CONSUMER.INFO.LOCAL.D", "", 1000);
    EXPECT_EQ(ci.value("error", json::object()).value("err_code", 0), 10119) << ci.dump();
    EXPECT_EQ(ci.value("error", json::object()).value("description", ""), "consumer is offline") << ci.dump();
  }
  ASSERT_TRUE(servers_[h]->start()) << servers_[h]->error();
  // Through another server: the stream and its message, once its server is back.
  json info;
  const auto back = clock_type::now() + scaled(15000);
  while (clock_type::now() < back) {
    info = api(other, "$JS.API.STREAM.INFO.LOCAL", "", 1000);
    if (info.contains("state")) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(info.contains("state")) << info.dump() << logs();
  EXPECT_EQ(info["state"].value("messages", 0), 1);
  std::uint64_t seq = 0;
  const auto pub_deadline = clock_type::now() + scaled(10000);
  while (seq == 0 && clock_type::now() < pub_deadline) {
    seq = publish(nc_[third].get(), "local.b", "2", "m2", scaled(1000));
  }
  EXPECT_EQ(seq, 2u);
}

// $PG. carries the servers' own requests (a server removal, R1 stream reports): a client
// publishing there gets a permissions violation and the connection stays open, and nothing
// it sent takes effect.
TEST_F(cluster_r1_streams, clients_cannot_publish_the_clusters_own_requests) {
  if (reference_server()) GTEST_SKIP() << "$PG. is Peregrine's";
  raw_client c;
  ASSERT_TRUE(c.open(servers_[2]->port()));
  const std::string body = R"({"peer":"B"})";
  ASSERT_TRUE(c.send("PUB $PG.JSC.A.1.SERVER.REMOVE " + std::to_string(body.size()) + "\r\n" + body + "\r\n"));
  const auto line = c.read_line();
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "-ERR 'Permissions Violation for Publish to \"$PG.JSC.A.1.SERVER.REMOVE\"'\r\n");
  EXPECT_TRUE(c.ping_pong());
  std::this_thread::sleep_for(500ms);
  for (int i = 0; i < 3; ++i) {
    const json j = json::parse(http_get(http_[i], "/jsz"), nullptr, false);
    EXPECT_EQ(j["meta_cluster"].value("cluster_size", 0), 3) << char('A' + i) << ": " << j.dump();
  }
}

}  // namespace
}  // namespace peregrine::test
