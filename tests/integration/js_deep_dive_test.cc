// Deep Dive chapter replay (deep-dive.md 13.1, 13.2, 13.12, 13.14, 13.17, 13.18, 13.19): the ORDERS stream,
// the chapter's payloads and the facts the chapter prints.
#include <chrono>
#include <set>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;

const std::string kOrd8w2k = R"({"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:22Z"})";
const std::string kOrd2zr9 = R"({"order_id":"ord_2zr9","customer":"globex","total_cents":1500,"ts":"2026-05-22T10:14:25Z"})";
const std::string kOrd8w2kShipped = R"({"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:31Z"})";

TEST_F(js_test, deep_dive_first_stream_and_publishing) {
  ASSERT_EQ(kOrd8w2k.size(), 91u);
  ASSERT_EQ(kOrd2zr9.size(), 90u);
  // 13.1: nats stream add ORDERS --subjects "orders.>" --defaults (the CLI sets allow_direct).
  json r = create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}, {"retention", "limits"}, {"max_consumers", -1},
                   {"max_msgs", -1}, {"max_bytes", -1}, {"max_age", 0}, {"max_msgs_per_subject", -1},
                   {"max_msg_size", -1}, {"discard", "old"}, {"storage", "file"}, {"num_replicas", 1},
                   {"duplicate_window", 120000000000LL}, {"allow_direct", true}, {"compression", "none"}});
  ASSERT_FALSE(r.contains("error")) << r;
  json info = request("$JS.API.STREAM.INFO.ORDERS");
  EXPECT_EQ(info["config"]["subjects"], json({"orders.>"}));
  EXPECT_EQ(info["config"]["num_replicas"], 1);
  EXPECT_EQ(info["config"]["storage"], "file");
  EXPECT_EQ(info["config"]["duplicate_window"], 120000000000LL);
  EXPECT_EQ(info["state"]["messages"], 0);
  EXPECT_EQ(info["state"]["bytes"], 0);
  EXPECT_EQ(info["state"]["first_seq"], 0);
  EXPECT_EQ(info["state"]["last_seq"], 0);
  EXPECT_EQ(info["state"]["consumer_count"], 0);
  // ARCHIVE on orders.* overlaps.
  r = create({{"name", "ARCHIVE"}, {"subjects", {"orders.*"}}});
  EXPECT_EQ(r["error"], json::parse(R"({"code":400,"err_code":10065,"description":"subjects overlap with an existing stream"})"));
  // Renaming is impossible.
  r = request("$JS.API.STREAM.UPDATE.ORDERS", R"({"name":"ORDERS2","subjects":["orders.>"]})");
  EXPECT_EQ(r["error"]["err_code"], 10056);

  // 13.2: three publishes -> sequences 1..3, 404 bytes, 2 subjects.
  EXPECT_EQ(publish("orders.created", kOrd8w2k), json::parse(R"({"stream":"ORDERS","seq":1})"));
  EXPECT_EQ(publish("orders.created", kOrd2zr9), json::parse(R"({"stream":"ORDERS","seq":2})"));
  EXPECT_EQ(publish("orders.shipped", kOrd8w2kShipped), json::parse(R"({"stream":"ORDERS","seq":3})"));
  json st = state("ORDERS");
  EXPECT_EQ(st["messages"], 3);
  EXPECT_EQ(st["bytes"], 404);
  EXPECT_EQ(st["first_seq"], 1);
  EXPECT_EQ(st["last_seq"], 3);
  EXPECT_EQ(st["num_subjects"], 2);
  // Dedup: the second publish with the same Nats-Msg-Id is a duplicate of seq 4.
  EXPECT_EQ(publish("orders.created", kOrd8w2k, {{"Nats-Msg-Id", "ord_8w2k-created"}})["seq"], 4);
  EXPECT_EQ(publish("orders.created", kOrd8w2k, {{"Nats-Msg-Id", "ord_8w2k-created"}}),
            json::parse(R"({"stream":"ORDERS","seq":4,"duplicate":true})"));
  // invoices.created: nothing captures it -> no responders for a JetStream publish.
  jsPubAck* pa = nullptr;
  jsErrCode ec;
  EXPECT_EQ(js_Publish(&pa, js_.get(), "invoices.created", "test", 4, nullptr, &ec), NATS_NO_RESPONDERS);
  EXPECT_EQ(publish("orders.created", kOrd8w2k)["seq"], 5);

  // 13.12: shaping — max_age 7d, max_bytes 1 GiB; then discard new with max_msgs 1.
  json cfg = info["config"];
  cfg.erase("metadata");
  cfg["max_age"] = 7LL * 24 * 3600 * 1000000000LL;
  cfg["max_bytes"] = 1LL << 30;
  r = request("$JS.API.STREAM.UPDATE.ORDERS", cfg.dump());
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["state"]["messages"], 5);  // stored messages stay
  cfg["discard"] = "new";
  cfg["max_msgs"] = 1;
  r = request("$JS.API.STREAM.UPDATE.ORDERS", cfg.dump());
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["state"]["messages"], 5);  // discard new never trims on update
  EXPECT_EQ(publish("orders.created", kOrd8w2k)["error"]["description"], "maximum messages exceeded");
  cfg["discard"] = "old";
  cfg["max_msgs"] = -1;
  ASSERT_FALSE(request("$JS.API.STREAM.UPDATE.ORDERS", cfg.dump()).contains("error"));

  // 13.18: nats stream get ORDERS 2; --last-for orders.shipped; direct batch of 3.
  json g = request("$JS.API.STREAM.MSG.GET.ORDERS", R"({"seq":2})");
  EXPECT_EQ(g["message"]["subject"], "orders.created");
  g = request("$JS.API.STREAM.MSG.GET.ORDERS", R"({"last_by_subj":"orders.shipped"})");
  EXPECT_EQ(g["message"]["seq"], 3);
  sub_ptr inbox = subscribe_sync(nc_.get(), "_INBOX.dd");
  ASSERT_EQ(natsConnection_PublishRequestString(nc_.get(), "$JS.API.DIRECT.GET.ORDERS", "_INBOX.dd",
                                                R"({"seq":1,"batch":3})"),
            NATS_OK);
  for (int i = 1; i <= 3; ++i) {
    msg_ptr m = next_msg(inbox.get(), std::chrono::seconds(2));
    ASSERT_TRUE(m);
    const char* seq = nullptr;
    ASSERT_EQ(natsMsgHeader_Get(m.get(), "Nats-Sequence", &seq), NATS_OK);
    EXPECT_EQ(std::string(seq), std::to_string(i));
  }

  // 13.14: rmm 2 (secure erase), purge by subject, purge --seq, then a full purge; the
  // next publish continues at last_seq + 1.
  EXPECT_EQ(request("$JS.API.STREAM.MSG.DELETE.ORDERS", R"({"seq":2})")["success"], true);
  EXPECT_EQ(request("$JS.API.STREAM.PURGE.ORDERS", R"({"filter":"orders.shipped"})")["purged"], 1);
  json full = request("$JS.API.STREAM.PURGE.ORDERS");
  EXPECT_EQ(full["success"], true);
  st = state("ORDERS");
  EXPECT_EQ(st["messages"], 0);
  EXPECT_EQ(st["first_seq"], 6);
  EXPECT_EQ(publish("orders.created", kOrd8w2k)["seq"], 6);
  // GUARDED: deny purge.
  ASSERT_FALSE(create({{"name", "GUARDED"}, {"subjects", {"guarded.>"}}}).contains("error"));
  r = request("$JS.API.STREAM.UPDATE.GUARDED", R"({"name":"GUARDED","subjects":["guarded.>"],"deny_purge":true})");
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(request("$JS.API.STREAM.PURGE.GUARDED")["error"]["err_code"], 10110);
  // 13.13: a work-queue stream cannot become limits.
  ASSERT_FALSE(create({{"name", "FULFILLMENT"}, {"subjects", {"fulfill.>"}}, {"retention", "workqueue"}}).contains("error"));
  r = request("$JS.API.STREAM.UPDATE.FULFILLMENT", R"({"name":"FULFILLMENT","subjects":["fulfill.>"],"retention":"limits"})");
  EXPECT_EQ(r["error"]["description"], "stream configuration update can not change retention policy to/from workqueue");
}

// 13.19: nats stream edit ORDERS --republish-source "orders.>" --republish-destination
// "dash.orders.>", then --republish-headers, then --no-republish. (2.9.10 cannot change
// RePublish on update; 2.10+ can.)
TEST_F(js_test, deep_dive_republish_page) {
  if (server_binary().find("peregrine") == std::string::npos) GTEST_SKIP() << "republish updates are 2.10+";
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  for (int i = 0; i < 3; ++i) publish("orders.created", kOrd8w2k);
  publish("orders.shipped", kOrd8w2kShipped);
  auto edit = [&](const json& republish) {
    json cfg{{"name", "ORDERS"}, {"subjects", {"orders.>"}}};
    if (!republish.is_null()) cfg["republish"] = republish;
    return request("$JS.API.STREAM.UPDATE.ORDERS", cfg.dump());
  };
  json r = edit({{"src", "orders.>"}, {"dest", "orders.copy.>"}});
  EXPECT_EQ(r["error"]["err_code"], 10052);
  EXPECT_EQ(r["error"]["description"], "stream configuration for republish destination forms a cycle");
  r = edit({{"src", "orders.>"}, {"dest", "dash.orders.>"}});
  ASSERT_FALSE(r.contains("error")) << r;
  sub_ptr dash = subscribe_sync(nc_.get(), "dash.orders.>");
  natsConnection_Flush(nc_.get());
  EXPECT_EQ(publish("orders.created", kOrd2zr9)["seq"], 5);
  msg_ptr m = next_msg(dash.get(), 2000ms);
  ASSERT_TRUE(m);
  EXPECT_STREQ(natsMsg_GetSubject(m.get()), "dash.orders.created");
  EXPECT_EQ(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))), kOrd2zr9);
  auto header = [&](const char* k) {
    const char* v = nullptr;
    return natsMsgHeader_Get(m.get(), k, &v) == NATS_OK && v ? std::string(v) : std::string("<none>");
  };
  EXPECT_EQ(header("Nats-Stream"), "ORDERS");
  EXPECT_EQ(header("Nats-Subject"), "orders.created");
  EXPECT_EQ(header("Nats-Sequence"), "5");
  EXPECT_EQ(header("Nats-Last-Sequence"), "3");
  EXPECT_TRUE(header("Nats-Time-Stamp").ends_with("Z")) << header("Nats-Time-Stamp");
  // --republish-headers: headers only, with the payload size.
  ASSERT_FALSE(edit({{"src", "orders.>"}, {"dest", "dash.orders.>"}, {"headers_only", true}}).contains("error"));
  publish("orders.shipped", kOrd8w2kShipped);
  m = next_msg(dash.get(), 2000ms);
  ASSERT_TRUE(m);
  EXPECT_EQ(natsMsg_GetDataLength(m.get()), 0);
  EXPECT_EQ(header("Nats-Msg-Size"), std::to_string(kOrd8w2kShipped.size()));
  EXPECT_EQ(header("Nats-Last-Sequence"), "4");
  // --no-republish: nothing more arrives.
  ASSERT_FALSE(edit(nullptr).contains("error"));
  publish("orders.created", kOrd8w2k);
  EXPECT_FALSE(next_msg(dash.get(), 300ms));
}

// 13.17 Mirrors and sources: ORDERS-ARCHIVE mirrors ORDERS; ALL-ORDERS sources ORDERS-US,
// ORDERS-EU and ORDERS-APAC; the mirror refuses publishes (no responders, 10060).
TEST_F(js_test, deep_dive_mirrors_and_sources_page) {
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  EXPECT_EQ(publish("orders.created", kOrd8w2k)["seq"], 1);
  EXPECT_EQ(publish("orders.created", kOrd2zr9)["seq"], 2);
  EXPECT_EQ(publish("orders.shipped", kOrd8w2kShipped)["seq"], 3);
  // nats stream add ORDERS-ARCHIVE --mirror ORDERS
  json r = create({{"name", "ORDERS-ARCHIVE"}, {"mirror", {{"name", "ORDERS"}}}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["mirror"], json({{"name", "ORDERS"}}));
  auto info_when = [&](const std::string& stream, auto done) {
    json info;
    for (int i = 0; i < 100; ++i) {
      info = request("$JS.API.STREAM.INFO." + stream);
      if (done(info)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return info;
  };
  // nats stream info ORDERS-ARCHIVE -> Mirror Information: Stream Name ORDERS, Lag 0, Last Seen ~1s.
  json info = info_when("ORDERS-ARCHIVE", [](const json& i) { return i["state"]["last_seq"] == 3; });
  EXPECT_EQ(info["state"]["messages"], 3);
  ASSERT_TRUE(info.contains("mirror")) << info;
  EXPECT_EQ(info["mirror"]["name"], "ORDERS");
  EXPECT_EQ(info["mirror"]["lag"], 0);
  EXPECT_GE(info["mirror"]["active"].get<std::int64_t>(), 0);
  EXPECT_LT(info["mirror"]["active"].get<std::int64_t>(), 5'000'000'000LL);

  // Regional streams and ALL-ORDERS sourcing them.
  for (const char* region : {"us", "eu", "apac"}) {
    std::string upper = region;
    for (auto& c : upper) c = char(std::toupper(c));
    r = create({{"name", "ORDERS-" + upper}, {"subjects", {std::string(region) + ".orders.>"}}});
    ASSERT_FALSE(r.contains("error")) << r;
  }
  r = create({{"name", "ALL-ORDERS"}, {"sources", {{{"name", "ORDERS-US"}}, {{"name", "ORDERS-EU"}}, {{"name", "ORDERS-APAC"}}}}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(publish("us.orders.created", kOrd8w2k)["stream"], "ORDERS-US");
  EXPECT_EQ(publish("eu.orders.created", kOrd2zr9)["stream"], "ORDERS-EU");
  EXPECT_EQ(publish("apac.orders.created", kOrd8w2kShipped)["stream"], "ORDERS-APAC");
  info = info_when("ALL-ORDERS", [](const json& i) { return i["state"]["messages"] == 3; });
  EXPECT_EQ(info["state"]["messages"], 3);
  ASSERT_TRUE(info["sources"].is_array()) << info;
  std::set<std::string> names;
  for (const auto& s : info["sources"]) {
    names.insert(s["name"].get<std::string>());
    EXPECT_EQ(s["lag"], 0);
    EXPECT_GE(s["active"].get<std::int64_t>(), 0);
  }
  EXPECT_EQ(names, (std::set<std::string>{"ORDERS-US", "ORDERS-EU", "ORDERS-APAC"}));

  // nats pub --jetstream ORDERS-ARCHIVE '...' -> no responders available for request.
  natsMsg* reply = nullptr;
  EXPECT_EQ(natsConnection_RequestString(&reply, nc_.get(), "ORDERS-ARCHIVE", kOrd8w2k.c_str(), 1000), NATS_NO_RESPONDERS);
  if (reply) natsMsg_Destroy(reply);
  // Publishing to orders.created -> Stored in Stream: ORDERS Sequence: 4, and the mirror copies it.
  json ack = publish("orders.created", kOrd8w2k);
  EXPECT_EQ(ack["stream"], "ORDERS");
  EXPECT_EQ(ack["seq"], 4);
  info = info_when("ORDERS-ARCHIVE", [](const json& i) { return i["state"]["last_seq"] == 4; });
  EXPECT_EQ(info["state"]["last_seq"], 4);
  // Nats-Expected-Stream: ORDERS-ARCHIVE -> 10060.
  ack = publish("orders.created", kOrd8w2k, {{"Nats-Expected-Stream", "ORDERS-ARCHIVE"}});
  EXPECT_EQ(ack["error"]["err_code"], 10060) << ack;
  // Pitfall: filter_subject and subject_transforms are exclusive (2.10+ knows transforms).
  const std::string bin = server_binary();
  if (bin.size() < 11 || bin.compare(bin.size() - 11, 11, "nats-server") != 0) {
    r = create({{"name", "BAD"}, {"sources", {{{"name", "ORDERS"}, {"filter_subject", "orders.created"},
                                               {"subject_transforms", {{{"src", "orders.*"}, {"dest", "x.>"}}}}}}}});
    EXPECT_EQ(r["error"]["err_code"], 10144) << r;
  }
}

}  // namespace
}  // namespace peregrine::test
