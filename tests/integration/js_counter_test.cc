// Message counters (ADR-49, streams.md §12.1) through libnats: Nats-Incr publishes add to the
// subject's last value, the PubAck carries "val", totals beyond int64, the errors 10168-10171,
// the config rules, a file stream's totals across a restart, direct get of the last value and
// sourced counters aggregating their origins' totals.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;

class js_counter : public js_test {
 protected:
  void restart() {
    js_.reset();
    nc_.reset();
    server_->stop();
    ASSERT_TRUE(server_->start()) << server_->error();
    reconnect();
  }
  // The exact PubAck bytes of a publish with `Nats-Incr: incr` (and an optional payload).
  std::string incr(const std::string& subject, const char* by, const std::string& payload = {}) {
    natsMsg* msg = nullptr;
    natsMsg_Create(&msg, subject.c_str(), nullptr, payload.data(), static_cast<int>(payload.size()));
    natsMsgHeader_Set(msg, "Nats-Incr", by);
    natsMsg* reply = nullptr;
    natsStatus s = natsConnection_RequestMsg(&reply, nc_.get(), msg, 2000);
    natsMsg_Destroy(msg);
    if (s != NATS_OK) return std::string("status: ") + natsStatus_GetText(s);
    msg_ptr m(reply);
    return std::string(natsMsg_GetData(m.get()), static_cast<size_t>(natsMsg_GetDataLength(m.get())));
  }
  // The stored value of a subject's last message through direct get: {payload, Nats-Incr}.
  std::pair<std::string, std::string> direct_last(const std::string& stream, const std::string& subject) {
    natsMsg* reply = nullptr;
    const std::string body = json{{"last_by_subj", subject}}.dump();
    natsStatus s = natsConnection_RequestString(&reply, nc_.get(), ("$JS.API.DIRECT.GET." + stream).c_str(),
                                                body.c_str(), 2000);
    if (s != NATS_OK) return {std::string("status: ") + natsStatus_GetText(s), ""};
    msg_ptr m(reply);
    const char* v = nullptr;
    std::string incr_hdr = natsMsgHeader_Get(m.get(), "Nats-Incr", &v) == NATS_OK ? v : "";
    return {std::string(natsMsg_GetData(m.get()), static_cast<size_t>(natsMsg_GetDataLength(m.get()))), incr_hdr};
  }
  json error_of(const std::string& ack) { return json::parse(ack, nullptr, false)["error"]; }
};

TEST_F(js_counter, increments_negative_and_beyond_int64) {
  ASSERT_FALSE(create({{"name", "C"}, {"subjects", {"c.>"}}, {"allow_msg_counter", true}}).contains("error"));
  EXPECT_EQ(incr("c.a", "+1"), R"({"stream":"C","seq":1,"val":"1"})");
  EXPECT_EQ(incr("c.a", "10"), R"({"stream":"C","seq":2,"val":"11"})");
  EXPECT_EQ(incr("c.a", "-20"), R"({"stream":"C","seq":3,"val":"-9"})");
  EXPECT_EQ(incr("c.b", "0"), R"({"stream":"C","seq":4,"val":"0"})");  // its own counter
  EXPECT_EQ(incr("c.a", "+9223372036854775807"), R"({"stream":"C","seq":5,"val":"9223372036854775798"})");
  EXPECT_EQ(incr("c.a", "9223372036854775807"), R"({"stream":"C","seq":6,"val":"18446744073709551605"})");
  EXPECT_EQ(incr("c.b", "-123456789012345678901234567890"),
            R"({"stream":"C","seq":7,"val":"-123456789012345678901234567890"})");
  EXPECT_EQ(incr("c.b", "123456789012345678901234567891"), R"({"stream":"C","seq":8,"val":"1"})");
  // Stored: the total as payload, the published headers kept.
  json got = request("$JS.API.STREAM.MSG.GET.C", R"({"last_by_subj":"c.a"})")["message"];
  EXPECT_EQ(got["seq"], 6) << got;
  EXPECT_EQ(got["data"], "eyJ2YWwiOiIxODQ0Njc0NDA3MzcwOTU1MTYwNSJ9");  // {"val":"18446744073709551605"}
  EXPECT_NE(got["hdrs"].get<std::string>(), "");
  // The stream info reports the feature and the required API level.
  json info = request("$JS.API.STREAM.INFO.C");
  EXPECT_EQ(info["config"]["allow_msg_counter"], true) << info;
  EXPECT_EQ(info["config"]["metadata"]["_nats.req.level"], "2");
}

TEST_F(js_counter, publish_errors) {
  ASSERT_FALSE(create({{"name", "C"}, {"subjects", {"c.>"}}, {"allow_msg_counter", true}}).contains("error"));
  ASSERT_FALSE(create({{"name", "P"}, {"subjects", {"p.>"}}}).contains("error"));
  json e = error_of(incr("p.a", "1"));
  EXPECT_EQ(e["code"], 400) << e;
  EXPECT_EQ(e["err_code"], 10168);
  EXPECT_EQ(e["description"], "message counters is disabled");
  e = publish("c.a", "")["error"];
  EXPECT_EQ(e["err_code"], 10169) << e;
  EXPECT_EQ(e["description"], "message counter increment is missing");
  e = publish("c.a", "hello")["error"];
  EXPECT_EQ(e["err_code"], 10169) << e;
  e = error_of(incr("c.a", "1", "x"));
  EXPECT_EQ(e["err_code"], 10170) << e;
  EXPECT_EQ(e["description"], "message counter has payload");
  for (const char* bad : {"one", "1.5", "+", "1e3", "0x10"}) {
    e = error_of(incr("c.a", bad));
    EXPECT_EQ(e["err_code"], 10171) << bad << " " << e;
    EXPECT_EQ(e["description"], "message counter increment is invalid");
  }
  e = publish("c.a", "", {{"Nats-Incr", "1"}, {"Nats-Expected-Last-Sequence", "0"}})["error"];
  EXPECT_EQ(e["err_code"], 10171) << e;
  e = publish("c.a", "", {{"Nats-Incr", "1"}, {"Nats-Expected-Stream", "C"}})["error"];
  EXPECT_EQ(e["err_code"], 10171) << e;
  EXPECT_EQ(state("C")["messages"], 0);  // nothing refused was stored
  // A Nats-Msg-Id still de-duplicates a retried increment.
  EXPECT_EQ(publish("c.a", "", {{"Nats-Incr", "5"}, {"Nats-Msg-Id", "m1"}})["val"], "5");
  json dup = publish("c.a", "", {{"Nats-Incr", "5"}, {"Nats-Msg-Id", "m1"}});
  EXPECT_EQ(dup["duplicate"], true) << dup;
  EXPECT_EQ(incr("c.a", "1"), R"({"stream":"C","seq":2,"val":"6"})");
}

TEST_F(js_counter, config_rules) {
  auto create_error = [&](json cfg) {
    cfg["name"] = "C";
    cfg["subjects"] = {"c.>"};
    cfg["allow_msg_counter"] = true;
    return create(cfg)["error"];
  };
  json e = create_error({{"discard", "new"}});
  EXPECT_EQ(e["err_code"], 10052) << e;
  EXPECT_EQ(e["description"], "counter stream cannot use discard new");
  e = create_error({{"allow_msg_ttl", true}});
  EXPECT_EQ(e["description"], "counter stream cannot use message TTLs") << e;
  e = create_error({{"retention", "interest"}});
  EXPECT_EQ(e["description"], "counter stream can only use limits retention") << e;
  e = create({{"name", "M"}, {"mirror", {{"name", "X"}}}, {"allow_msg_counter", true}})["error"];
  EXPECT_EQ(e["err_code"], 10173) << e;
  ASSERT_FALSE(create({{"name", "C"}, {"subjects", {"c.>"}}, {"allow_msg_counter", true}}).contains("error"));
  e = request("$JS.API.STREAM.UPDATE.C", json{{"name", "C"}, {"subjects", {"c.>"}}}.dump())["error"];
  EXPECT_EQ(e["err_code"], 10052) << e;
  EXPECT_EQ(e["description"], "stream configuration update can not change message counter setting");
  ASSERT_FALSE(create({{"name", "P"}, {"subjects", {"p.>"}}}).contains("error"));
  e = request("$JS.API.STREAM.UPDATE.P", json{{"name", "P"}, {"subjects", {"p.>"}}, {"allow_msg_counter", true}}.dump())["error"];
  EXPECT_EQ(e["description"], "stream configuration update can not change message counter setting") << e;
}

TEST_F(js_counter, totals_survive_a_restart_and_direct_get_reads_them) {
  ASSERT_FALSE(create({{"name", "C"}, {"subjects", {"c.>"}}, {"storage", "file"}, {"allow_msg_counter", true},
                       {"allow_direct", true}})
                   .contains("error"));
  ASSERT_EQ(incr("c.hits", "+5"), R"({"stream":"C","seq":1,"val":"5"})");
  ASSERT_EQ(incr("c.hits", "+99999999999999999999"), R"({"stream":"C","seq":2,"val":"100000000000000000004"})");
  restart();
  EXPECT_EQ(incr("c.hits", "-4"), R"({"stream":"C","seq":3,"val":"100000000000000000000"})");
  auto [payload, incr_hdr] = direct_last("C", "c.hits");
  EXPECT_EQ(payload, R"({"val":"100000000000000000000"})");
  EXPECT_EQ(incr_hdr, "-4");
}

TEST_F(js_counter, sourced_counters_add_up_their_origins) {
  ASSERT_FALSE(create({{"name", "A"}, {"subjects", {"a.>"}}, {"allow_msg_counter", true}}).contains("error"));
  ASSERT_FALSE(create({{"name", "B"}, {"subjects", {"b.>"}}, {"allow_msg_counter", true}}).contains("error"));
  json sources = json::array({{{"name", "A"}, {"subject_transforms", {{{"src", "a.>"}, {"dest", "all.>"}}}}},
                              {{"name", "B"}, {"subject_transforms", {{{"src", "b.>"}, {"dest", "all.>"}}}}}});
  json r = create({{"name", "S"}, {"sources", sources}, {"allow_msg_counter", true}});
  ASSERT_FALSE(r.contains("error")) << r;
  ASSERT_EQ(incr("a.x", "10"), R"({"stream":"A","seq":1,"val":"10"})");
  ASSERT_EQ(incr("b.x", "3"), R"({"stream":"B","seq":1,"val":"3"})");
  ASSERT_EQ(incr("a.x", "5"), R"({"stream":"A","seq":2,"val":"15"})");
  // Copies arrive asynchronously: wait for all three (generous bound, a loaded machine).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (state("S")["messages"] != 3 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(state("S")["messages"], 3);
  json got = request("$JS.API.STREAM.MSG.GET.S", R"({"last_by_subj":"all.x"})")["message"];
  EXPECT_EQ(got["data"], "eyJ2YWwiOiIxOCJ9") << got;  // {"val":"18"}
}

TEST_F(js_counter, atomic_batch_adds_each_increment_in_order) {
  ASSERT_FALSE(create({{"name", "C"}, {"subjects", {"c.>"}}, {"allow_msg_counter", true}, {"allow_atomic", true}})
                   .contains("error"));
  ASSERT_EQ(incr("c.a", "100"), R"({"stream":"C","seq":1,"val":"100"})");
  EXPECT_EQ(publish("c.a", "", {{"Nats-Incr", "1"}, {"Nats-Batch-Id", "b1"}, {"Nats-Batch-Sequence", "1"}}), "");
  EXPECT_EQ(publish("c.b", "", {{"Nats-Incr", "-2"}, {"Nats-Batch-Id", "b1"}, {"Nats-Batch-Sequence", "2"}}), "");
  json ack = publish("c.a", "", {{"Nats-Incr", "+10"}, {"Nats-Batch-Id", "b1"}, {"Nats-Batch-Sequence", "3"},
                                 {"Nats-Batch-Commit", "1"}});
  EXPECT_EQ(ack["seq"], 4) << ack;
  EXPECT_EQ(ack["count"], 3) << ack;
  auto data_at = [&](int seq) {
    return request("$JS.API.STREAM.MSG.GET.C", json{{"seq", seq}}.dump())["message"]["data"];
  };
  EXPECT_EQ(data_at(2), "eyJ2YWwiOiIxMDEifQ==");  // {"val":"101"}
  EXPECT_EQ(data_at(3), "eyJ2YWwiOiItMiJ9");      // {"val":"-2"}
  EXPECT_EQ(data_at(4), "eyJ2YWwiOiIxMTEifQ==");  // {"val":"111"}
  // A batch message without an increment refuses the whole batch.
  EXPECT_EQ(publish("c.a", "", {{"Nats-Incr", "1"}, {"Nats-Batch-Id", "b2"}, {"Nats-Batch-Sequence", "1"}}), "");
  json e = publish("c.a", "", {{"Nats-Batch-Id", "b2"}, {"Nats-Batch-Sequence", "2"}, {"Nats-Batch-Commit", "1"}});
  EXPECT_EQ(e["error"]["err_code"], 10169) << e;
  EXPECT_EQ(state("C")["messages"], 4);
}

}  // namespace
}  // namespace peregrine::test
