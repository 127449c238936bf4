// Durable sourcing (2.14, ADR-58; streams.md §10.7): a source or mirror reads the origin through
// a pre-created durable push consumer with ack_policy flow_control, which it resets on every
// setup and acks by answering flow control with what it stored. A work-queue origin is then
// emptied only of what reached the sourcing stream, and kill -9 of the server at any moment
// leaves no gap and no duplicate. Also the consumer and StreamSource rules (10213-10222).
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool reference_server() {
  const std::string bin = server_binary();
  return bin.size() >= 11 && bin.compare(bin.size() - 11, 11, "nats-server") == 0;
}

class js_durable_source : public js_test {
 protected:
  json consumer_create(const std::string& stream, const json& cfg) {
    return request("$JS.API.CONSUMER.CREATE." + stream + "." + cfg["durable_name"].get<std::string>(),
                   json{{"stream_name", stream}, {"config", cfg}}.dump());
  }
  // A work-queue origin Q and its sourcing consumer SRC (flow_control acks, small window so
  // the flow-control acks run often).
  void work_queue_origin() {
    json r = create({{"name", "Q"}, {"subjects", {"q.>"}}, {"retention", "workqueue"}, {"storage", "file"}});
    ASSERT_FALSE(r.contains("error")) << r;
    r = consumer_create("Q", {{"durable_name", "SRC"}, {"deliver_subject", "src.q"}, {"ack_policy", "flow_control"},
                              {"max_ack_pending", 64}});
    ASSERT_FALSE(r.contains("error")) << r;
    const json& c = r["config"];
    EXPECT_EQ(c["ack_policy"], "flow_control");
    EXPECT_EQ(c["flow_control"], true) << "the server fills it in";
    EXPECT_EQ(c["idle_heartbeat"], 1'000'000'000);
    EXPECT_FALSE(c.contains("ack_wait"));
    EXPECT_EQ(c["metadata"]["_nats.req.level"], "4");
  }
  void aggregate() {
    json r = create({{"name", "AGG"},
                     {"storage", "file"},
                     {"sources", {{{"name", "Q"}, {"consumer", {{"name", "SRC"}, {"deliver_subject", "src.q"}}}}}}});
    ASSERT_FALSE(r.contains("error")) << r;
  }
  // Polls until `pred(info)` holds, at most 20 s.
  template <class Pred>
  json wait_info(const std::string& stream, Pred pred, const char* what) {
    json info;
    for (int i = 0; i < 200; ++i) {
      info = request("$JS.API.STREAM.INFO." + stream);
      if (info.contains("state") && pred(info)) return info;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << stream << ": " << what << ": " << info;
    return info;
  }
  std::uint64_t messages(const json& info) { return info["state"]["messages"].get<std::uint64_t>(); }
  // Every origin sequence in AGG's Nats-Stream-Source headers, with a count of each.
  std::map<std::uint64_t, int> sourced_seqs(std::uint64_t last) {
    std::map<std::uint64_t, int> seen;
    for (std::uint64_t s = 1; s <= last; ++s) {
      json m = request("$JS.API.STREAM.MSG.GET.AGG", json{{"seq", s}}.dump());
      if (!m.contains("message")) continue;
      const std::string h = base64_decode(m["message"].value("hdrs", ""));
      const auto at = h.find("Nats-Stream-Source: Q ");
      if (at == std::string::npos) {
        ADD_FAILURE() << "no Nats-Stream-Source in " << h;
        continue;
      }
      ++seen[std::stoull(h.substr(at + 22))];
    }
    return seen;
  }
};

TEST_F(js_durable_source, work_queue_is_emptied_only_of_what_was_sourced) {
  if (reference_server()) GTEST_SKIP() << "nats-server 2.9.10 has no flow_control ack policy";
  work_queue_origin();
  aggregate();
  for (int i = 1; i <= 300; ++i) ASSERT_EQ(publish("q.orders", "o" + std::to_string(i))["seq"], i);
  json info = wait_info("AGG", [&](const json& j) { return messages(j) >= 300; }, "300 sourced");
  EXPECT_EQ(messages(info), 300u);
  ASSERT_TRUE(info.contains("sources")) << info;
  EXPECT_EQ(info["sources"][0]["name"], "Q");
  EXPECT_FALSE(info["sources"][0].contains("error")) << info;
  // The flow-control answers acked everything: the work queue holds nothing.
  wait_info("Q", [&](const json& j) { return messages(j) == 0; }, "work queue drained");
  json ci = request("$JS.API.CONSUMER.INFO.Q.SRC");
  EXPECT_EQ(ci["ack_floor"]["stream_seq"], 300) << ci;
  EXPECT_EQ(ci["num_ack_pending"], 0) << ci;
  auto seen = sourced_seqs(300);
  ASSERT_EQ(seen.size(), 300u);
  EXPECT_EQ(seen.begin()->first, 1u);
  EXPECT_EQ(seen.rbegin()->first, 300u);
  // The consumer is the user's: deleting the sourcing stream leaves it in place.
  ASSERT_FALSE(request("$JS.API.STREAM.DELETE.AGG").contains("error"));
  EXPECT_FALSE(request("$JS.API.CONSUMER.INFO.Q.SRC").contains("error"));
}

// kill -9 at a random moment while copying, many rounds: after each restart the sourcing
// stream catches up with every acknowledged publish exactly once, and the origin drains.
TEST_F(js_durable_source, kill9_rounds_leave_no_gap_and_no_duplicate) {
  if (reference_server()) GTEST_SKIP() << "nats-server 2.9.10 has no flow_control ack policy";
  work_queue_origin();
  aggregate();
  std::mt19937 rng(60);
  std::uint64_t published = 0;
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int i = 0; i < 150; ++i) {
      json a = publish("q.orders", "r" + std::to_string(round) + "-" + std::to_string(i));
      ASSERT_TRUE(a.contains("seq")) << a;
      ++published;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
    restart(true);
    json info = wait_info("AGG", [&](const json& j) { return messages(j) >= published; }, "caught up");
    EXPECT_EQ(messages(info), published) << "a duplicate was stored";
    wait_info("Q", [&](const json& j) { return messages(j) == 0; }, "work queue drained");
  }
  const json last = request("$JS.API.STREAM.INFO.AGG");
  auto seen = sourced_seqs(last["state"]["last_seq"].get<std::uint64_t>());
  EXPECT_EQ(seen.size(), published);
  for (const auto& [seq, n] : seen) EXPECT_EQ(n, 1) << "origin seq " << seq << " copied " << n << " times";
  if (!seen.empty()) {
    EXPECT_EQ(seen.begin()->first, 1u);
    EXPECT_EQ(seen.rbegin()->first, published) << "a gap";
  }
}

TEST_F(js_durable_source, durable_mirror_keeps_origin_sequences) {
  if (reference_server()) GTEST_SKIP() << "nats-server 2.9.10 has no durable sourcing";
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  ASSERT_FALSE(consumer_create("ORDERS", {{"durable_name", "MIR"}, {"deliver_subject", "mir.orders"},
                                          {"ack_policy", "flow_control"}})
                   .contains("error"));
  for (int i = 1; i <= 5; ++i) publish("orders.new", "o" + std::to_string(i));
  ASSERT_FALSE(request("$JS.API.STREAM.MSG.DELETE.ORDERS", R"({"seq":2})").contains("error"));
  json r = create({{"name", "ARCHIVE"},
                   {"mirror", {{"name", "ORDERS"}, {"consumer", {{"name", "MIR"}, {"deliver_subject", "mir.orders"}}}}}});
  ASSERT_FALSE(r.contains("error")) << r;
  json info = wait_info("ARCHIVE", [&](const json& j) { return j["state"]["last_seq"] == 5; }, "mirrored");
  EXPECT_EQ(info["state"]["messages"], 4);
  EXPECT_EQ(info["state"]["first_seq"], 1);
  EXPECT_FALSE(info["mirror"].contains("error")) << info;
  // The floor follows what the mirror stored (an idle heartbeat asks for it).
  json ci;
  for (int i = 0; i < 100; ++i) {
    ci = request("$JS.API.CONSUMER.INFO.ORDERS.MIR");
    if (ci["ack_floor"]["stream_seq"] == 5) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(ci["ack_floor"]["stream_seq"], 5) << ci;
}

TEST_F(js_durable_source, wrong_or_missing_consumer_is_reported_and_retried) {
  if (reference_server()) GTEST_SKIP() << "nats-server 2.9.10 has no durable sourcing";
  ASSERT_FALSE(create({{"name", "A"}, {"subjects", {"a.>"}}}).contains("error"));
  ASSERT_FALSE(consumer_create("A", {{"durable_name", "EXP"}, {"deliver_subject", "exp.a"}, {"ack_policy", "explicit"},
                                     {"idle_heartbeat", 1'000'000'000}, {"flow_control", true}})
                   .contains("error"));
  json r = create({{"name", "S"},
                   {"sources",
                    {{{"name", "A"}, {"consumer", {{"name", "EXP"}, {"deliver_subject", "exp.a"}}}},
                     {{"name", "A"}, {"consumer", {{"name", "NONE"}, {"deliver_subject", "none.a"}}}}}}});
  ASSERT_FALSE(r.contains("error")) << r;
  json info = wait_info("S", [](const json& j) {
    return j.contains("sources") && j["sources"].size() == 2 && j["sources"][0].contains("error") &&
           j["sources"][1].contains("error");
  }, "both sources report an error");
  EXPECT_EQ(info["sources"][0]["error"]["err_code"], 10217) << info;
  EXPECT_EQ(info["sources"][0]["error"]["description"], "stream source consumer requires flow control ack policy");
  EXPECT_EQ(info["sources"][1]["error"]["err_code"], 10014) << info;
  // Fixed by creating the consumer: the retry picks it up.
  ASSERT_FALSE(consumer_create("A", {{"durable_name", "NONE"}, {"deliver_subject", "none.a"},
                                     {"ack_policy", "flow_control"}})
                   .contains("error"));
  publish("a.x", "1");
  wait_info("S", [](const json& j) { return j["state"]["messages"] == 1; }, "sourced after the retry");
}

TEST_F(js_durable_source, config_errors_match_nats_server_2_14) {
  if (reference_server()) GTEST_SKIP() << "nats-server 2.9.10 has no durable sourcing";
  ASSERT_FALSE(create({{"name", "O"}, {"subjects", {"o.>"}}}).contains("error"));
  auto code = [](const json& r) { return r.contains("error") ? r["error"].value("err_code", 0) : 0; };
  EXPECT_EQ(code(create({{"name", "M1"},
                         {"mirror", {{"name", "O"}, {"opt_start_seq", 3}, {"consumer", {{"name", "C"}, {"deliver_subject", "d"}}}}}})),
            10213);
  EXPECT_EQ(code(create({{"name", "S1"},
                         {"sources", {{{"name", "O"}, {"filter_subject", "o.a"},
                                       {"consumer", {{"name", "C"}, {"deliver_subject", "d"}}}}}}})),
            10215);
  EXPECT_EQ(code(create({{"name", "S2"},
                         {"sources", {{{"name", "O"}, {"consumer", {{"name", "C"}, {"deliver_subject", "d.1"}}}},
                                      {{"name", "O"}, {"subject_transforms", {{{"src", "o.a"}, {"dest", ""}}}},
                                       {"consumer", {{"name", "C"}, {"deliver_subject", "d.2"}}}}}}})),
            10216);
  // The consumer side (consumer.go checkConsumerCfg).
  json r = consumer_create("O", {{"durable_name", "P"}, {"ack_policy", "flow_control"}});
  EXPECT_EQ(code(r), 10218) << r;
  r = consumer_create("O", {{"durable_name", "W"}, {"deliver_subject", "w"}, {"ack_policy", "flow_control"},
                            {"ack_wait", 5'000'000'000}});
  EXPECT_EQ(code(r), 10221) << r;
  EXPECT_EQ(r["error"]["description"], "flow control ack policy requires unset ack wait");
  r = consumer_create("O", {{"durable_name", "X"}, {"deliver_subject", "x"}, {"ack_policy", "flow_control"},
                            {"max_deliver", 3}});
  EXPECT_EQ(code(r), 10222) << r;
}

}  // namespace
}  // namespace peregrine::test
