// $JS.API.CONSUMER.RESET.<stream>.<consumer> (nats-server 2.14, ADR-57) through libnats: an
// empty body restarts delivery after the ack floor, {"seq":N} moves it to N (forwards or
// back), pending and redelivery state go and the consumer sequence restarts at 1; the deliver
// policy rules (10204), the response shape (ConsumerInfo + reset_seq), missing stream or
// consumer, and the reset state of a durable surviving a restart.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class js_consumer_reset : public js_test {
 protected:
  struct delivered {
    std::string data;
    std::string ack;
  };
  std::vector<delivered> fetch(const std::string& consumer, int n) {
    const std::string inbox = "_INBOX.reset." + std::to_string(++serial_);
    sub_ptr sub = subscribe_sync(nc_.get(), inbox);
    const std::string body = json{{"batch", n}, {"expires", 1'000'000'000}}.dump();
    natsConnection_PublishRequestString(nc_.get(), ("$JS.API.CONSUMER.MSG.NEXT.S." + consumer).c_str(),
                                        inbox.c_str(), body.c_str());
    std::vector<delivered> out;
    while (static_cast<int>(out.size()) < n) {
      msg_ptr m = next_msg(sub.get(), 3000ms);
      if (!m || !natsMsg_GetReply(m.get())) break;  // timeout or a status (408)
      out.push_back({std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))),
                     natsMsg_GetReply(m.get())});
    }
    return out;
  }
  // $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts>.<pending>
  static std::pair<std::uint64_t, std::uint64_t> seqs(const delivered& d) {
    std::vector<std::string> t;
    for (std::size_t b = 0, e; b <= d.ack.size(); b = e + 1) {
      e = d.ack.find('.', b);
      if (e == std::string::npos) e = d.ack.size();
      t.push_back(d.ack.substr(b, e - b));
    }
    return {std::stoull(t.at(5)), std::stoull(t.at(6))};  // stream seq, consumer seq
  }
  void ack(const delivered& d) {
    natsMsg* reply = nullptr;
    ASSERT_EQ(natsConnection_RequestString(&reply, nc_.get(), d.ack.c_str(), "+ACK", 2000), NATS_OK);
    natsMsg_Destroy(reply);
  }
  json reset(const std::string& consumer, const std::string& body = {}) {
    return request("$JS.API.CONSUMER.RESET.S." + consumer, body);
  }
  void setup(const std::string& storage = "memory") {
    ASSERT_FALSE(create({{"name", "S"}, {"subjects", {"s.>"}}, {"storage", storage}}).contains("error"));
    for (int i = 1; i <= 5; ++i) ASSERT_FALSE(publish("s.x", "m" + std::to_string(i)).contains("error"));
  }
  json make_consumer(const json& cfg) {
    return request("$JS.API.CONSUMER.CREATE.S." + cfg["durable_name"].get<std::string>(),
                   json{{"stream_name", "S"}, {"config", cfg}}.dump());
  }
  int serial_ = 0;
};

TEST_F(js_consumer_reset, empty_body_restarts_after_the_ack_floor) {
  setup();
  ASSERT_FALSE(make_consumer({{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  auto got = fetch("C", 2);
  ASSERT_EQ(got.size(), 2u);
  ack(got[0]);
  ack(got[1]);
  auto pending = fetch("C", 2);  // delivered, never acked
  ASSERT_EQ(pending.size(), 2u);
  json r = reset("C");
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["type"], "io.nats.jetstream.api.v1.consumer_reset_response");
  EXPECT_EQ(r["stream_name"], "S");
  EXPECT_EQ(r["name"], "C");
  EXPECT_EQ(r["config"]["durable_name"], "C");
  EXPECT_EQ(r["reset_seq"], 3);
  EXPECT_EQ(r["delivered"]["consumer_seq"], 0) << r;
  EXPECT_EQ(r["delivered"]["stream_seq"], 2) << r;
  EXPECT_EQ(r["ack_floor"]["consumer_seq"], 0) << r;
  EXPECT_EQ(r["ack_floor"]["stream_seq"], 2) << r;
  EXPECT_EQ(r["num_ack_pending"], 0);
  EXPECT_EQ(r["num_redelivered"], 0);
  EXPECT_EQ(r["num_pending"], 3);
  // The next delivery is stream sequence 3 again, as consumer sequence 1.
  auto again = fetch("C", 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].data, "m3");
  EXPECT_EQ(seqs(again[0]), (std::pair<std::uint64_t, std::uint64_t>{3, 1})) << again[0].ack;
  // An ack of a delivery from before the reset changes nothing (and has nothing to confirm).
  natsConnection_PublishString(nc_.get(), pending[1].ack.c_str(), "+ACK");
  natsConnection_Flush(nc_.get());
  std::this_thread::sleep_for(100ms);
  json info = request("$JS.API.CONSUMER.INFO.S.C");
  EXPECT_EQ(info["num_ack_pending"], 1) << info;
}

TEST_F(js_consumer_reset, to_a_sequence_forwards_and_back) {
  setup();
  ASSERT_FALSE(make_consumer({{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  json r = reset("C", R"({"seq":5})");
  ASSERT_EQ(r["reset_seq"], 5) << r;
  EXPECT_EQ(r["ack_floor"]["stream_seq"], 4);
  EXPECT_EQ(r["num_pending"], 1);
  auto got = fetch("C", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(seqs(got[0]), (std::pair<std::uint64_t, std::uint64_t>{5, 1}));
  r = reset("C", R"({"seq":1})");
  ASSERT_EQ(r["reset_seq"], 1) << r;
  EXPECT_EQ(r["num_pending"], 5);
  got = fetch("C", 5);
  ASSERT_EQ(got.size(), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(seqs(got[i]), (std::pair<std::uint64_t, std::uint64_t>{i + 1, i + 1}));
  // seq 0 is the empty body: the ack floor stays (nothing acked: 0).
  EXPECT_EQ(reset("C", R"({"seq":0})")["reset_seq"], 1);
}

TEST_F(js_consumer_reset, deliver_policy_rules) {
  setup();
  ASSERT_FALSE(make_consumer({{"durable_name", "NEW"}, {"deliver_policy", "new"}, {"ack_policy", "explicit"}})
                   .contains("error"));
  EXPECT_EQ(reset("NEW", R"({"seq":2})")["error"],
            json::parse(R"({"code":400,"err_code":10204,"description":"invalid reset: not allowed"})"));
  EXPECT_FALSE(reset("NEW").contains("error"));  // no sequence: always allowed
  ASSERT_FALSE(make_consumer({{"durable_name", "SEQ"},
                              {"deliver_policy", "by_start_sequence"},
                              {"opt_start_seq", 3},
                              {"ack_policy", "explicit"}})
                   .contains("error"));
  EXPECT_EQ(reset("SEQ", R"({"seq":2})")["error"],
            json::parse(R"({"code":400,"err_code":10204,"description":"invalid reset: below start seq"})"));
  EXPECT_EQ(reset("SEQ", R"({"seq":4})")["reset_seq"], 4);
  const json s3 = request("$JS.API.STREAM.MSG.GET.S", R"({"seq":3})")["message"];
  ASSERT_TRUE(s3.contains("time")) << s3;
  ASSERT_FALSE(make_consumer({{"durable_name", "TIME"},
                              {"deliver_policy", "by_start_time"},
                              {"opt_start_time", s3["time"]},
                              {"ack_policy", "explicit"}})
                   .contains("error"));
  EXPECT_EQ(reset("TIME", R"({"seq":1})")["error"],
            json::parse(R"({"code":400,"err_code":10204,"description":"invalid reset: below start time"})"));
  EXPECT_EQ(reset("TIME", R"({"seq":3})")["reset_seq"], 3);
  ASSERT_FALSE(make_consumer({{"durable_name", "LAST"}, {"deliver_policy", "last"}}).contains("error"));
  EXPECT_EQ(reset("LAST", R"({"seq":1})")["error"]["err_code"], 10204);
}

TEST_F(js_consumer_reset, errors) {
  setup();
  ASSERT_FALSE(make_consumer({{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  json r = request("$JS.API.CONSUMER.RESET.NOPE.C");
  EXPECT_EQ(r, json::parse(R"({"type":"io.nats.jetstream.api.v1.consumer_reset_response",)"
                           R"("error":{"code":404,"err_code":10059,"description":"stream not found"}})"));
  r = reset("NOPE");
  EXPECT_EQ(r["error"], json::parse(R"({"code":404,"err_code":10014,"description":"consumer not found"})")) << r;
  EXPECT_EQ(reset("C", R"({"seq":"x"})")["error"]["err_code"], 10025);
  EXPECT_EQ(reset("C", R"({"sequence":1})")["error"]["err_code"], 10025);  // strict: unknown field
  EXPECT_EQ(reset("C", "not json")["error"]["err_code"], 10025);
}

TEST_F(js_consumer_reset, reset_state_survives_a_restart) {
  setup("file");
  ASSERT_FALSE(make_consumer({{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  auto got = fetch("C", 3);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_EQ(reset("C", R"({"seq":2})")["reset_seq"], 2);
  restart(false);  // a clean stop writes the consumer state
  json info = request("$JS.API.CONSUMER.INFO.S.C");
  EXPECT_EQ(info["delivered"]["consumer_seq"], 0) << info;
  EXPECT_EQ(info["delivered"]["stream_seq"], 1) << info;
  EXPECT_EQ(info["num_ack_pending"], 0);
  auto after = fetch("C", 1);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(seqs(after[0]), (std::pair<std::uint64_t, std::uint64_t>{2, 1}));
}

}  // namespace
}  // namespace peregrine::test
