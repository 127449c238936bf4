// Consumers on consumer threads (js_threads: 2, consumer_threads: 1): a pull consumer of a
// limits stream runs on pg-cons-0, reading its stream through the owner's feed; its pulls and
// acks reach that thread, not the stream's owner (/metrics counts what each owner handled).
// Peregrine only (nats-server has no such placement).
#include "tests/integration/js_consumer_threads_fixture.h"

namespace peregrine::test {
namespace {

TEST_F(js_consumer_threads, the_server_runs_a_consumer_thread) {
  const auto names = thread_names();
  EXPECT_TRUE(names.count("pg-cons-0")) << "threads: " << names.size();
  EXPECT_TRUE(names.count("pg-js-1"));
}

// Pulls and acks go to the consumer's thread: the owners handle none of them, and the
// consumer still sees every message (stored before and after it was made), filtered.
TEST_F(js_consumer_threads, a_pull_consumer_is_served_apart_from_its_streams_owner) {
  auto r = create({{"name", "CT"}, {"subjects", {"ct.>"}}, {"storage", "file"}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  for (int i = 0; i < 50; ++i) ASSERT_EQ(publish(i % 2 ? "ct.odd" : "ct.even", "m").value("seq", 0), i + 1);
  r = request("$JS.API.CONSUMER.DURABLE.CREATE.CT.C",
              nlohmann::json{{"stream_name", "CT"},
                             {"config", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"filter_subject", "ct.even"}}}}
                  .dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r.value("num_pending", 0), 25);
  for (int i = 50; i < 100; ++i) ASSERT_EQ(publish(i % 2 ? "ct.odd" : "ct.even", "m").value("seq", 0), i + 1);

  const long long before = owners_handled();
  ASSERT_GE(before, 0);
  std::size_t got = 0;
  for (int round = 0; round < 20 && got < 50; ++round) {
    auto subjects = pull("CT", "C", 10);
    for (const auto& s : subjects) EXPECT_EQ(s, "ct.even");
    got += subjects.size();
  }
  EXPECT_EQ(got, 50u);
  const long long during = owners_handled() - before;
  // The pulls and 50 acks went elsewhere; what the owners saw is the INFO below at most.
  EXPECT_LT(during, 5) << "owners handled " << during << " messages during the pulls";

  auto info = request("$JS.API.CONSUMER.INFO.CT.C");
  ASSERT_FALSE(info.contains("error")) << info.dump();
  EXPECT_EQ(info["delivered"].value("stream_seq", 0), 99);
  EXPECT_EQ(info["ack_floor"].value("stream_seq", 0), 99);
  EXPECT_EQ(info.value("num_ack_pending", -1), 0);
  EXPECT_EQ(info.value("num_pending", -1), 0);
}

// An unacked message comes back after its ack wait, from the consumer thread's timers.
TEST_F(js_consumer_threads, an_unacked_message_is_redelivered) {
  ASSERT_FALSE(create({{"name", "RD"}, {"subjects", {"rd.>"}}, {"storage", "memory"}}).contains("error"));
  auto r = request("$JS.API.CONSUMER.DURABLE.CREATE.RD.C",
                   nlohmann::json{{"stream_name", "RD"},
                                  {"config", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"ack_wait", 300000000}}}}
                       .dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_EQ(publish("rd.a", "x").value("seq", 0), 1);
  ASSERT_EQ(pull("RD", "C", 1, false).size(), 1u);
  auto again = pull("RD", "C", 1);
  ASSERT_EQ(again.size(), 1u);
  auto info = request("$JS.API.CONSUMER.INFO.RD.C");
  EXPECT_EQ(info["delivered"].value("consumer_seq", 0), 2);  // delivered twice
  EXPECT_EQ(info["ack_floor"].value("stream_seq", 0), 1);
  EXPECT_EQ(info.value("num_ack_pending", -1), 0);
}

// A stream of more messages than the consumer thread's window (8,192) is read page by page.
TEST_F(js_consumer_threads, a_backlog_larger_than_the_window_is_delivered_in_order) {
  ASSERT_FALSE(create({{"name", "BIG"}, {"subjects", {"big"}}, {"storage", "memory"}}).contains("error"));
  constexpr int kMsgs = 10000;
  for (int i = 0; i < kMsgs; ++i) natsConnection_PublishString(nc_.get(), "big", "x");
  natsConnection_Flush(nc_.get());
  for (int i = 0; i < 200 && state("BIG").value("messages", 0) < kMsgs; ++i) usleep(20000);
  ASSERT_EQ(state("BIG").value("messages", 0), kMsgs);
  auto r = request("$JS.API.CONSUMER.DURABLE.CREATE.BIG.C",
                   nlohmann::json{{"stream_name", "BIG"}, {"config", {{"durable_name", "C"}, {"ack_policy", "none"}}}}
                       .dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  natsSubscription* raw = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&raw, nc_.get(), "_INBOX.big"), NATS_OK);
  natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.BIG.C", "_INBOX.big",
                                      R"({"batch":10000,"expires":20000000000})");
  std::uint64_t last = 0;
  int got = 0;
  for (; got < kMsgs; ++got) {
    natsMsg* m = nullptr;
    if (natsSubscription_NextMsg(&m, raw, 10000) != NATS_OK) break;
    // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>...
    const std::string ack = natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "";
    natsMsg_Destroy(m);
    std::smatch sm;
    static const std::regex re("^\\$JS\\.ACK\\.BIG\\.C\\.[0-9]+\\.([0-9]+)\\.");
    ASSERT_TRUE(std::regex_search(ack, sm, re)) << ack;
    const std::uint64_t seq = std::stoull(sm[1]);
    ASSERT_EQ(seq, last + 1);
    last = seq;
  }
  natsSubscription_Destroy(raw);
  EXPECT_EQ(got, kMsgs);
}

// Deleting the consumer (and then its stream) leaves no pull answered by it.
TEST_F(js_consumer_threads, a_deleted_consumer_no_longer_answers) {
  ASSERT_FALSE(create({{"name", "DL"}, {"subjects", {"dl"}}, {"storage", "file"}}).contains("error"));
  auto r = request("$JS.API.CONSUMER.DURABLE.CREATE.DL.C",
                   nlohmann::json{{"stream_name", "DL"}, {"config", {{"durable_name", "C"}, {"ack_policy", "explicit"}}}}
                       .dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  auto names = request("$JS.API.CONSUMER.NAMES.DL");
  ASSERT_EQ(names["consumers"].size(), 1u) << names.dump();
  r = request("$JS.API.CONSUMER.DELETE.DL.C");
  EXPECT_TRUE(r.value("success", false)) << r.dump();
  natsMsg* reply = nullptr;
  EXPECT_EQ(natsConnection_RequestString(&reply, nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.DL.C", R"({"batch":1})", 1000),
            NATS_NO_RESPONDERS);
  natsMsg_Destroy(reply);
  r = request("$JS.API.STREAM.DELETE.DL");
  EXPECT_TRUE(r.value("success", false)) << r.dump();
}

// A push consumer with flow control and idle heartbeats runs on the consumer thread too: its
// deliveries, heartbeats and flow-control requests leave from there and its acks and
// flow-control answers go there, not to the stream's owner.
TEST_F(js_consumer_threads, a_push_consumer_is_served_apart_from_its_streams_owner) {
  ASSERT_FALSE(create({{"name", "PS"}, {"subjects", {"ps.>"}}, {"storage", "file"}}).contains("error"));
  for (int i = 0; i < 40; ++i) ASSERT_EQ(publish(i % 2 ? "ps.odd" : "ps.even", "m").value("seq", 0), i + 1);
  natsSubscription* raw = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&raw, nc_.get(), "deliver.ps"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  const long long before = owners_handled(), thread_before = consumer_thread_handled();
  ASSERT_GE(before, 0);
  ASSERT_GE(thread_before, 0);
  auto r = request("$JS.API.CONSUMER.DURABLE.CREATE.PS.P",
                   nlohmann::json{{"stream_name", "PS"},
                                  {"config",
                                   {{"durable_name", "P"},
                                    {"deliver_subject", "deliver.ps"},
                                    {"ack_policy", "explicit"},
                                    {"filter_subject", "ps.even"},
                                    {"flow_control", true},
                                    {"idle_heartbeat", 200000000}}}}
                       .dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  auto got = read_push(raw, 20);
  ASSERT_EQ(got.subjects.size(), 20u);
  for (const auto& s : got.subjects) EXPECT_EQ(s, "ps.even");
  EXPECT_GE(got.heartbeats, 1);
  // Stored after it was made: delivered live.
  for (int i = 40; i < 60; ++i) ASSERT_EQ(publish(i % 2 ? "ps.odd" : "ps.even", "m").value("seq", 0), i + 1);
  got = read_push(raw, 10);
  ASSERT_EQ(got.subjects.size(), 10u);
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  // The owners saw the create and the INFOs below (publishes are not counted there), not the
  // 30 acks nor the flow-control answers.
  nlohmann::json info;
  int infos = 0;
  EXPECT_TRUE(eventually(
      [&] {
        ++infos;
        info = consumer_info("PS", "P");
        return info.contains("ack_floor") && info["ack_floor"].value("stream_seq", 0) == 59;
      },
      10s * time_scale()))
      << info.dump();
  const long long during = owners_handled() - before, on_thread = consumer_thread_handled() - thread_before;
  std::printf("owners handled %lld messages (1 create, %d INFOs), the consumer thread %lld (%d flow controls)\n",
              during, infos, on_thread, got.flow_controls);
  EXPECT_LE(during, infos + 5);
  EXPECT_GE(on_thread, 30) << "the 30 acks did not reach the consumer thread";
  EXPECT_EQ(info.value("num_ack_pending", -1), 0);
  EXPECT_EQ(info.value("num_pending", -1), 0);
  EXPECT_TRUE(info.value("push_bound", false));
  natsSubscription_Destroy(raw);
}

// An ephemeral push consumer whose subscriber left is removed at its inactive_threshold, by
// its consumer thread's timers.
TEST_F(js_consumer_threads, an_inactive_push_consumer_is_removed) {
  ASSERT_FALSE(create({{"name", "IN"}, {"subjects", {"in"}}, {"storage", "memory"}}).contains("error"));
  natsSubscription* raw = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&raw, nc_.get(), "deliver.in"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  auto r = request("$JS.API.CONSUMER.CREATE.IN",
                   nlohmann::json{{"stream_name", "IN"},
                                  {"config",
                                   {{"deliver_subject", "deliver.in"},
                                    {"ack_policy", "none"},
                                    {"inactive_threshold", 500000000}}}}
                       .dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const std::string name = r.value("name", "");
  ASSERT_FALSE(name.empty());
  ASSERT_EQ(publish("in", "x").value("seq", 0), 1);
  natsMsg* m = nullptr;
  ASSERT_EQ(natsSubscription_NextMsg(&m, raw, 5000 * time_scale()), NATS_OK);
  natsMsg_Destroy(m);
  // Bound: still there well past its threshold.
  EXPECT_TRUE(eventually([&] { return consumer_info("IN", name).value("push_bound", false); }, 5s * time_scale()));
  natsSubscription_Destroy(raw);  // the subscriber leaves
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  nlohmann::json info;
  EXPECT_TRUE(eventually(
      [&] {
        info = consumer_info("IN", name);
        return info.contains("error");
      },
      10s * time_scale()));
  EXPECT_EQ(info["error"].value("err_code", 0), 10014) << info.dump();
}

// Work-queue and interest streams: their consumers run on the consumer thread too, and their
// releases travel back to the owner, which removes a message once every consumer that
// matches it released it (work queue: its one consumer).
TEST_F(js_consumer_threads, retention_follows_the_releases_of_remote_consumers) {
  ASSERT_FALSE(create({{"name", "WQ"}, {"subjects", {"wq.>"}}, {"retention", "workqueue"}, {"storage", "file"}})
                   .contains("error"));
  for (int i = 0; i < 10; ++i) ASSERT_EQ(publish("wq.a", "m").value("seq", 0), i + 1);
  auto r = request("$JS.API.CONSUMER.DURABLE.CREATE.WQ.W",
                   nlohmann::json{{"stream_name", "WQ"}, {"config", {{"durable_name", "W"}, {"ack_policy", "explicit"}}}}
                       .dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const long long thread_before = consumer_thread_handled();
  ASSERT_EQ(pull("WQ", "W", 4).size(), 4u);  // acked with a reply each
  EXPECT_EQ(state("WQ").value("messages", -1), 6);
  EXPECT_EQ(state("WQ")["first_seq"], 5);
  ASSERT_EQ(pull("WQ", "W", 6, false).size(), 6u);  // delivered, not acked: kept
  EXPECT_EQ(state("WQ").value("messages", -1), 6);
  EXPECT_GE(consumer_thread_handled() - thread_before, 4 + 2) << "the acks and pulls did not reach the consumer thread";

  // Interest: a pull and a push consumer; a message goes once both released it.
  ASSERT_FALSE(create({{"name", "IT"}, {"subjects", {"it.>"}}, {"retention", "interest"}, {"storage", "memory"}})
                   .contains("error"));
  r = request("$JS.API.CONSUMER.DURABLE.CREATE.IT.A",
              nlohmann::json{{"stream_name", "IT"}, {"config", {{"durable_name", "A"}, {"ack_policy", "explicit"}}}}.dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  r = request("$JS.API.CONSUMER.DURABLE.CREATE.IT.B",
              nlohmann::json{{"stream_name", "IT"},
                             {"config", {{"durable_name", "B"}, {"deliver_subject", "deliver.it"}, {"ack_policy", "none"},
                                         {"filter_subject", "it.b"}}}}
                  .dump());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  for (int i = 0; i < 6; ++i) ASSERT_EQ(publish(i % 2 ? "it.a" : "it.b", "m").value("seq", 0), i + 1);
  EXPECT_EQ(state("IT").value("messages", -1), 6);
  // A acks everything: it.a (only A's) goes, it.b waits for B.
  ASSERT_EQ(pull("IT", "A", 6).size(), 6u);
  EXPECT_EQ(state("IT").value("messages", -1), 3);
  // B (no subscriber until now; ack none) releases what it delivers; the owner hears it
  // without a sync point here.
  natsSubscription* raw = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&raw, nc_.get(), "deliver.it"), NATS_OK);
  for (int i = 0; i < 3; ++i) {
    natsMsg* m = nullptr;
    ASSERT_EQ(natsSubscription_NextMsg(&m, raw, 5000 * time_scale()), NATS_OK);
    EXPECT_STREQ(natsMsg_GetSubject(m), "it.b");
    natsMsg_Destroy(m);
  }
  EXPECT_TRUE(eventually([&] { return state("IT").value("messages", -1) == 0; }, 10s * time_scale()))
      << state("IT").dump();
  natsSubscription_Destroy(raw);
}

// A mirror's feed (the direct, flow-controlled push consumer it makes on its origin) runs on
// the consumer thread as well: the mirror's flow-control answers reach that thread, and the
// mirror copies the backlog and then what is new.
TEST_F(js_consumer_threads, a_mirrors_feed_runs_on_the_consumer_thread) {
  ASSERT_FALSE(create({{"name", "ORG"}, {"subjects", {"org.>"}}, {"storage", "memory"}}).contains("error"));
  constexpr int kMsgs = 1500;  // 1 KiB each: past the first flow-control window (1 MiB)
  const std::string payload(1024, 'x');
  for (int i = 0; i < kMsgs; ++i) natsConnection_PublishString(nc_.get(), "org.a", payload.c_str());
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  EXPECT_TRUE(eventually([&] { return state("ORG").value("messages", 0) == kMsgs; }, 10s * time_scale()));
  const long long thread_before = consumer_thread_handled();
  ASSERT_GE(thread_before, 0);
  ASSERT_FALSE(create({{"name", "MIR"}, {"mirror", {{"name", "ORG"}}}, {"storage", "memory"}}).contains("error"));
  EXPECT_TRUE(eventually([&] { return state("MIR").value("messages", 0) == kMsgs; }, 20s * time_scale()))
      << state("MIR").dump();
  ASSERT_EQ(publish("org.a", "last").value("seq", 0), kMsgs + 1);
  EXPECT_TRUE(eventually([&] { return state("MIR").value("last_seq", 0) == kMsgs + 1; }, 10s * time_scale()))
      << state("MIR").dump();
  EXPECT_GE(consumer_thread_handled() - thread_before, 1) << "no flow-control answer reached the consumer thread";
}

}  // namespace
}  // namespace peregrine::test
