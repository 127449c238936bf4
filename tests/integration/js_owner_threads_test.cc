// JetStream on two owner threads (js_threads: 2): which thread a pull or a direct get reaches. Each owner
// subscribes its own streams' CONSUMER.MSG.NEXT; the control plane (owner 0) must not also
// receive, parse and drop a copy of every pull for another owner's stream. Counted through
// /metrics (peregrine_jetstream_owner_messages_total{owner="k"}). Peregrine only.
#include <gtest/gtest.h>

#include <cstdint>
#include <regex>
#include <string>

#include "tests/integration/js_fixture.h"
#include "tests/integration/ops_harness.h"

namespace peregrine::test {
namespace {

// The placement rule (FNV-1a 64 of the name mod the owner count), to pick a name per owner.
std::size_t owner_of(const std::string& name, std::size_t owners) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return std::size_t(h % owners);
}

std::string name_on(std::size_t owner) {
  for (int i = 0;; ++i)
    if (std::string n = "S" + std::to_string(i); owner_of(n, 2) == owner) return n;
}

class js_owner_threads : public js_test {
 protected:
  std::string extra_conf() const override {
    return js_test::extra_conf() + "js_threads: 2\nhttp_port: " + std::to_string(http_port_) + "\n";
  }
  void SetUp() override {
    if (server_binary().find("nats-server") != std::string::npos) GTEST_SKIP() << "Peregrine's owner threads";
    js_test::SetUp();
  }

  // Messages owner `k` handled so far; -1 when /metrics does not show it.
  long long handled(int k) {
    const http_result r = http_get(http_port_, "/metrics");
    std::smatch m;
    const std::regex re("peregrine_jetstream_owner_messages_total\\{owner=\"" + std::to_string(k) + "\"\\} ([0-9]+)");
    return std::regex_search(r.body, m, re) ? std::stoll(m[1]) : -1;
  }

  // `n` no-wait pulls; the number answered (by a message or a 404 status).
  int pull(const std::string& stream, const std::string& consumer, int n) {
    int answered = 0;
    for (int i = 0; i < n; ++i) {
      natsMsg* reply = nullptr;
      const std::string subj = "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer;
      if (natsConnection_RequestString(&reply, nc_.get(), subj.c_str(), R"({"batch":1,"no_wait":true})", 5000) ==
          NATS_OK)
        ++answered;
      natsMsg_Destroy(reply);
    }
    return answered;
  }

  void make_stream_and_consumer(const std::string& name) {
    auto r = create({{"name", name}, {"subjects", {name + ".>"}}, {"storage", "memory"}});
    ASSERT_FALSE(r.contains("error")) << r.dump();
    r = request("$JS.API.CONSUMER.DURABLE.CREATE." + name + ".C",
                nlohmann::json{{"stream_name", name}, {"config", {{"durable_name", "C"}, {"ack_policy", "explicit"}}}}.dump());
    ASSERT_FALSE(r.contains("error")) << r.dump();
  }

  int http_port_ = pick_free_port();
};

TEST_F(js_owner_threads, a_pull_reaches_only_its_streams_owner) {
  for (std::size_t owner : {std::size_t(1), std::size_t(0)}) {
    SCOPED_TRACE("stream on owner " + std::to_string(owner));
    const std::string name = name_on(owner);
    make_stream_and_consumer(name);
    ASSERT_EQ(publish(name + ".a", "one").value("seq", 0), 1);
    const long long before0 = handled(0), before1 = handled(1);
    ASSERT_GE(before0, 0);
    ASSERT_GE(before1, 0);
    constexpr int kPulls = 20;
    ASSERT_EQ(pull(name, "C", kPulls), kPulls);
    const long long d0 = handled(0) - before0, d1 = handled(1) - before1;
    // Exactly the pulls, on the stream's owner alone.
    EXPECT_EQ(owner == 0 ? d0 : d1, kPulls);
    EXPECT_EQ(owner == 0 ? d1 : d0, 0);
  }
}

// Direct gets are served by the stream's responder on its owner; the hub sees none of them.
TEST_F(js_owner_threads, a_direct_get_does_not_reach_the_control_plane) {
  const std::string name = name_on(1);
  auto r = create({{"name", name}, {"subjects", {name + ".>"}}, {"storage", "memory"}, {"allow_direct", true}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_EQ(publish(name + ".a", "one").value("seq", 0), 1);
  const long long before0 = handled(0);
  ASSERT_GE(before0, 0);
  constexpr int kGets = 20;
  for (int i = 0; i < kGets; ++i) {
    natsMsg* reply = nullptr;
    ASSERT_EQ(natsConnection_RequestString(&reply, nc_.get(), ("$JS.API.DIRECT.GET." + name).c_str(),
                                           R"({"seq":1})", 5000),
              NATS_OK);
    EXPECT_EQ(std::string(natsMsg_GetData(reply), std::size_t(natsMsg_GetDataLength(reply))), "one");
    natsMsg_Destroy(reply);
  }
  EXPECT_EQ(handled(0) - before0, 0);
  // No stream, or no direct access: the core's no-responders, as the hub used to send.
  natsMsg* reply = nullptr;
  EXPECT_EQ(natsConnection_RequestString(&reply, nc_.get(), "$JS.API.DIRECT.GET.MISSING", R"({"seq":1})", 2000),
            NATS_NO_RESPONDERS);
  natsMsg_Destroy(reply);
  const std::string plain = name_on(0);
  ASSERT_FALSE(create({{"name", plain}, {"subjects", {plain + ".>"}}, {"storage", "memory"}}).contains("error"));
  reply = nullptr;
  EXPECT_EQ(natsConnection_RequestString(&reply, nc_.get(), ("$JS.API.DIRECT.GET." + plain).c_str(), R"({"seq":1})", 2000),
            NATS_NO_RESPONDERS);
  natsMsg_Destroy(reply);
}

// The hub's narrower subscriptions still answer every API request, malformed pulls included.
TEST_F(js_owner_threads, the_control_plane_still_answers_the_rest_of_the_api) {
  const std::string name = name_on(1);
  make_stream_and_consumer(name);
  EXPECT_EQ(request("$JS.API.INFO").value("type", ""), "io.nats.jetstream.api.v1.account_info_response");
  EXPECT_EQ(request("$JS.API.CONSUMER.INFO." + name + ".C").value("name", ""), "C");
  EXPECT_EQ(request("$JS.API.CONSUMER.NAMES." + name)["consumers"], nlohmann::json::array({"C"}));
  // (A six-token pull went unanswered with two owners before: the hub dropped it as a pull.)
  for (const std::string& subject : {"$JS.API.CONSUMER.MSG.NEXT." + name, std::string("$JS.API.CONSUMER.NOPE"),
                                    std::string("$JS.API.NOPE")}) {
    const auto r = request(subject);
    ASSERT_TRUE(r.is_object() && r.contains("error")) << subject << ": " << r.dump();
    EXPECT_EQ(r["error"].value("code", 0), 400) << subject;
  }
  // A pull naming a stream nobody holds: no responders (the core's 503), as before.
  natsMsg* reply = nullptr;
  EXPECT_EQ(natsConnection_RequestString(&reply, nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.MISSING.C", "", 2000),
            NATS_NO_RESPONDERS);
  natsMsg_Destroy(reply);
}

}  // namespace
}  // namespace peregrine::test
