// Many small streams (issue 15 item 7): disk use follows the data (no full preallocated
// block per stream), and a stream's and a consumer's config survive kill -9 as soon as the
// create was answered.
#include <sys/stat.h>

#include <filesystem>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;

constexpr int kStreams = 40;
constexpr std::uint64_t kPerStreamSlack = 64 << 10;

class js_many_streams : public js_test {
 protected:
  // Allocated bytes (what du counts) of every file and directory in the JetStream store.
  std::uint64_t store_disk_bytes() const {
    std::uint64_t total = 0;
    std::error_code ec;
    const auto root = server_->tmp_dir() / "js";
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) == 0) total += std::uint64_t(st.st_blocks) * 512;
    }
    return total;
  }

  void create_small_streams() {
    for (int i = 0; i < kStreams; ++i) {
      const std::string name = "KV_" + std::to_string(i);
      json r = create({{"name", name}, {"subjects", {"kv" + std::to_string(i) + ".>"}}, {"storage", "file"}});
      ASSERT_FALSE(r.contains("error")) << r;
      r = request("$JS.API.CONSUMER.DURABLE.CREATE." + name + ".C",
                  json({{"stream_name", name}, {"config", {{"durable_name", "C"}, {"ack_policy", "explicit"}}}}).dump());
      ASSERT_FALSE(r.contains("error")) << r;
      r = publish("kv" + std::to_string(i) + ".k", "hello");
      ASSERT_EQ(r["seq"], 1) << r;
    }
  }

  std::uint64_t stored_bytes() {
    std::uint64_t n = 0;
    for (int i = 0; i < kStreams; ++i) n += state("KV_" + std::to_string(i))["bytes"].get<std::uint64_t>();
    return n;
  }

  void expect_within_budget(const char* when) {
    const std::uint64_t stored = stored_bytes(), disk = store_disk_bytes();
    const std::uint64_t budget = (stored + kStreams * kPerStreamSlack + 4095) / 4096 * 4096;
    EXPECT_LE(disk, budget) << when << ": " << kStreams << " streams hold " << stored << " bytes but use "
                            << disk << " bytes of disk (" << disk / kStreams << " per stream)";
  }
};

TEST_F(js_many_streams, disk_use_is_stored_bytes_plus_at_most_64k_per_stream) {
  create_small_streams();
  expect_within_budget("after create");
  restart(false);
  ASSERT_EQ(state("KV_0")["messages"], 1);
  expect_within_budget("after restart");
}

TEST_F(js_many_streams, stream_and_consumer_config_survive_kill9_right_after_create) {
  json r = create({{"name", "DUR"}, {"subjects", {"dur.>"}}, {"storage", "file"}, {"max_msgs", 77},
                   {"description", "kept"}});
  ASSERT_FALSE(r.contains("error")) << r;
  r = request("$JS.API.CONSUMER.DURABLE.CREATE.DUR.D",
              json({{"stream_name", "DUR"},
                    {"config", {{"durable_name", "D"}, {"ack_policy", "explicit"}, {"filter_subject", "dur.a"},
                                {"max_deliver", 5}}}})
                  .dump());
  ASSERT_FALSE(r.contains("error")) << r;
  restart(true);  // no flush, no clean shutdown: only what the create made durable is left
  json info = request("$JS.API.STREAM.INFO.DUR");
  ASSERT_FALSE(info.contains("error")) << info;
  EXPECT_EQ(info["config"]["max_msgs"], 77);
  EXPECT_EQ(info["config"]["description"], "kept");
  EXPECT_EQ(info["config"]["subjects"], json({"dur.>"}));
  json ci = request("$JS.API.CONSUMER.INFO.DUR.D");
  ASSERT_FALSE(ci.contains("error")) << ci;
  EXPECT_EQ(ci["config"]["filter_subject"], "dur.a");
  EXPECT_EQ(ci["config"]["max_deliver"], 5);
  EXPECT_EQ(publish("dur.a", "x")["seq"], 1);
}

// Updates and deletes are durable the same way: a kill -9 right after the reply keeps them.
TEST_F(js_many_streams, update_and_consumer_delete_survive_kill9) {
  ASSERT_FALSE(create({{"name", "UPD"}, {"subjects", {"upd.>"}}, {"storage", "file"}}).contains("error"));
  for (const char* c : {"KEEP", "GONE"}) {
    json r = request(std::string("$JS.API.CONSUMER.DURABLE.CREATE.UPD.") + c,
                     json({{"stream_name", "UPD"}, {"config", {{"durable_name", c}, {"ack_policy", "explicit"}}}}).dump());
    ASSERT_FALSE(r.contains("error")) << r;
  }
  ASSERT_EQ(publish("upd.a", "one")["seq"], 1);
  json r = request("$JS.API.STREAM.UPDATE.UPD",
                   json({{"name", "UPD"}, {"subjects", {"upd.>", "more.>"}}, {"storage", "file"}, {"max_msgs", 9}}).dump());
  ASSERT_FALSE(r.contains("error")) << r;
  r = request("$JS.API.CONSUMER.DELETE.UPD.GONE");
  ASSERT_EQ(r["success"], true) << r;
  restart(true);
  json info = request("$JS.API.STREAM.INFO.UPD");
  ASSERT_FALSE(info.contains("error")) << info;
  EXPECT_EQ(info["config"]["max_msgs"], 9);
  EXPECT_EQ(info["config"]["subjects"], json({"upd.>", "more.>"}));
  EXPECT_EQ(info["state"]["messages"], 1);
  EXPECT_FALSE(request("$JS.API.CONSUMER.INFO.UPD.KEEP").contains("error"));
  EXPECT_EQ(request("$JS.API.CONSUMER.INFO.UPD.GONE")["error"]["err_code"], 10014);
  EXPECT_EQ(publish("more.x", "two")["seq"], 2);
}

}  // namespace
}  // namespace peregrine::test
