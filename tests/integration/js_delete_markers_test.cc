// Subject delete markers (subject_delete_marker_ttl, ADR-43, streams.md §9.4): when max_age or a
// per-message TTL removes the last message of a subject, a marker with `Nats-Marker-Reason:
// MaxAge`, `Nats-TTL: <marker TTL>` and `Nats-Rollup: sub` takes its place, reaches consumers,
// survives a restart and expires by its own TTL without a new marker. Config rules (§2.3, §2.4).
// Needs a 2.11+ server: nats-server 2.9.10 has no markers.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;

constexpr const char* kMarkerHeaders =
    "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 1s\r\nNats-Rollup: sub\r\n\r\n";

// Sanitizer builds run a slower server: meson sets PEREGRINE_TIME_SCALE (5 there, else 1).
double time_scale() {
  const char* v = std::getenv("PEREGRINE_TIME_SCALE");
  const double x = v != nullptr ? std::atof(v) : 1.0;
  return x > 0 ? x : 1.0;
}

class js_delete_markers : public js_test {
 protected:
  // Polls pred every 50 ms for at most limit (stretched by the time scale).
  bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit * time_scale();
    while (std::chrono::steady_clock::now() < until) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pred();
  }
  json last_on(const std::string& stream, const std::string& subject) {
    return request("$JS.API.STREAM.MSG.GET." + stream, json{{"last_by_subj", subject}}.dump());
  }
  json info(const std::string& stream) { return request("$JS.API.STREAM.INFO." + stream); }
};

TEST_F(js_delete_markers, max_age_leaves_a_marker_that_consumers_see_and_that_expires) {
  for (const std::string storage : {"file", "memory"}) {
    SCOPED_TRACE(storage);
    const std::string name = storage == "file" ? "F" : "M";
    const std::string pfx = storage == "file" ? "f" : "m";
    json r = create({{"name", name}, {"subjects", {pfx + ".>"}}, {"storage", storage},
                     {"max_age", 1'000'000'000}, {"subject_delete_marker_ttl", 1'000'000'000}});
    ASSERT_FALSE(r.contains("error")) << r;
    // Auto-set (streams.md §2.3 #5); the marker TTL is echoed.
    EXPECT_EQ(r["config"]["allow_msg_ttl"], true) << r;
    EXPECT_EQ(r["config"]["allow_rollup_hdrs"], true);
    EXPECT_EQ(r["config"]["deny_purge"], false);
    EXPECT_EQ(r["config"]["subject_delete_marker_ttl"], 1'000'000'000);

    natsSubscription* raw_sub = nullptr;
    ASSERT_EQ(natsConnection_SubscribeSync(&raw_sub, nc_.get(), ("dlv." + name).c_str()), NATS_OK);
    std::unique_ptr<natsSubscription, void (*)(natsSubscription*)> sub(raw_sub, natsSubscription_Destroy);
    json c = request("$JS.API.CONSUMER.CREATE." + name,
                     json{{"stream_name", name}, {"config", {{"deliver_subject", "dlv." + name}, {"ack_policy", "none"}}}}.dump());
    ASSERT_FALSE(c.contains("error")) << c;

    ASSERT_EQ(publish(pfx + ".a", "1")["seq"], 1);
    ASSERT_EQ(publish(pfx + ".b", "2")["seq"], 2);
    ASSERT_EQ(publish(pfx + ".b", "3")["seq"], 3);
    // All three expire at once: a's only message and b's last become markers 4 and 5, b's
    // older message just goes.
    ASSERT_TRUE(wait_until([&] { return state(name)["last_seq"] == 5; }, std::chrono::milliseconds(4000)))
        << state(name);
    for (const auto& [subj, seq] : {std::pair<std::string, int>{pfx + ".a", 4}, {pfx + ".b", 5}}) {
      json m = last_on(name, subj);
      ASSERT_TRUE(m.contains("message")) << subj << " " << m;  // may race the marker's expiry only on a very slow host
      EXPECT_EQ(m["message"]["seq"], seq) << m;
      EXPECT_EQ(base64_decode(m["message"].value("hdrs", "")), kMarkerHeaders) << m;
      EXPECT_FALSE(m["message"].contains("data")) << m;  // empty payload
    }

    // The consumer got 1, 2, 3 and then both markers.
    std::vector<std::string> subjects, reasons;
    for (int i = 0; i < 5; ++i) {
      natsMsg* raw = nullptr;
      ASSERT_EQ(natsSubscription_NextMsg(&raw, sub.get(), static_cast<int64_t>(3000 * time_scale())), NATS_OK) << i;
      msg_ptr m(raw);
      subjects.emplace_back(natsMsg_GetSubject(m.get()));
      const char* v = nullptr;
      reasons.emplace_back(natsMsgHeader_Get(m.get(), "Nats-Marker-Reason", &v) == NATS_OK ? v : "");
      if (i >= 3) {
        EXPECT_EQ(natsMsg_GetDataLength(m.get()), 0);
        ASSERT_EQ(natsMsgHeader_Get(m.get(), "Nats-TTL", &v), NATS_OK);
        EXPECT_STREQ(v, "1s");
      }
    }
    EXPECT_EQ(subjects, (std::vector<std::string>{pfx + ".a", pfx + ".b", pfx + ".b", pfx + ".a", pfx + ".b"}));
    EXPECT_EQ(reasons, (std::vector<std::string>{"", "", "", "MaxAge", "MaxAge"}));

    // The markers expire too and leave nothing behind (no marker for a marker).
    ASSERT_TRUE(wait_until([&] { return state(name)["messages"] == 0; }, std::chrono::milliseconds(4000)))
        << state(name);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    json st = state(name);
    EXPECT_EQ(st["messages"], 0) << st;
    EXPECT_EQ(st["last_seq"], 5) << st;
  }
}

TEST_F(js_delete_markers, no_marker_while_the_subject_keeps_a_message) {
  ASSERT_FALSE(create({{"name", "K"}, {"subjects", {"k.>"}}, {"subject_delete_marker_ttl", 1'000'000'000}})
                   .contains("error"));
  ASSERT_EQ(publish("k.a", "old", {{"Nats-TTL", "1s"}})["seq"], 1);
  ASSERT_EQ(publish("k.a", "new")["seq"], 2);  // no TTL, no max_age: stays
  ASSERT_TRUE(wait_until([&] { return state("K")["messages"] == 1; }, std::chrono::milliseconds(4000)));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  json st = state("K");
  EXPECT_EQ(st["messages"], 1) << st;
  EXPECT_EQ(st["last_seq"], 2) << st;  // no marker
  EXPECT_EQ(last_on("K", "k.a")["message"]["seq"], 2);
}

TEST_F(js_delete_markers, ttl_removal_leaves_a_marker_that_survives_a_restart) {
  // max_msgs_per_subject 1: nats-server raises a shorter Nats-TTL to the marker TTL otherwise.
  ASSERT_FALSE(create({{"name", "R"}, {"subjects", {"r.>"}}, {"max_msgs_per_subject", 1},
                       {"subject_delete_marker_ttl", 60'000'000'000}})
                   .contains("error"));
  ASSERT_EQ(publish("r.a", "x", {{"Nats-TTL", "1s"}})["seq"], 1);
  ASSERT_TRUE(wait_until([&] { return state("R")["last_seq"] == 2; }, std::chrono::milliseconds(4000)));
  const std::string want = "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 1m0s\r\nNats-Rollup: sub\r\n\r\n";
  json m = last_on("R", "r.a");
  EXPECT_EQ(base64_decode(m["message"].value("hdrs", "")), want) << m;
  restart(false);
  ASSERT_FALSE(HasFatalFailure());
  json st = state("R");
  EXPECT_EQ(st["messages"], 1) << st;
  EXPECT_EQ(st["first_seq"], 2) << st;
  m = last_on("R", "r.a");
  EXPECT_EQ(m["message"]["seq"], 2) << m;
  EXPECT_EQ(base64_decode(m["message"].value("hdrs", "")), want) << m;
}

// streams.md §9.3: a Nats-TTL shorter than the marker TTL is raised to it, the stored header
// rewritten to whole seconds.
TEST_F(js_delete_markers, shorter_ttl_is_raised_to_the_marker_ttl) {
  ASSERT_FALSE(create({{"name", "L"}, {"subjects", {"l.>"}}, {"subject_delete_marker_ttl", 60'000'000'000}})
                   .contains("error"));
  ASSERT_EQ(publish("l.a", "x", {{"Nats-TTL", "5s"}})["seq"], 1);
  json m = last_on("L", "l.a");
  EXPECT_EQ(base64_decode(m["message"].value("hdrs", "")), "NATS/1.0\r\nNats-TTL: 60\r\n\r\n") << m;
}

TEST_F(js_delete_markers, config_rules) {
  auto err = [&](json cfg) { return create(cfg)["error"]; };
  json e = err({{"name", "A"}, {"subject_delete_marker_ttl", 500'000'000}});
  EXPECT_EQ(e["code"], 500) << e;
  EXPECT_EQ(e["err_code"], 10052);
  EXPECT_EQ(e["description"], "subject delete marker TTL must be at least 1 second");
  e = err({{"name", "A"}, {"subject_delete_marker_ttl", -1}});
  EXPECT_EQ(e["description"], "subject delete marker TTL must not be negative") << e;
  e = err({{"name", "A"}, {"subject_delete_marker_ttl", 1'000'000'000}, {"pedantic", true}});
  EXPECT_EQ(e["description"], "subject delete marker cannot be set if message TTLs are disabled") << e;
  e = err({{"name", "A"}, {"subject_delete_marker_ttl", 1'000'000'000}, {"allow_msg_ttl", true}, {"pedantic", true}});
  EXPECT_EQ(e["description"], "subject delete marker cannot be set if roll-ups are disabled") << e;
  e = err({{"name", "A"}, {"subject_delete_marker_ttl", 1'000'000'000}, {"allow_rollup_hdrs", true}, {"deny_purge", true}});
  EXPECT_EQ(e["description"], "roll-ups require the purge permission") << e;
  // Pedantic with both set is fine.
  json ok = create({{"name", "P"}, {"subject_delete_marker_ttl", 1'000'000'000}, {"allow_msg_ttl", true},
                    {"allow_rollup_hdrs", true}, {"pedantic", true}});
  EXPECT_FALSE(ok.contains("error")) << ok;
  // A non-pedantic create turns deny_purge off with the roll-ups it switches on.
  ok = create({{"name", "D"}, {"subject_delete_marker_ttl", 1'000'000'000}, {"deny_purge", true}});
  EXPECT_EQ(ok["config"]["deny_purge"], false) << ok;
  ASSERT_FALSE(create({{"name", "O"}}).contains("error"));
  e = err({{"name", "MI"}, {"mirror", {{"name", "O"}}}, {"subject_delete_marker_ttl", 1'000'000'000}});
  EXPECT_EQ(e["err_code"], 10052) << e;
  EXPECT_EQ(e["description"], "subject delete markers forbidden on mirrors") << e;
  // Switching markers on by update works the same way.
  json up = request("$JS.API.STREAM.UPDATE.O", json{{"name", "O"}, {"subject_delete_marker_ttl", 2'000'000'000}}.dump());
  EXPECT_FALSE(up.contains("error")) << up;
  EXPECT_EQ(up["config"]["allow_msg_ttl"], true) << up;
  EXPECT_EQ(up["config"]["subject_delete_marker_ttl"], 2'000'000'000);
}

}  // namespace
}  // namespace peregrine::test
