// Five servers: an R3 stream scaled to R5 and back (issue 11: num_replicas 1-5 on update),
// and an R5 stream surviving the loss of two servers at once (a majority of 3 of 5 holds
// every acknowledged message), then catching the two up when they return.
#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_r5 : public cluster_js_fixture {
 protected:
  int nodes() const override { return 5; }

  // Waits until every running server's StreamInfo names a leader and `replicas` others,
  // all current; returns the last info seen.
  json wait_replicas(const std::string& name, std::size_t replicas, std::chrono::milliseconds limit) {
    const auto deadline = clock_type::now() + limit;
    json last;
    while (clock_type::now() < deadline) {
      bool all = true;
      for (int i = 0; i < nodes() && all; ++i) {
        if (!servers_[i]->running()) continue;
        last = info(i, name);
        const json c = last.value("cluster", json::object());
        const json reps = c.value("replicas", json::array());
        all = !c.value("leader", "").empty() && reps.size() == replicas;
        for (const auto& r : reps) all = all && r.value("current", false);
      }
      if (all) return last;
      std::this_thread::sleep_for(100ms);
    }
    return last;
  }

  std::map<std::uint64_t, std::string> publish_some(int on, const std::string& prefix, int from, int count) {
    std::map<std::uint64_t, std::string> acked;
    auto nc = connect(servers_[on]->url());
    EXPECT_TRUE(nc);
    if (!nc) return acked;
    for (int k = from; k < from + count; ++k) {
      const std::string data = prefix + std::to_string(k);
      const std::uint64_t seq = publish(nc.get(), "r5.x", data, data, scaled(10000));
      EXPECT_GT(seq, 0u) << data << " not acknowledged";
      if (seq) acked[seq] = data;
    }
    return acked;
  }
};

TEST_F(cluster_r5, r3_scaled_to_r5_loses_two_servers_and_back_to_r3) {
  create_r3(0, "R5", "r5.>");
  if (HasFatalFailure()) return;
  auto acked = publish_some(0, "m", 0, 10);
  ASSERT_EQ(acked.size(), 10u);

  // Up to five: four replicas beside the leader, every one caught up.
  json r = api_retry(1, "$JS.API.STREAM.UPDATE.R5",
                     R"({"name":"R5","subjects":["r5.>"],"storage":"file","num_replicas":5})");
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["config"].value("num_replicas", 0), 5) << r.dump();
  json i = wait_replicas("R5", 4, scaled(20000));
  ASSERT_EQ(i["cluster"]["replicas"].size(), 4u) << i.dump() << logs();
  EXPECT_EQ(i["state"].value("messages", 0), 10) << i.dump();

  // Two servers gone at once, neither of them the one asked: three of five still agree.
  const std::string leader = stream_leader("R5", scaled(10000));
  ASSERT_FALSE(leader.empty());
  std::vector<int> killed;
  for (int k = 0; k < nodes() && killed.size() < 2; ++k)
    if (k != 0) killed.push_back(k);
  for (int k : killed) {
    ::kill(servers_[k]->pid(), SIGKILL);
    servers_[k]->stop();
  }
  for (auto& [seq, data] : publish_some(0, "n", 0, 10)) acked[seq] = data;
  EXPECT_EQ(acked.size(), 20u);
  expect_all(0, "R5", acked);

  // Back again: the two catch up from the others.
  for (int k : killed) ASSERT_TRUE(servers_[k]->start()) << servers_[k]->error();
  i = wait_replicas("R5", 4, scaled(30000));
  ASSERT_EQ(i["cluster"]["replicas"].size(), 4u) << i.dump() << logs();
  EXPECT_EQ(i["state"].value("messages", 0), 20) << i.dump();
  expect_all(killed[0], "R5", acked);

  // Down to three: two replicas left, nothing lost.
  r = api_retry(2, "$JS.API.STREAM.UPDATE.R5", R"({"name":"R5","subjects":["r5.>"],"storage":"file","num_replicas":3})");
  ASSERT_FALSE(r.contains("error")) << r.dump();
  i = wait_replicas("R5", 2, scaled(20000));
  ASSERT_EQ(i["cluster"]["replicas"].size(), 2u) << i.dump() << logs();
  EXPECT_EQ(i["state"].value("messages", 0), 20) << i.dump();
  for (auto& [seq, data] : publish_some(3, "o", 0, 5)) acked[seq] = data;
  expect_all(4, "R5", acked);
}

}  // namespace
}  // namespace peregrine::test
