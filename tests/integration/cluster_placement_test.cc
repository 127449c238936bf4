// Placement by server_tags in a cluster (issue 11), as nats-server places: three servers
// tagged az:1 / az:2 + ssd / az:3. An R3 stream asking for a tag only one server has is
// refused with 10005 and nothing is created; an R1 stream asking for `ssd` lands on B whichever
// server was asked (A and C: one of them is not the meta leader, which places it), one asking
// for the asked server's own tag stays there, and one asking for
// a tag no server has is refused with 10005; tags are matched without regard to case; an R2
// stream asking for a tag only one server has is refused (10005) too. The
// expectations hold for a 3-node nats-server 2.9.10 cluster too (cluster_placement_nats_server).
#include <gtest/gtest.h>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_placement : public cluster_js_fixture {
 protected:
  bool runs_on_reference() const override { return true; }
  std::string server_conf(int i) const override {
    static const char* tags[] = {R"(["az:1"])", R"(["az:2", "ssd"])", R"(["az:3"])"};
    return std::string("server_tags: ") + tags[i] + "\n";
  }

  json create(int i, const json& cfg) {
    return api_retry(i, "$JS.API.STREAM.CREATE." + cfg.value("name", ""), cfg.dump());
  }
  static int err_code(const json& r) { return r.value("error", json::object()).value("err_code", 0); }

  // The stream's leader as every server reports it (each server learns the others' tags and
  // streams from the meta log, so the first answers may come before it settles).
  std::string home_of(const std::string& name) { return stream_leader(name, scaled(10000)); }
};

TEST_F(cluster_placement, streams_go_where_their_tags_are) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  // Every server knows the others' tags once their reports applied: retried until placed.
  json r1;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {
    r1 = create(0, {{"name", "FAST"}, {"subjects", {"fast.>"}}, {"placement", {{"tags", {"ssd"}}}}});
    if (r1.contains("config")) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(r1.contains("config")) << r1.dump();
  EXPECT_EQ(home_of("FAST"), "B");
  // Asked through C too: A or C is not the meta leader, which places it (only it knows every
  // member's state), so both ways are taken.
  const json r1c = create(2, {{"name", "FAST2"}, {"subjects", {"fast2.>"}}, {"placement", {{"tags", {"ssd"}}}}});
  ASSERT_TRUE(r1c.contains("config")) << r1c.dump();
  EXPECT_EQ(home_of("FAST2"), "B");
  // The asked server's own tag, in another case: it stays there.
  const json own = create(2, {{"name", "LOCAL"}, {"subjects", {"local.>"}}, {"placement", {{"tags", {"AZ:3"}}}}});
  ASSERT_TRUE(own.contains("config")) << own.dump();
  EXPECT_EQ(home_of("LOCAL"), "C");
  // A tag no server has, and more replicas than servers with the tag: 10005, nothing made.
  const json none = create(1, {{"name", "NOWHERE"}, {"subjects", {"nowhere.>"}}, {"placement", {{"tags", {"gpu"}}}}});
  EXPECT_EQ(err_code(none), 10005) << none.dump();
  const json r3 = create(0, {{"name", "SSD3"}, {"subjects", {"ssd3.>"}}, {"num_replicas", 3},
                             {"placement", {{"tags", {"ssd"}}}}});
  EXPECT_EQ(err_code(r3), 10005) << r3.dump();
  EXPECT_EQ(err_code(info(0, "NOWHERE")), 10059);
  EXPECT_EQ(err_code(info(0, "SSD3")), 10059);
  // Published through A, stored on B.
  auto nc = connect(servers_[0]->url());
  ASSERT_TRUE(nc);
  EXPECT_EQ(publish(nc.get(), "fast.x", "data", "f-1", scaled(5000)), 1u);
  EXPECT_EQ(info(2, "FAST").value("state", json::object()).value("messages", 0ull), 1u);
}

TEST_F(cluster_placement, a_replicated_stream_uses_only_servers_with_every_tag) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  json r2;
  const auto deadline = clock_type::now() + scaled(10000);
  while (clock_type::now() < deadline) {
    r2 = create(2, {{"name", "PAIR"}, {"subjects", {"pair.>"}}, {"num_replicas", 2}, {"placement", {{"tags", {"az:2"}}}}});
    if (!r2.contains("error") || err_code(r2) != 10005) break;
    std::this_thread::sleep_for(200ms);
  }
  // Only B has az:2: two replicas cannot be placed.
  EXPECT_EQ(err_code(r2), 10005) << r2.dump();
  const json one = create(2, {{"name", "ONE"}, {"subjects", {"one.>"}}, {"num_replicas", 3}});
  ASSERT_TRUE(one.contains("config")) << one.dump();
  EXPECT_FALSE(home_of("ONE").empty());
}

}  // namespace
}  // namespace peregrine::test
