// `nats stream edit ORDERS --replicas=3` on a stream that has consumers (issue 11, the
// chapter's "Surviving node loss"), on three real peregrine-server processes driven by
// libnats: an R1 stream on A with a durable pull consumer that has acked messages, pending
// ones and a redelivered one, a second durable that has fetched nothing and an ephemeral (it
// stays R1 on the stream's server, as nats-server's ephemerals stay R1), is scaled to R3
// with js_UpdateStream; both consumers keep their state (delivered, ack floor, pending acks,
// redelivery counts) and ConsumerInfo gets its cluster section; the client goes on fetching
// and acking where it left off (a pre-scale delivery acked after the scale), nothing acked is
// delivered again; kill -9 of the stream's leader and the consumer goes on from a survivor;
// back to R1 the consumer keeps its state. Every wait polls with a bound.
#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_consumer_scale : public cluster_js_fixture {
 protected:
  json api_on(int i, const std::string& subject, const std::string& body, int timeout_ms = 3000) {
    auto nc = connect(servers_[i]->url());
    if (!nc) return json::object();
    return api(nc.get(), subject, body, timeout_ms);
  }

  // Retried while the cluster answers 10008 (an election) or nothing.
  json api_retried(int i, const std::string& subject, const std::string& body) {
    json r;
    const auto deadline = clock_type::now() + scaled(15000);
    while (clock_type::now() < deadline) {
      r = api_on(i, subject, body);
      if (!r.empty() && r.value("error", json::object()).value("err_code", 0) != 10008) break;
      std::this_thread::sleep_for(100ms);
    }
    return r;
  }

  // CONSUMER.INFO on server i once it comes from a leader with `replicas` followers (and
  // `also` holds: a leader's stream replica may still be catching up with the seed).
  json consumer_info_with(int i, const std::string& name, std::size_t replicas,
                          const std::function<bool(const json&)>& also = nullptr) {
    json ci;
    const auto deadline = clock_type::now() + scaled(15000);
    while (clock_type::now() < deadline) {
      ci = api_on(i, "$JS.API.CONSUMER.INFO.ORDERS." + name, "");
      const json cl = ci.value("cluster", json::object());
      if (ci.contains("ack_floor") && !cl.value("leader", "").empty() &&
          cl.value("replicas", json::array()).size() == replicas && (!also || also(ci)))
        break;
      std::this_thread::sleep_for(100ms);
    }
    return ci;
  }

  // An ack sync sent as a plain request to a delivery's reply subject, retried until answered
  // (the consumer's leader may still be elected).
  bool ack_sync(natsConnection* nc, const std::string& reply) {
    const auto deadline = clock_type::now() + scaled(15000);
    while (clock_type::now() < deadline) {
      natsMsg* r = nullptr;
      if (natsConnection_RequestString(&r, nc, reply.c_str(), "+ACK", 1000) == NATS_OK) {
        natsMsg_Destroy(r);
        return true;
      }
    }
    return false;
  }
};

struct delivery_seen {
  std::uint64_t stream_seq = 0, consumer_seq = 0, delivered = 0;
  std::string reply;
};

// Fetches `n` deliveries (polled, bounded); each message's metadata and reply subject.
std::vector<delivery_seen> fetch(natsSubscription* sub, std::size_t n, std::chrono::milliseconds limit) {
  std::vector<delivery_seen> out;
  const auto deadline = clock_type::now() + limit;
  while (out.size() < n && clock_type::now() < deadline) {
    natsMsgList list{};
    jsErrCode jerr{};
    if (natsSubscription_Fetch(&list, sub, int(n - out.size()), 1000, &jerr) != NATS_OK) continue;
    for (int i = 0; i < list.Count; ++i) {
      jsMsgMetaData* md = nullptr;
      if (natsMsg_GetMetaData(&md, list.Msgs[i]) != NATS_OK) continue;
      out.push_back({md->Sequence.Stream, md->Sequence.Consumer, md->NumDelivered,
                     natsMsg_GetReply(list.Msgs[i]) ? natsMsg_GetReply(list.Msgs[i]) : ""});
      jsMsgMetaData_Destroy(md);
    }
    natsMsgList_Destroy(&list);
  }
  return out;
}

natsSubscription* bind_pull(jsCtx* js, const char* durable, std::chrono::milliseconds limit) {
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = "ORDERS";
  so.Consumer = durable;
  natsSubscription* sub = nullptr;
  const auto deadline = clock_type::now() + limit;
  while (clock_type::now() < deadline) {  // binding asks CONSUMER.INFO: retried during an election
    jsErrCode jerr{};
    if (js_PullSubscribe(&sub, js, nullptr, durable, nullptr, &so, &jerr) == NATS_OK) return sub;
    std::this_thread::sleep_for(100ms);
  }
  return nullptr;
}

TEST_F(cluster_consumer_scale, r1_with_consumers_to_r3_survives_leader_kill9_and_back_to_r1) {
  auto nca = connect(servers_[0]->url());
  ASSERT_TRUE(nca);
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, nca.get(), nullptr), NATS_OK);
  // The R1 stream on A, 20 orders, and two durable pull consumers.
  const char* subjects[] = {"orders.>"};
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = "ORDERS";
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = js_FileStorage;
  sc.Replicas = 1;
  jsErrCode jerr{};
  ASSERT_EQ(js_AddStream(nullptr, js, &sc, nullptr, &jerr), NATS_OK) << int(jerr);
  for (int n = 1; n <= 20; ++n)
    ASSERT_EQ(publish(nca.get(), "orders.new", "order-" + std::to_string(n), "id-" + std::to_string(n), scaled(5000)),
              std::uint64_t(n));
  for (const char* name : {"WORKER", "AUDIT"}) {
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = name;
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = 60'000'000'000;  // nothing pending comes back by itself during the test
    ASSERT_EQ(js_AddConsumer(nullptr, js, "ORDERS", &cc, nullptr, &jerr), NATS_OK) << int(jerr);
  }

  // An ephemeral too: it stays R1 on the stream's server, as nats-server's ephemerals are R1.
  const json eph = api(nca.get(), "$JS.API.CONSUMER.CREATE.ORDERS",
                       R"({"stream_name":"ORDERS","config":{"ack_policy":"explicit","inactive_threshold":60000000000}})");
  const std::string eph_name = eph.value("name", "");
  ASSERT_FALSE(eph_name.empty()) << eph.dump();

  // WORKER: 1-8 delivered, 1-5 acked, 6 nak'ed and delivered again, 6-8 left pending.
  natsSubscription* sub = bind_pull(js, "WORKER", scaled(5000));
  ASSERT_NE(sub, nullptr);
  std::set<std::uint64_t> confirmed;
  std::map<std::uint64_t, std::string> pending_reply;
  auto got = fetch(sub, 8, scaled(10000));
  ASSERT_EQ(got.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) ASSERT_EQ(got[i].stream_seq, i + 1);
  for (std::size_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(ack_sync(nca.get(), got[i].reply));
    confirmed.insert(got[i].stream_seq);
  }
  pending_reply[7] = got[6].reply;
  pending_reply[8] = got[7].reply;
  natsMsg* nak = nullptr;
  ASSERT_EQ(natsMsg_Create(&nak, got[5].reply.c_str(), nullptr, "-NAK", 4), NATS_OK);
  ASSERT_EQ(natsConnection_PublishMsg(nca.get(), nak), NATS_OK);
  natsMsg_Destroy(nak);
  got = fetch(sub, 1, scaled(10000));
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].stream_seq, 6u);
  EXPECT_EQ(got[0].delivered, 2u);
  pending_reply[6] = got[0].reply;
  const json before = api(nca.get(), "$JS.API.CONSUMER.INFO.ORDERS.WORKER", "");
  ASSERT_EQ(before.value("ack_floor", json::object()).value("stream_seq", 0), 5) << before.dump();
  ASSERT_EQ(before.value("num_ack_pending", 0), 3) << before.dump();
  ASSERT_EQ(before.value("num_redelivered", 0), 1) << before.dump();
  EXPECT_TRUE(before.value("cluster", json::object()).value("replicas", json::array()).empty()) << before.dump();

  // `nats stream edit ORDERS --replicas=3`, as libnats asks it.
  sc.Replicas = 3;
  jsStreamInfo* si = nullptr;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = scaled(15000).count();
  ASSERT_EQ(js_UpdateStream(&si, js, &sc, &jo, &jerr), NATS_OK) << int(jerr) << " " << nats_GetLastError(nullptr);
  EXPECT_EQ(si->Config->Replicas, 3);
  EXPECT_EQ(si->State.Msgs, 20u);
  ASSERT_NE(si->Cluster, nullptr);
  EXPECT_STREQ(si->Cluster->Leader, "A");
  EXPECT_EQ(si->Cluster->ReplicasLen, 2);
  jsStreamInfo_Destroy(si);

  // Both consumers as they were, on every server, now with a cluster section (R3).
  for (int i = 0; i < 3; ++i) {
    const json ci =
        consumer_info_with(i, "WORKER", 2, [](const json& j) { return j.value("num_pending", 0) == 12; });
    ASSERT_EQ(ci.value("cluster", json::object()).value("replicas", json::array()).size(), 2u) << ci.dump();
    EXPECT_EQ(ci.value("delivered", json::object()).value("stream_seq", 0), 8) << ci.dump();
    EXPECT_EQ(ci.value("delivered", json::object()).value("consumer_seq", 0), 9) << ci.dump();
    EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 5) << ci.dump();
    EXPECT_EQ(ci.value("num_ack_pending", 0), 3) << ci.dump();
    EXPECT_EQ(ci.value("num_redelivered", 0), 1) << ci.dump();
    EXPECT_EQ(ci.value("num_pending", 0), 12) << ci.dump();
    const json audit =
        consumer_info_with(i, "AUDIT", 2, [](const json& j) { return j.value("num_pending", 0) == 20; });
    EXPECT_EQ(audit.value("num_pending", 0), 20) << audit.dump();
    EXPECT_EQ(audit.value("delivered", json::object()).value("stream_seq", 1), 0) << audit.dump();
  }
  const json eph_info = consumer_info_with(0, eph_name, 0);
  EXPECT_EQ(eph_info.value("cluster", json::object()).value("leader", ""), "A") << eph_info.dump();
  EXPECT_EQ(eph_info.value("num_pending", 0), 20) << eph_info.dump();
  const json stream_info = api(nca.get(), "$JS.API.STREAM.INFO.ORDERS", "");
  EXPECT_EQ(stream_info.value("config", json::object()).value("num_replicas", 0), 3) << stream_info.dump();

  // The client goes on where it left off: a pre-scale delivery acked now, then 9-14.
  ASSERT_TRUE(ack_sync(nca.get(), pending_reply[7]));
  confirmed.insert(7);
  got = fetch(sub, 6, scaled(15000));
  ASSERT_EQ(got.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(got[i].stream_seq, 9 + i);
    EXPECT_EQ(got[i].consumer_seq, 10 + i) << "consumer sequences continue";
    ASSERT_TRUE(ack_sync(nca.get(), got[i].reply));
    confirmed.insert(got[i].stream_seq);
  }
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
  nca.reset();

  // kill -9 of the stream's leader (A): the consumer goes on from a survivor.
  const std::string leader = stream_leader("ORDERS", scaled(5000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader);
  ::kill(servers_[li]->pid(), SIGKILL);
  servers_[li]->stop();
  const int survivor = (li + 1) % 3, other = (li + 2) % 3;
  auto ncs = connect(servers_[survivor]->url());
  ASSERT_TRUE(ncs);
  ASSERT_TRUE(ack_sync(ncs.get(), pending_reply[6]));
  ASSERT_TRUE(ack_sync(ncs.get(), pending_reply[8]));
  confirmed.insert(6);
  confirmed.insert(8);
  ASSERT_EQ(natsConnection_JetStream(&js, ncs.get(), nullptr), NATS_OK);
  sub = bind_pull(js, "WORKER", scaled(15000));
  ASSERT_NE(sub, nullptr);
  got = fetch(sub, 6, scaled(15000));
  ASSERT_EQ(got.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(got[i].stream_seq, 15 + i);
    EXPECT_EQ(confirmed.count(got[i].stream_seq), 0u) << "an acked message came back";
    ASSERT_TRUE(ack_sync(ncs.get(), got[i].reply));
  }
  json ci = consumer_info_with(survivor, "WORKER", 2);
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 20) << ci.dump();
  EXPECT_EQ(ci.value("num_ack_pending", 1), 0) << ci.dump();
  EXPECT_EQ(ci.value("num_pending", 1), 0) << ci.dump();
  EXPECT_NE(ci.value("cluster", json::object()).value("leader", ""), leader) << ci.dump();
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);

  // Back to R1, asked on the other survivor: both consumers stay, with their state.
  const json down = api_retried(other, "$JS.API.STREAM.UPDATE.ORDERS",
                                json{{"name", "ORDERS"}, {"subjects", {"orders.>"}}, {"storage", "file"},
                                     {"num_replicas", 1}}
                                    .dump());
  ASSERT_FALSE(down.contains("error")) << down.dump();
  EXPECT_EQ(down.value("config", json::object()).value("num_replicas", 0), 1);
  ci = consumer_info_with(other, "WORKER", 0);
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 20) << ci.dump();
  EXPECT_EQ(ci.value("delivered", json::object()).value("stream_seq", 0), 20) << ci.dump();
  EXPECT_EQ(ci.value("num_ack_pending", 1), 0) << ci.dump();
  const json audit =
      consumer_info_with(other, "AUDIT", 0, [](const json& j) { return j.value("num_pending", 0) == 20; });
  EXPECT_EQ(audit.value("num_pending", 0), 20) << audit.dump();
  // And delivers what comes next, only that.
  auto nco = connect(servers_[other]->url());
  ASSERT_TRUE(nco);
  ASSERT_EQ(publish(nco.get(), "orders.new", "order-21", "id-21", scaled(5000)), 21u);
  ASSERT_EQ(natsConnection_JetStream(&js, nco.get(), nullptr), NATS_OK);
  sub = bind_pull(js, "WORKER", scaled(15000));
  ASSERT_NE(sub, nullptr);
  got = fetch(sub, 1, scaled(15000));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].stream_seq, 21u);
  ASSERT_TRUE(ack_sync(nco.get(), got[0].reply));
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
}

}  // namespace
}  // namespace peregrine::test
