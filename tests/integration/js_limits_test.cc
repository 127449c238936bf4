// Server JetStream storage limits (jetstream { max_file_store, max_memory_store }): stream
// reservations at create/update (10047 file, 10028 memory) and 503 10023 on publish once the
// stored bytes exceed the limit (streams.md §2.1 step 7, §3.3 check 18).
#include <gtest/gtest.h>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;

class js_limits : public js_test {
 protected:
  std::string extra_conf() const override {
    return "jetstream {\n  store_dir: \"@TMPDIR@/js\"\n  max_file_store: 65536\n"
           "  max_memory_store: 32768\n}\n";
  }
};

TEST_F(js_limits, reservation_over_the_file_limit_is_10047) {
  json e = create({{"name", "BIG"}, {"subjects", {"big.>"}}, {"max_bytes", 100000}})["error"];
  EXPECT_EQ(e["code"], 500) << e;
  EXPECT_EQ(e["err_code"], 10047);
  EXPECT_EQ(e["description"], "insufficient storage resources available");
  EXPECT_EQ(request("$JS.API.STREAM.NAMES")["total"], 0);
}

TEST_F(js_limits, reservation_over_the_memory_limit_is_10028) {
  json e = create({{"name", "MEM"}, {"subjects", {"mem.>"}}, {"storage", "memory"}, {"max_bytes", 40000}})["error"];
  EXPECT_EQ(e["code"], 500) << e;
  EXPECT_EQ(e["err_code"], 10028);
  EXPECT_EQ(e["description"], "insufficient memory resources available");
  // The file limit is separate: the same size fits there.
  EXPECT_FALSE(create({{"name", "FILE"}, {"subjects", {"file.>"}}, {"max_bytes", 40000}}).contains("error"));
}

TEST_F(js_limits, reservations_add_up_and_an_update_excludes_its_own) {
  ASSERT_FALSE(create({{"name", "A"}, {"subjects", {"a.>"}}, {"max_bytes", 40000}}).contains("error"));
  EXPECT_EQ(create({{"name", "B"}, {"subjects", {"b.>"}}, {"max_bytes", 40000}})["error"]["err_code"], 10047);
  EXPECT_FALSE(create({{"name", "B"}, {"subjects", {"b.>"}}, {"max_bytes", 20000}}).contains("error"));
  // A grows within what B leaves; its own old reservation does not count against it.
  json up = request("$JS.API.STREAM.UPDATE.A",
                    json{{"name", "A"}, {"subjects", {"a.>"}}, {"max_bytes", 45000}}.dump());
  EXPECT_FALSE(up.contains("error")) << up;
  up = request("$JS.API.STREAM.UPDATE.A", json{{"name", "A"}, {"subjects", {"a.>"}}, {"max_bytes", 50000}}.dump());
  EXPECT_EQ(up["error"]["err_code"], 10047) << up;
}

TEST_F(js_limits, publish_past_the_file_limit_is_503_10023_and_stores_nothing) {
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  const std::string body(1000, 'x');
  json last;
  int stored = 0;
  for (int i = 0; i < 200; ++i) {
    last = publish("orders.new", body);
    if (last.contains("error")) break;
    ++stored;
  }
  ASSERT_TRUE(last.contains("error")) << "never refused after " << stored << " messages";
  EXPECT_EQ(last["error"]["code"], 503) << last;
  EXPECT_EQ(last["error"]["err_code"], 10023);
  EXPECT_EQ(last["error"]["description"], "insufficient resources");
  // Refused once usage went past 64 KiB: about 60 messages of ~1 KiB were taken.
  EXPECT_GT(stored, 50);
  EXPECT_LT(stored, 80);
  json info = request("$JS.API.STREAM.INFO.ORDERS");
  EXPECT_EQ(info["state"]["messages"], stored) << info;
  // Making room (purge) lets publishing continue.
  ASSERT_TRUE(request("$JS.API.STREAM.PURGE.ORDERS")["success"].get<bool>());
  EXPECT_FALSE(publish("orders.new", body).contains("error"));
}

}  // namespace
}  // namespace peregrine::test
