// Pull requests and interest, as nats-server does them (issue 15, item 3): the 503
// no-responders status for a pull or direct get that reaches no stream or consumer, waiting
// requests whose inbox lost interest, requests that outlive their connection, push consumers
// removed after inactive_threshold without interest, and the stream's consumer_limits.
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool is_peregrine() { return server_binary().find("peregrine") != std::string::npos; }

class js_pull_interest : public js_test {
 protected:
  json create_consumer(const std::string& stream, const json& cfg) {
    json req = {{"stream_name", stream}, {"config", cfg}};
    const std::string name = cfg.contains("durable_name") ? "." + cfg["durable_name"].get<std::string>() : "";
    return request("$JS.API.CONSUMER.CREATE." + stream + name, req.dump());
  }
  void fill(const std::string& subject, int n) {
    for (int i = 0; i < n; ++i) {
      json ack = publish(subject, "m" + std::to_string(i));
      ASSERT_TRUE(ack.contains("seq")) << ack;
    }
  }
  // A request with libnats; the status and how long it took.
  std::pair<natsStatus, std::chrono::milliseconds> timed_request(const std::string& subject, const std::string& body) {
    natsMsg* reply = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    natsStatus s = natsConnection_RequestString(&reply, nc_.get(), subject.c_str(), body.c_str(), 1500);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    natsMsg_Destroy(reply);
    return {s, took};
  }
};

// nats-server 2.10.26+/2.11: nothing is subscribed to MSG.NEXT of a missing consumer, so the
// requester gets the 503 no-responders status at once (2.9.10 stays silent: Peregrine only).
TEST_F(js_pull_interest, pull_for_missing_stream_or_consumer_gets_no_responders) {
  if (!is_peregrine()) GTEST_SKIP() << "nats-server 2.9.10 predates the 503 for missing consumers";
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  ASSERT_FALSE(create_consumer("ORDERS", {{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  auto [missing_stream, t1] = timed_request("$JS.API.CONSUMER.MSG.NEXT.NOPE.C", "{\"batch\":1}");
  EXPECT_EQ(missing_stream, NATS_NO_RESPONDERS) << status_text(missing_stream);
  EXPECT_LT(t1, 1000ms);
  auto [missing_consumer, t2] = timed_request("$JS.API.CONSUMER.MSG.NEXT.ORDERS.NOPE", "{\"batch\":1}");
  EXPECT_EQ(missing_consumer, NATS_NO_RESPONDERS) << status_text(missing_consumer);
  EXPECT_LT(t2, 1000ms);
  // The existing consumer still answers (a no_wait pull on an empty stream: 404).
  auto [existing, t3] = timed_request("$JS.API.CONSUMER.MSG.NEXT.ORDERS.C", "{\"batch\":1,\"no_wait\":true}");
  EXPECT_EQ(existing, NATS_OK) << status_text(existing);
}

TEST_F(js_pull_interest, direct_get_for_missing_stream_gets_no_responders) {
  if (!is_peregrine()) GTEST_SKIP() << "nats-server 2.9.10 predates the 503 for missing streams";
  ASSERT_FALSE(create({{"name", "KV"}, {"subjects", {"kv.>"}}, {"allow_direct", true}}).contains("error"));
  ASSERT_FALSE(create({{"name", "NODIRECT"}, {"subjects", {"nd.>"}}}).contains("error"));
  fill("kv.a", 1);
  auto [missing, t1] = timed_request("$JS.API.DIRECT.GET.NOPE", "{\"seq\":1}");
  EXPECT_EQ(missing, NATS_NO_RESPONDERS) << status_text(missing);
  EXPECT_LT(t1, 1000ms);
  auto [missing_subj, t2] = timed_request("$JS.API.DIRECT.GET.NOPE.kv.a", "");
  EXPECT_EQ(missing_subj, NATS_NO_RESPONDERS) << status_text(missing_subj);
  auto [no_direct, t3] = timed_request("$JS.API.DIRECT.GET.NODIRECT", "{\"seq\":1}");
  EXPECT_EQ(no_direct, NATS_NO_RESPONDERS) << status_text(no_direct);
  auto [found, t4] = timed_request("$JS.API.DIRECT.GET.KV", "{\"seq\":1}");
  EXPECT_EQ(found, NATS_OK) << status_text(found);
}

// The exact wire form, and only to clients that asked for it (headers + no_responders).
TEST_F(js_pull_interest, no_responders_status_bytes_and_opt_out) {
  if (!is_peregrine()) GTEST_SKIP() << "nats-server 2.9.10 predates the 503 for missing consumers";
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB _INBOX.r 1\r\nPUB $JS.API.CONSUMER.MSG.NEXT.NOPE.C _INBOX.r 0\r\n\r\n"));
  auto line = c.read_line();
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "HMSG _INBOX.r 1 16 16\r\n");
  auto body = c.read_bytes(18);
  ASSERT_TRUE(body);
  EXPECT_EQ(*body, "NATS/1.0 503\r\n\r\n\r\n");

  raw_client old;
  ASSERT_TRUE(old.open(port(), "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":false}\r\n"));
  ASSERT_TRUE(old.send("SUB _INBOX.r 1\r\nPUB $JS.API.DIRECT.GET.NOPE _INBOX.r 0\r\n\r\n"));
  EXPECT_TRUE(old.quiet_for(300ms));
}

}  // namespace
}  // namespace peregrine::test
