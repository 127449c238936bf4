// persist_mode "async" (nats-server 2.12, ADR-56) and the API level (ADR-44) through libnats:
// the persist_mode config rules and round trip, a publish acked and kept across a restart;
// $JS.API.INFO's api.level, the level in every returned config, and Nats-Required-Api-Level
// refusing API, consumer and direct-get requests that need a higher level.
#include <gtest/gtest.h>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;

constexpr int kLevel = 4;  // what the server claims (src/js/stream_config.h kApiLevel)

class js_persist_level : public js_test {
 protected:
  // A request carrying Nats-Required-Api-Level: `level`; the reply message.
  msg_ptr request_at(const std::string& subject, const std::string& body, const char* level) {
    natsMsg* msg = nullptr;
    natsMsg_Create(&msg, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size()));
    natsMsgHeader_Set(msg, "Nats-Required-Api-Level", level);
    natsMsg* reply = nullptr;
    natsStatus s = natsConnection_RequestMsg(&reply, nc_.get(), msg, 2000);
    natsMsg_Destroy(msg);
    return s == NATS_OK ? msg_ptr(reply) : nullptr;
  }
  static json body_of(const msg_ptr& m) {
    if (!m) return nullptr;
    return json::parse(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))), nullptr, false);
  }
};

TEST_F(js_persist_level, async_persist_round_trips_and_acks) {
  json r = create({{"name", "A"}, {"subjects", {"a.>"}}, {"storage", "file"}, {"persist_mode", "async"}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["persist_mode"], "async");
  EXPECT_EQ(r["config"]["metadata"]["_nats.req.level"], "2");
  EXPECT_EQ(request("$JS.API.STREAM.INFO.A")["config"]["persist_mode"], "async");
  for (int i = 1; i <= 20; ++i) {
    json a = publish("a.x", "m" + std::to_string(i));
    ASSERT_EQ(a, (json{{"stream", "A"}, {"seq", i}})) << a;
  }
  // A clean stop writes everything out: the acked messages are there after it.
  restart(false);
  EXPECT_EQ(state("A")["messages"], 20);
  EXPECT_EQ(request("$JS.API.STREAM.INFO.A")["config"]["persist_mode"], "async");
  EXPECT_EQ(publish("a.x", "after")["seq"], 21);
  // "default" is the same as leaving it out.
  r = create({{"name", "D"}, {"subjects", {"d.>"}}, {"persist_mode", "default"}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_FALSE(r["config"].contains("persist_mode")) << r;
}

TEST_F(js_persist_level, async_persist_rules) {
  auto error_of = [&](json cfg) {
    cfg["name"] = "X";
    cfg["subjects"] = {"x.>"};
    cfg["persist_mode"] = "async";
    return create(cfg)["error"];
  };
  auto invalid = [](const char* text) { return json{{"code", 500}, {"err_code", 10052}, {"description", text}}; };
  EXPECT_EQ(error_of({{"storage", "memory"}}), invalid("async persist mode is only supported on file storage"));
  EXPECT_EQ(error_of({{"num_replicas", 3}}), invalid("async persist mode is not supported on replicated streams"));
  EXPECT_EQ(error_of({{"allow_atomic", true}}), invalid("async persist mode is not supported with atomic batch publish"));
  json e = create({{"name", "X"}, {"subjects", {"x.>"}}, {"persist_mode", "Async"}})["error"];
  EXPECT_EQ(e["err_code"], 10025) << e;  // the enum is case-sensitive
  // Not changeable either way.
  ASSERT_FALSE(create({{"name", "A"}, {"subjects", {"a.>"}}, {"persist_mode", "async"}}).contains("error"));
  ASSERT_FALSE(create({{"name", "B"}, {"subjects", {"b.>"}}}).contains("error"));
  const json change = invalid("stream configuration update can not change persist mode");
  EXPECT_EQ(request("$JS.API.STREAM.UPDATE.A", json{{"name", "A"}, {"subjects", {"a.>"}}}.dump())["error"], change);
  EXPECT_EQ(request("$JS.API.STREAM.UPDATE.B", json{{"name", "B"}, {"subjects", {"b.>"}}, {"persist_mode", "async"}}.dump())["error"],
            change);
  // Allowed with fast-ingest batches.
  EXPECT_FALSE(create({{"name", "F"}, {"subjects", {"f.>"}}, {"persist_mode", "async"}, {"allow_batched", true}})
                   .contains("error"));
}

TEST_F(js_persist_level, api_level_is_claimed_everywhere) {
  json info = request("$JS.API.INFO");
  EXPECT_EQ(info["api"]["level"], kLevel) << info;
  json r = create({{"name", "S"}, {"subjects", {"s.>"}}, {"allow_direct", true}});
  EXPECT_EQ(r["config"]["metadata"]["_nats.level"], std::to_string(kLevel)) << r;
  json c = request("$JS.API.CONSUMER.CREATE.S.C", R"({"stream_name":"S","config":{"durable_name":"C"}})");
  EXPECT_EQ(c["config"]["metadata"]["_nats.level"], std::to_string(kLevel)) << c;
}

TEST_F(js_persist_level, required_api_level) {
  ASSERT_FALSE(create({{"name", "S"}, {"subjects", {"s.>"}}, {"allow_direct", true}}).contains("error"));
  ASSERT_FALSE(request("$JS.API.CONSUMER.CREATE.S.C", R"({"stream_name":"S","config":{"durable_name":"C"}})")
                   .contains("error"));
  ASSERT_FALSE(publish("s.a", "x").contains("error"));
  const json refused = json::parse(R"({"code":412,"err_code":10185,"description":"JetStream minimum api level required"})");
  // Our level and below are served.
  for (const char* ok : {"0", "1", "2", "3", "4"}) {
    json j = body_of(request_at("$JS.API.INFO", "", ok));
    EXPECT_FALSE(j.contains("error")) << ok << " " << j;
    EXPECT_EQ(j["api"]["level"], kLevel);
  }
  // Above it (or not a number): 412 10185 with the API's response type.
  for (const char* high : {"5", "x"}) {
    json j = body_of(request_at("$JS.API.INFO", "", high));
    EXPECT_EQ(j["error"], refused) << high << " " << j;
    EXPECT_EQ(j["type"], "io.nats.jetstream.api.v1.account_info_response");
  }
  json j = body_of(request_at("$JS.API.STREAM.INFO.S", "", "5"));
  EXPECT_EQ(j["error"], refused) << j;
  EXPECT_EQ(j["type"], "io.nats.jetstream.api.v1.stream_info_response");
  j = body_of(request_at("$JS.API.CONSUMER.RESET.S.C", "", "5"));
  EXPECT_EQ(j["error"], refused) << j;
  EXPECT_EQ(j["type"], "io.nats.jetstream.api.v1.consumer_reset_response");
  EXPECT_FALSE(body_of(request_at("$JS.API.CONSUMER.RESET.S.C", "", "4")).contains("error"));
  // Direct get answers with a status.
  msg_ptr m = request_at("$JS.API.DIRECT.GET.S", R"({"seq":1})", "5");
  ASSERT_TRUE(m);
  const char* status = nullptr;
  ASSERT_EQ(natsMsgHeader_Get(m.get(), "Status", &status), NATS_OK);
  EXPECT_STREQ(status, "412");
  m = request_at("$JS.API.DIRECT.GET.S", R"({"seq":1})", "4");
  ASSERT_TRUE(m);
  EXPECT_EQ(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))), "x");
  // An atomic batch message: above our level drops the batch (412); at it, the header is
  // stripped before the message is staged.
  ASSERT_FALSE(create({{"name", "B"}, {"subjects", {"b.>"}}, {"allow_atomic", true}, {"allow_direct", true}})
                   .contains("error"));
  json b = publish("b.1", "one", {{"Nats-Batch-Id", "x1"}, {"Nats-Batch-Sequence", "1"}, {"Nats-Required-Api-Level", "5"}});
  EXPECT_EQ(b["error"], refused) << b;
  b = publish("b.1", "one", {{"Nats-Batch-Id", "x2"}, {"Nats-Batch-Sequence", "1"}, {"Nats-Required-Api-Level", "4"},
                             {"Nats-Batch-Commit", "1"}});
  EXPECT_EQ(b["count"], 1) << b;
  msg_ptr stored = request_at("$JS.API.DIRECT.GET.B", R"({"last_by_subj":"b.1"})", "0");
  ASSERT_TRUE(stored);
  EXPECT_EQ(std::string(natsMsg_GetData(stored.get()), size_t(natsMsg_GetDataLength(stored.get()))), "one");
  const char* v = nullptr;
  EXPECT_NE(natsMsgHeader_Get(stored.get(), "Nats-Required-Api-Level", &v), NATS_OK);
  // On a plain publish the header is an ordinary header (streams.md §3.4).
  json a = publish("s.b", "y", {{"Nats-Required-Api-Level", "9"}});
  EXPECT_FALSE(a.contains("error")) << a;
}

}  // namespace
}  // namespace peregrine::test
