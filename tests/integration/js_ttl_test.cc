// Per-message TTL (streams.md §9): the Nats-TTL header's errors in the PubAck, expiry of
// short-lived messages, `never` exempting a message from max_age, and TTLs surviving restart.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;

class js_ttl : public js_test {
 protected:
  void restart() {
    js_.reset();
    nc_.reset();
    server_->stop();
    ASSERT_TRUE(server_->start()) << server_->error();
    reconnect();
  }
  // Waits (at most `limit`) until the stream holds `n` messages.
  bool wait_messages(const std::string& stream, int n, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (state(stream)["messages"] == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
};

TEST_F(js_ttl, header_errors_in_the_puback) {
  ASSERT_FALSE(create({{"name", "OFF"}, {"subjects", {"off.>"}}}).contains("error"));
  ASSERT_FALSE(create({{"name", "ON"}, {"subjects", {"on.>"}}, {"allow_msg_ttl", true}}).contains("error"));
  json e = publish("off.a", "x", {{"Nats-TTL", "10s"}})["error"];
  EXPECT_EQ(e["code"], 400) << e;
  EXPECT_EQ(e["err_code"], 10166);
  EXPECT_EQ(e["description"], "per-message TTL is disabled");
  for (const char* bad : {"500ms", "0", "-3", "soon"}) {
    e = publish("on.a", "x", {{"Nats-TTL", bad}})["error"];
    EXPECT_EQ(e["err_code"], 10165) << bad << " " << e;
    EXPECT_EQ(e["description"], "invalid per-message TTL");
  }
  EXPECT_EQ(state("ON")["messages"], 0);  // refused messages are not stored
  EXPECT_EQ(publish("on.a", "x", {{"Nats-TTL", "1h"}})["seq"], 1);
  EXPECT_EQ(publish("on.a", "x", {{"Nats-TTL", "60"}})["seq"], 2);
  EXPECT_EQ(publish("on.a", "x", {{"Nats-TTL", "never"}})["seq"], 3);
}

TEST_F(js_ttl, turning_ttls_off_again_is_refused) {
  ASSERT_FALSE(create({{"name", "ON"}, {"subjects", {"on.>"}}, {"allow_msg_ttl", true}}).contains("error"));
  json up = request("$JS.API.STREAM.UPDATE.ON", json{{"name", "ON"}, {"subjects", {"on.>"}}}.dump());
  EXPECT_EQ(up["error"]["err_code"], 10052) << up;
  EXPECT_EQ(up["error"]["description"], "message TTL status can not be disabled");
}

TEST_F(js_ttl, short_lived_message_expires_and_never_outlives_max_age) {
  ASSERT_FALSE(create({{"name", "T"}, {"subjects", {"t.>"}}, {"allow_msg_ttl", true},
                       {"max_age", 1'500'000'000}})
                   .contains("error"));
  ASSERT_EQ(publish("t.short", "a", {{"Nats-TTL", "1s"}})["seq"], 1);
  ASSERT_EQ(publish("t.forever", "b", {{"Nats-TTL", "never"}})["seq"], 2);
  ASSERT_EQ(publish("t.plain", "c")["seq"], 3);
  // 1 s TTL first, then max_age (1.5 s) takes the plain one; `never` stays.
  EXPECT_TRUE(wait_messages("T", 2, std::chrono::milliseconds(1400)));
  EXPECT_TRUE(wait_messages("T", 1, std::chrono::milliseconds(1500)));
  json st = state("T");
  EXPECT_EQ(st["first_seq"], 2) << st;
  json got = request("$JS.API.STREAM.MSG.GET.T", R"({"seq":2})");
  EXPECT_EQ(got["message"]["subject"], "t.forever") << got;
}

TEST_F(js_ttl, ttl_survives_a_restart) {
  ASSERT_FALSE(create({{"name", "R"}, {"subjects", {"r.>"}}, {"allow_msg_ttl", true}}).contains("error"));
  ASSERT_EQ(publish("r.a", "a", {{"Nats-TTL", "2s"}})["seq"], 1);
  ASSERT_EQ(publish("r.b", "b")["seq"], 2);
  restart();
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(state("R")["messages"], 2);
  EXPECT_TRUE(wait_messages("R", 1, std::chrono::milliseconds(3000)));
  EXPECT_EQ(state("R")["first_seq"], 2);
}

}  // namespace
}  // namespace peregrine::test
