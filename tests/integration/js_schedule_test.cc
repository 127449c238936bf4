// Message schedules (ADR-51, streams.md §12.2) through libnats: the stream config rules, every
// publish error of the Nats-Schedule* headers (10166, 10188-10192, 10203, 10212, 10223) with
// nats-server 2.14's texts, a past @at firing at once into its target with the headers
// nats-server writes, @every repeating until cancelled, subject sampling, one schedule per
// subject, and schedules surviving a restart.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <map>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class js_schedule : public js_test {
 protected:
  struct got_msg {
    std::string payload;
    std::map<std::string, std::string> headers;
    std::uint64_t seq = 0;
  };
  // The last message on `subject` through direct get (nullopt when there is none).
  std::optional<got_msg> last(const std::string& stream, const std::string& subject) {
    natsMsg* reply = nullptr;
    const std::string body = json{{"last_by_subj", subject}}.dump();
    if (natsConnection_RequestString(&reply, nc_.get(), ("$JS.API.DIRECT.GET." + stream).c_str(), body.c_str(),
                                     2000) != NATS_OK)
      return std::nullopt;
    msg_ptr m(reply);
    const char* status = nullptr;
    if (natsMsgHeader_Get(m.get(), "Status", &status) == NATS_OK) return std::nullopt;  // 404
    got_msg g;
    g.payload.assign(natsMsg_GetData(m.get()), static_cast<size_t>(natsMsg_GetDataLength(m.get())));
    const char** keys = nullptr;
    int n = 0;
    if (natsMsgHeader_Keys(m.get(), &keys, &n) == NATS_OK) {
      for (int i = 0; i < n; ++i) {
        const char* v = nullptr;
        if (natsMsgHeader_Get(m.get(), keys[i], &v) == NATS_OK) g.headers[keys[i]] = v;
      }
      free(keys);
    }
    if (auto it = g.headers.find("Nats-Sequence"); it != g.headers.end()) g.seq = std::stoull(it->second);
    return g;
  }
  // Polls (up to 15 s) until `subject` has a message with a sequence above `after`.
  std::optional<got_msg> wait_for(const std::string& stream, const std::string& subject, std::uint64_t after = 0) {
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto g = last(stream, subject); g && g->seq > after) return g;
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  }
  std::uint64_t count(const std::string& stream, const std::string& subject) {
    json s = state(stream, json{{"subjects_filter", subject}}.dump());
    return s.contains("subjects") && s["subjects"].contains(subject) ? s["subjects"][subject].get<std::uint64_t>() : 0;
  }
  void make_stream(const std::string& storage = "memory") {
    ASSERT_FALSE(create({{"name", "SCHED"},
                         {"subjects", {"schedules.>", "orders", "sensors.>"}},
                         {"storage", storage},
                         {"allow_direct", true},
                         {"allow_msg_ttl", true},
                         {"allow_msg_schedules", true}})
                     .contains("error"));
  }
  static std::string rfc3339_in(std::chrono::seconds d) {
    const std::time_t t = std::time(nullptr) + d.count();
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
  }
};

TEST_F(js_schedule, config_rules) {
  json r = create({{"name", "S"}, {"subjects", {"s.>"}}, {"allow_msg_schedules", true}, {"deny_purge", true}});
  ASSERT_FALSE(r.contains("error")) << r;
  // Schedules roll their subject up and purge it when a one-shot fires: both are forced on.
  EXPECT_EQ(r["config"]["allow_msg_schedules"], true) << r;
  EXPECT_EQ(r["config"]["allow_rollup_hdrs"], true);
  EXPECT_EQ(r["config"]["deny_purge"], false);
  EXPECT_EQ(r["config"]["metadata"]["_nats.req.level"], "2");
  json e = create({{"name", "D"}, {"subjects", {"d.>"}}, {"allow_msg_schedules", true}, {"discard", "new"}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":500,"err_code":10052,"description":"message scheduling cannot use discard new"})"));
  e = create({{"name", "P"}, {"subjects", {"p.>"}}, {"allow_msg_schedules", true}, {"pedantic", true}})["error"];
  EXPECT_EQ(e["description"], "message scheduling cannot be set if roll-ups are disabled") << e;
  e = create({{"name", "M"}, {"mirror", {{"name", "S"}}}, {"allow_msg_schedules", true}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10186,"description":"stream mirrors can not also schedule messages"})"));
  e = create({{"name", "SRC"}, {"sources", {{{"name", "S"}}}}, {"allow_msg_schedules", true}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10187,"description":"stream source can not also schedule messages"})"));
  e = request("$JS.API.STREAM.UPDATE.S", json{{"name", "S"}, {"subjects", {"s.>"}}}.dump())["error"];
  EXPECT_EQ(e["err_code"], 10052) << e;
  EXPECT_EQ(e["description"], "message schedules can not be disabled");
  // Off -> on is an update like any other.
  ASSERT_FALSE(create({{"name", "L"}, {"subjects", {"l.>"}}}).contains("error"));
  r = request("$JS.API.STREAM.UPDATE.L", json{{"name", "L"}, {"subjects", {"l.>"}}, {"allow_msg_schedules", true}}.dump());
  EXPECT_EQ(r["config"]["allow_msg_schedules"], true) << r;
}

TEST_F(js_schedule, publish_errors) {
  make_stream();
  ASSERT_FALSE(create({{"name", "OFF"}, {"subjects", {"off.>"}}}).contains("error"));
  ASSERT_FALSE(create({{"name", "NOTTL"}, {"subjects", {"nt.>"}}, {"allow_msg_schedules", true}}).contains("error"));
  auto err = [&](const std::string& subject, std::initializer_list<std::pair<const char*, const char*>> h) {
    json a = publish(subject, "x", h);
    return a.contains("error") ? a["error"]["err_code"].get<int>() : 0;
  };
  const char* at = "@at 2100-01-01T00:00:00Z";  // far away: nothing fires during the test
  EXPECT_EQ(err("off.a", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "off.b"}}), 10188);
  EXPECT_EQ(err("off.a", {{"Nats-Schedule-Next", "purge"}, {"Nats-Scheduler", "off.b"}}), 10188);
  for (const char* bad : {"*/5 * * * *", "@every 500ms", "invalid", "2026-09-01T02:21:28Z", "0 0 0 31 2 *"})
    EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", bad}, {"Nats-Schedule-Target", "orders"}}), 10189) << bad;
  EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", "@every 1s"}, {"Nats-Schedule-Target", "orders"},
                                {"Nats-Schedule-Time-Zone", "UTC"}}),
            10189);  // a zone only goes with cron
  EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", "@hourly"}, {"Nats-Schedule-Target", "orders"},
                                {"Nats-Schedule-Time-Zone", "+02:00"}}),
            10223);
  EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", at}}), 10190);  // no target
  for (const char* bad : {"not.matching", "schedules.a", "orders.*", "sensors.>"})
    EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", bad}}), 10190) << bad;
  EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"},
                                {"Nats-Schedule-Rollup", "all"}}),
            10192);
  EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"}, {"Nats-Rollup", "all"}}),
            10192);
  EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"},
                                {"Nats-Schedule-Source", "sensors.>"}}),
            10203);
  EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"},
                                {"Nats-Schedule-TTL", "banana"}}),
            10191);
  EXPECT_EQ(err("schedules.a", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"},
                                {"Nats-Schedule-TTL", "500ms"}}),
            10191);
  EXPECT_EQ(err("nt.a", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "nt.b"}, {"Nats-Schedule-TTL", "1s"}}),
            10166);  // the TTL error, not a schedule one
  EXPECT_EQ(err("schedules.c", {{"Nats-Schedule-Next", "purge"}, {"Nats-Scheduler", "schedules.c"}}), 10212);
  EXPECT_EQ(err("schedules.c", {{"Nats-Schedule-Next", "purge"}, {"Nats-Scheduler", ""}}), 10212);
  EXPECT_EQ(err("schedules.c", {{"Nats-Schedule-Next", "purge"}, {"Nats-Scheduler", "schedules.>"}}), 10212);
  EXPECT_EQ(err("schedules.c", {{"Nats-Scheduler", "schedules.a"}}), 10212);
  EXPECT_EQ(err("schedules.c", {{"Nats-Schedule-Next", "2100-01-01T00:00:00Z"}, {"Nats-Scheduler", "schedules.a"}}),
            10212);
  // Exact texts.
  json e = publish("schedules.a", "x", {{"Nats-Schedule", "*/5 * * * *"}, {"Nats-Schedule-Target", "orders"}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10189,"description":"message schedules pattern is invalid"})"));
  e = publish("off.a", "x", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "off.b"}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10188,"description":"message schedules is disabled"})"));
  e = publish("schedules.a", "x", {{"Nats-Schedule", at}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10190,"description":"message schedules target is invalid"})"));
  e = publish("schedules.a", "x", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"}, {"Nats-Schedule-TTL", "x"}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10191,"description":"message schedules invalid per-message TTL"})"));
  e = publish("schedules.a", "x", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"}, {"Nats-Schedule-Rollup", "all"}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10192,"description":"message schedules invalid rollup"})"));
  e = publish("schedules.a", "x", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"}, {"Nats-Schedule-Source", "a.*"}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10203,"description":"message schedules source is invalid"})"));
  e = publish("schedules.c", "x", {{"Nats-Scheduler", "schedules.a"}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10212,"description":"message schedules invalid scheduler"})"));
  e = publish("schedules.a", "x", {{"Nats-Schedule", "@hourly"}, {"Nats-Schedule-Target", "orders"}, {"Nats-Schedule-Time-Zone", "+02:00"}})["error"];
  EXPECT_EQ(e, json::parse(R"({"code":400,"err_code":10223,"description":"message schedules time zone is invalid"})"));
  EXPECT_EQ(state("SCHED")["messages"], 0);  // nothing refused was stored
  // The valid forms are stored.
  EXPECT_EQ(err("schedules.h", {{"Nats-Schedule", "@hourly"}, {"Nats-Schedule-Target", "orders"}}), 0);
  EXPECT_EQ(err("schedules.k", {{"Nats-Schedule", "0 */5 * * * *"}, {"Nats-Schedule-Target", "orders"}}), 0);
  EXPECT_EQ(err("schedules.z", {{"Nats-Schedule", "0 0 5 * * *"}, {"Nats-Schedule-Target", "orders"},
                                {"Nats-Schedule-Time-Zone", "UTC"}}),
            0);
  EXPECT_EQ(err("schedules.t", {{"Nats-Schedule", at}, {"Nats-Schedule-Target", "orders"}, {"Nats-Schedule-TTL", "5m"}}), 0);
  // A cancel of a subject holding no message is let through (nats-server stays lenient).
  EXPECT_EQ(err("schedules.c", {{"Nats-Schedule-Next", "purge"}, {"Nats-Scheduler", "schedules.none"}}), 0);
  // ...but a subject holding something other than a schedule is not a scheduler.
  ASSERT_EQ(err("orders", {}), 0);
  EXPECT_EQ(err("schedules.c", {{"Nats-Schedule-Next", "purge"}, {"Nats-Scheduler", "orders"}}), 10212);
}

TEST_F(js_schedule, past_at_fires_at_once_with_nats_server_headers) {
  make_stream();
  json a = publish("schedules.orders.single", "delayed-body",
                   {{"Nats-Schedule", "@at 2009-11-10T23:00:00Z"},
                    {"Nats-Schedule-TTL", "5m"},
                    {"Nats-Schedule-Target", "orders"},
                    {"Nats-Msg-Id", "m1"},
                    {"X-Custom", "kept"}});
  ASSERT_EQ(a, json::parse(R"({"stream":"SCHED","seq":1})")) << a;
  auto fired = wait_for("SCHED", "orders");
  ASSERT_TRUE(fired) << "the past schedule never fired";
  EXPECT_EQ(fired->payload, "delayed-body");
  EXPECT_EQ(fired->headers["X-Custom"], "kept");
  EXPECT_EQ(fired->headers["Nats-Scheduler"], "schedules.orders.single");
  EXPECT_EQ(fired->headers["Nats-Schedule-Next"], "purge");
  EXPECT_EQ(fired->headers["Nats-TTL"], "5m");
  EXPECT_EQ(fired->headers.count("Nats-Schedule"), 0u);
  EXPECT_EQ(fired->headers.count("Nats-Schedule-Target"), 0u);
  EXPECT_EQ(fired->headers.count("Nats-Msg-Id"), 0u);
  EXPECT_EQ(fired->headers.count("Nats-Rollup"), 0u);
  // The one-shot purged its own subject; the fired message is the only one left.
  EXPECT_FALSE(last("SCHED", "schedules.orders.single"));
  EXPECT_EQ(state("SCHED")["messages"], 1);
}

TEST_F(js_schedule, one_schedule_per_subject) {
  make_stream();
  for (const char* body : {"body-v1", "body-v2"})
    ASSERT_FALSE(publish("schedules.orders.hourly", body, {{"Nats-Schedule", "@hourly"}, {"Nats-Schedule-Target", "orders"}})
                     .contains("error"));
  EXPECT_EQ(count("SCHED", "schedules.orders.hourly"), 1u);
  auto g = last("SCHED", "schedules.orders.hourly");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->payload, "body-v2");
  EXPECT_EQ(g->headers["Nats-Rollup"], "sub");  // added by the server
}

TEST_F(js_schedule, every_repeats_until_cancelled) {
  make_stream();
  ASSERT_FALSE(publish("schedules.p.1s", "tick", {{"Nats-Schedule", "@every 1s"}, {"Nats-Schedule-Target", "orders"}})
                   .contains("error"));
  auto first = wait_for("SCHED", "orders");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->payload, "tick");
  EXPECT_EQ(first->headers["Nats-Scheduler"], "schedules.p.1s");
  const std::string next = first->headers["Nats-Schedule-Next"];
  EXPECT_EQ(next.size(), 20u) << next;  // RFC 3339 in whole seconds, UTC
  EXPECT_EQ(next.back(), 'Z') << next;
  auto second = wait_for("SCHED", "orders", first->seq);
  ASSERT_TRUE(second) << "@every 1s fired once only";
  EXPECT_TRUE(last("SCHED", "schedules.p.1s"));  // the schedule stays
  // Cancel from another subject: the schedule goes, nothing more fires.
  json c = publish("schedules.cancel", "", {{"Nats-Schedule-Next", "purge"}, {"Nats-Scheduler", "schedules.p.1s"}});
  ASSERT_FALSE(c.contains("error")) << c;
  EXPECT_FALSE(last("SCHED", "schedules.p.1s"));
  const std::uint64_t fired = count("SCHED", "orders");
  std::this_thread::sleep_for(2500ms);  // longer than two intervals: a live schedule would fire
  EXPECT_EQ(count("SCHED", "orders"), fired);
}

TEST_F(js_schedule, source_samples_the_latest_message) {
  make_stream();
  ASSERT_FALSE(publish("sensors.temp", "20.0").contains("error"));
  ASSERT_FALSE(publish("sensors.temp", "21.5", {{"X-Unit", "C"}}).contains("error"));
  ASSERT_FALSE(publish("schedules.sample", "fallback",
                       {{"Nats-Schedule", "@at 2009-11-10T23:00:00Z"},
                        {"Nats-Schedule-Source", "sensors.temp"},
                        {"Nats-Schedule-Target", "sensors.sampled"}})
                   .contains("error"));
  auto g = wait_for("SCHED", "sensors.sampled");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->payload, "21.5");
  EXPECT_EQ(g->headers["X-Unit"], "C");
  EXPECT_EQ(g->headers["Nats-Scheduler"], "schedules.sample");
  // With no message on the source, the schedule's own body goes.
  ASSERT_FALSE(publish("schedules.sample2", "fallback",
                       {{"Nats-Schedule", "@at 2009-11-10T23:00:00Z"},
                        {"Nats-Schedule-Source", "sensors.none"},
                        {"Nats-Schedule-Target", "sensors.sampled2"}})
                   .contains("error"));
  g = wait_for("SCHED", "sensors.sampled2");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->payload, "fallback");
}

TEST_F(js_schedule, schedules_survive_a_restart) {
  make_stream("file");
  const std::string soon = "@at " + rfc3339_in(3s);
  ASSERT_FALSE(publish("schedules.later", "after-restart", {{"Nats-Schedule", soon.c_str()}, {"Nats-Schedule-Target", "orders"}})
                   .contains("error"));
  ASSERT_FALSE(publish("schedules.far", "far", {{"Nats-Schedule", "@at 2100-01-01T00:00:00Z"}, {"Nats-Schedule-Target", "orders"}})
                   .contains("error"));
  restart(false);
  auto g = wait_for("SCHED", "orders");
  ASSERT_TRUE(g) << "the schedule did not fire after the restart";
  EXPECT_EQ(g->payload, "after-restart");
  EXPECT_EQ(g->headers["Nats-Scheduler"], "schedules.later");
  EXPECT_FALSE(last("SCHED", "schedules.later"));
  EXPECT_TRUE(last("SCHED", "schedules.far"));  // still waiting
  EXPECT_EQ(count("SCHED", "orders"), 1u);
}

}  // namespace
}  // namespace peregrine::test
