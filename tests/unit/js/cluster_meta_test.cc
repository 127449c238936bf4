// Placement of replicas, the meta group's assignment table and the `cluster` JSON.
#include <gtest/gtest.h>

#include "src/js/cluster_info.h"
#include "src/js/meta_state.h"
#include "src/js/placement.h"

namespace {

namespace re = js::repl_entries;

std::vector<js::placement_candidate> servers() {
  return {{"s1", "C1", {"az:1", "ssd"}, false, 2},
          {"s2", "C1", {"az:2"}, false, 0},
          {"s3", "C1", {"AZ:3", "ssd"}, false, 1},
          {"s4", "C1", {"az:1"}, false, 0},
          {"s5", "C2", {"ssd"}, false, 0}};
}

TEST(Placement, FewestAssetsFirstTiesByName) {
  js::placement_request req;
  req.replicas = 3;
  req.default_cluster = "C1";
  auto r = js::place_replicas(req, servers());
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.peers, (std::vector<std::string>{"s2", "s4", "s3"}));
}

TEST(Placement, ClusterAndTagsFilterCaseInsensitively) {
  js::placement_request req;
  req.replicas = 2;
  req.default_cluster = "C1";
  req.tags = {"SSD"};
  auto r = js::place_replicas(req, servers());
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.peers, (std::vector<std::string>{"s3", "s1"}));
  req.replicas = 1;
  req.cluster = "C2";
  r = js::place_replicas(req, servers());
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.peers, (std::vector<std::string>{"s5"}));
}

TEST(Placement, NotEnoughSuitablePeersIs10005WithTheReasons) {
  auto all = servers();
  all[1].offline = true;
  js::placement_request req;
  req.replicas = 3;
  req.default_cluster = "C1";
  req.tags = {"ssd"};
  auto r = js::place_replicas(req, all);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->code, 400);
  EXPECT_EQ(r.error->err_code, 10005);
  EXPECT_EQ(r.error->description,
            "no suitable peers for placement, peer offline, tags not matched ['ssd']");
  req.tags.clear();
  req.replicas = 5;
  r = js::place_replicas(req, servers());
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->description, "no suitable peers for placement");
}

TEST(Placement, ExcludedServersAreSkipped) {
  js::placement_request req;
  req.replicas = 3;
  req.default_cluster = "C1";
  req.exclude = {"s2"};
  auto r = js::place_replicas(req, servers());
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.peers, (std::vector<std::string>{"s4", "s3", "s1"}));
}

re::stream_assign assign(std::vector<std::string> peers) {
  re::stream_assign a;
  a.account = "$G";
  a.name = "ORDERS";
  a.config_json = "{}";
  a.peers = std::move(peers);
  a.group_id = 9;
  return a;
}

TEST(MetaState, AssignmentCreatesTheGroupOnItsPeersOnly) {
  js::meta_state on_s1("s1"), on_s4("s4");
  const auto bytes = re::encode(re::meta_op{assign({"s1", "s2", "s3"})});
  std::vector<js::meta_change> mine1, mine4;
  ASSERT_TRUE(on_s1.apply(bytes, mine1));
  ASSERT_TRUE(on_s4.apply(bytes, mine4));
  ASSERT_EQ(mine1.size(), 1u);
  EXPECT_EQ(mine1[0].what, js::meta_change::kind::create_stream);
  EXPECT_EQ(mine1[0].stream.group_id, 9u);
  EXPECT_TRUE(mine4.empty());
  ASSERT_NE(on_s4.find("$G", "ORDERS"), nullptr);  // every server knows the table
  EXPECT_EQ(on_s4.assets_on("s2"), 1u);
  EXPECT_EQ(on_s4.assets_on("s4"), 0u);
  // A repeated assignment changes nothing.
  mine1.clear();
  ASSERT_TRUE(on_s1.apply(bytes, mine1));
  EXPECT_TRUE(mine1.empty());
}

TEST(MetaState, ScaleMovesTheConsumersIntoTheirNewGroupsWithTheirState) {
  js::meta_state s("s1");
  std::vector<js::meta_change> mine;
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{assign({"s1", "s2", "s3"})}), mine));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::consumer_assign{"$G", "ORDERS", "C1", "{}", {"s1", "s2", "s3"}, 1, 10}}),
                      mine));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::consumer_assign{"$G", "ORDERS", "C2", "{}", {"s2"}, 1, 11}}), mine));
  mine.clear();
  // 3 -> 1 on s1: one entry, the stream's new group and C1's (C2 went: not in the list).
  re::stream_update u;
  static_cast<re::stream_assign&>(u) = assign({"s1"});
  u.group_id = 77;
  u.seed_from = "s1";
  re::consumer_assign c1{"$G", "ORDERS", "C1", "{}", {"s1"}, 1, 78};
  c1.state = re::consumer_seed{9, 8, 5, 5, {{6, 9, 123}, {7, 7, 100}}, {{6, 1}}};
  u.consumers = {c1};
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{u}), mine));
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].what, js::meta_change::kind::update_stream);
  EXPECT_EQ(mine[0].stream.group_id, 77u);
  EXPECT_TRUE(mine[0].stream.consumers.empty());
  EXPECT_EQ(mine[1].what, js::meta_change::kind::create_consumer);
  EXPECT_EQ(mine[1].consumer.group_id, 78u);
  ASSERT_TRUE(mine[1].consumer.state);
  EXPECT_EQ(*mine[1].consumer.state, *c1.state);
  const auto* e = s.find("$G", "ORDERS");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->consumers.size(), 1u);
  EXPECT_EQ(e->consumers.at("C1").peers, std::vector<std::string>{"s1"});
  EXPECT_TRUE(e->assignment.consumers.empty());
  // A config update after the scale copies its assignment (seed_from included, same group):
  // the consumers stay.
  mine.clear();
  re::stream_update later;
  static_cast<re::stream_assign&>(later) = e->assignment;
  later.config_json = R"({"name":"ORDERS","max_msgs":5})";
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{later}), mine));
  EXPECT_EQ(s.find("$G", "ORDERS")->consumers.size(), 1u);
}

TEST(MetaState, ServerRemoveIsRememberedAndChangesNoAssignment) {
  js::meta_state s("s1");
  std::vector<js::meta_change> mine;
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{assign({"s1", "s2", "s3"})}), mine));
  mine.clear();
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::server_remove{"s3"}}), mine));
  EXPECT_TRUE(mine.empty());  // the streams move by their own PEER.REMOVE, not by this entry
  EXPECT_EQ(s.removed(), std::set<std::string>{"s3"});
  EXPECT_EQ(s.find("$G", "ORDERS")->assignment.peers, (std::vector<std::string>{"s1", "s2", "s3"}));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::server_remove{"s3"}}), mine));  // again: no change
  EXPECT_EQ(s.removed().size(), 1u);
}

TEST(MetaState, UpdateMovesPeersAndRemoveDropsConsumers) {
  js::meta_state s("s3");
  std::vector<js::meta_change> mine;
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{assign({"s1", "s2", "s3"})}), mine));
  re::consumer_assign c{"$G", "ORDERS", "C1", "{}", {"s1", "s2", "s3"}, 1, 10};
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{c}), mine));
  re::stream_update u;
  static_cast<re::stream_assign&>(u) = assign({"s1", "s2", "s4"});
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{u}), mine));
  ASSERT_EQ(mine.size(), 3u);
  EXPECT_EQ(mine[1].what, js::meta_change::kind::create_consumer);
  EXPECT_EQ(mine[2].what, js::meta_change::kind::remove_stream);
  mine.clear();
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::stream_remove{"$G", "ORDERS"}}), mine));
  EXPECT_TRUE(mine.empty());  // no longer a peer
  EXPECT_EQ(s.find("$G", "ORDERS"), nullptr);
  EXPECT_EQ(s.assets_on("s1"), 0u);
  EXPECT_FALSE(s.apply(std::vector<std::uint8_t>{1, 77}, mine));
}

TEST(MetaState, ConsumerUpdateReplacesTheConfigAndKeepsTheGroup) {
  js::meta_state s("s2");
  std::vector<js::meta_change> mine;
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{assign({"s1", "s2", "s3"})}), mine));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::consumer_assign{"$G", "ORDERS", "C1", "{}", {"s1", "s2"}, 1, 10}}),
                      mine));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::consumer_assign{"$G", "ORDERS", "C2", "{}", {"s1"}, 1, 11}}), mine));
  mine.clear();
  const std::string cfg = R"({"durable_name":"C1","max_ack_pending":2})";
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::consumer_update{"$G", "ORDERS", "C1", cfg}}), mine));
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].what, js::meta_change::kind::update_consumer);
  EXPECT_EQ(mine[0].consumer.config_json, cfg);
  EXPECT_EQ(mine[0].consumer.group_id, 10u);
  EXPECT_EQ(mine[0].consumer.peers, (std::vector<std::string>{"s1", "s2"}));
  EXPECT_EQ(s.find("$G", "ORDERS")->consumers.at("C1").config_json, cfg);
  // Not a peer of C2: the table changes, nothing to do here. An unknown consumer: nothing.
  mine.clear();
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::consumer_update{"$G", "ORDERS", "C2", cfg}}), mine));
  EXPECT_TRUE(mine.empty());
  EXPECT_EQ(s.find("$G", "ORDERS")->consumers.at("C2").config_json, cfg);
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::consumer_update{"$G", "ORDERS", "NOPE", cfg}}), mine));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::consumer_update{"$G", "GONE", "C1", cfg}}), mine));
  EXPECT_TRUE(mine.empty());
  EXPECT_EQ(s.find("$G", "ORDERS")->consumers.size(), 2u);
}

TEST(ClusterInfo, FieldsInNatsServerOrder) {
  js::replica_group_state g;
  g.cluster = "C1";
  g.leader = "s1";
  g.commit_index = 10;
  const std::int64_t now = 100'000'000'000;
  g.peers = {{"s3", "cnrtt3eg", false, 7, now - 2'000'000},
             {"s1", "yrzKKRBu", false, 10, now},
             {"s2", "b3YUzrLY", false, 10, now - 1'000'000}};
  EXPECT_EQ(js::cluster_json(g, now).dump(),
            R"({"name":"C1","leader":"s1","replicas":[)"
            R"({"name":"s2","current":true,"active":1000000,"peer":"b3YUzrLY"},)"
            R"({"name":"s3","current":false,"active":2000000,"lag":3,"peer":"cnrtt3eg"}]})");
}

TEST(ClusterInfo, OfflineSilentAndLeaderless) {
  js::replica_group_state g;
  g.cluster = "C1";
  g.commit_index = 4;
  const std::int64_t now = 100'000'000'000;
  g.peers = {{"s1", "p1", true, 4, now - 20'000'000'000}, {"s2", "p2", false, 4, now - 11'000'000'000}};
  EXPECT_EQ(js::cluster_json(g, now).dump(),
            R"({"name":"C1","replicas":[)"
            R"({"name":"s1","current":false,"offline":true,"active":20000000000,"peer":"p1"},)"
            R"({"name":"s2","current":false,"active":11000000000,"peer":"p2"}]})");
  js::replica_group_state alone;
  alone.leader = "s1";
  alone.peers = {{"s1", "p1", false, 0, now}};
  EXPECT_EQ(js::cluster_json(alone, now).dump(), R"({"leader":"s1"})");
}

}  // namespace

// Each server's R1 streams: a report replaces that server's last one, a name reported by two
// servers is the later report's, and a removed server's streams are forgotten.
TEST(MetaState, R1StreamReportsReplaceTheServersSet) {
  js::meta_state s("s1");
  std::vector<js::meta_change> mine;
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::r1_streams{"s2", {{"A", {"a.>"}}, {"B", {"b"}}}}}), mine));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::r1_streams{"s3", {{"C", {}}}}}), mine));
  EXPECT_TRUE(mine.empty());  // nothing for this server to host
  ASSERT_EQ(s.r1_streams().size(), 3u);
  EXPECT_EQ(s.r1_streams().at("A").server, "s2");
  EXPECT_EQ(s.r1_streams().at("A").subjects, std::vector<std::string>{"a.>"});
  // s2 deleted B and created D.
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::r1_streams{"s2", {{"A", {"a.>"}}, {"D", {"d"}}}}}), mine));
  EXPECT_EQ(s.r1_streams().count("B"), 0u);
  EXPECT_EQ(s.r1_of("s2"), (std::vector<re::r1_stream>{{"A", {"a.>"}}, {"D", {"d"}}}));
  // s3 reports a D of its own (a create that raced): the later report wins the name.
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::r1_streams{"s3", {{"C", {}}, {"D", {"x"}}}}}), mine));
  EXPECT_EQ(s.r1_streams().at("D").server, "s3");
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::server_remove{"s3"}}), mine));
  EXPECT_EQ(s.r1_streams().count("C"), 0u);
  EXPECT_EQ(s.r1_streams().count("D"), 0u);
  EXPECT_EQ(s.r1_of("s2"), (std::vector<re::r1_stream>{{"A", {"a.>"}}}));
}

// A server's tags come with its report and are replaced by its next one.
TEST(MetaState, ServerTagsFollowTheLatestReport) {
  js::meta_state s("s1");
  std::vector<js::meta_change> mine;
  EXPECT_TRUE(s.tags_of("s2").empty());
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::r1_streams{"s2", {}, {"az:1", "ssd"}}}), mine));
  EXPECT_EQ(s.tags_of("s2"), (std::vector<std::string>{"az:1", "ssd"}));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::r1_streams{"s2", {{"A", {"a"}}}, {"az:2"}}}), mine));
  EXPECT_EQ(s.tags_of("s2"), std::vector<std::string>{"az:2"});
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::r1_streams{"s2", {}}}), mine));  // a reload dropped them
  EXPECT_TRUE(s.tags_of("s2").empty());
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::r1_streams{"s3", {}, {"x"}}}), mine));
  ASSERT_TRUE(s.apply(re::encode(re::meta_op{re::server_remove{"s3"}}), mine));
  EXPECT_TRUE(s.tags_of("s3").empty());
}

namespace {

re::stream_assign named(const std::string& name, std::uint64_t group, std::vector<std::string> peers) {
  re::stream_assign a = assign(std::move(peers));
  a.name = name;
  a.group_id = group;
  return a;
}

void apply_all(js::meta_state& s, const std::vector<re::meta_op>& ops) {
  std::vector<js::meta_change> ignored;
  for (const auto& op : ops) ASSERT_TRUE(s.apply(re::encode(op), ignored));
}

// The changes for one server, as "kind name" strings in order.
std::vector<std::string> described(const std::vector<js::meta_change>& mine) {
  std::vector<std::string> out;
  using k = js::meta_change::kind;
  for (const auto& c : mine) {
    switch (c.what) {
      case k::create_stream: out.push_back("create_stream " + c.stream.name); break;
      case k::update_stream: out.push_back("update_stream " + c.stream.name); break;
      case k::remove_stream: out.push_back("remove_stream " + c.stream.name); break;
      case k::create_consumer: out.push_back("create_consumer " + c.consumer.stream + "." + c.consumer.name); break;
      case k::update_consumer: out.push_back("update_consumer " + c.consumer.stream + "." + c.consumer.name); break;
      case k::remove_consumer: out.push_back("remove_consumer " + c.consumer.stream + "." + c.consumer.name); break;
    }
  }
  return out;
}

}  // namespace

// A snapshot rebuilds the same table: streams with their consumers (a scale's seed kept),
// removed servers, R1 reports and tags.
TEST(MetaState, SnapshotRestoresTheWholeTable) {
  js::meta_state s("s1");
  re::stream_assign scaled = named("SCALED", 20, {"s1", "s2", "s3"});
  scaled.seed_from = "s2";
  re::consumer_assign c{"$G", "ORDERS", "C1", R"({"durable_name":"C1"})", {"s1", "s2", "s3"}, 5, 10};
  c.state = re::consumer_seed{9, 8, 5, 5, {{6, 9, 123}}, {{6, 1}}};
  apply_all(s, {named("ORDERS", 9, {"s1", "s2", "s3"}), c, scaled, re::server_remove{"s9"},
                re::r1_streams{"s2", {{"R1A", {"a.>"}}, {"R1B", {"b"}}}, {"az:2"}}, re::r1_streams{"s3", {}, {"ssd"}}});
  const auto bytes = s.snapshot();
  js::meta_state fresh("s1");
  std::vector<js::meta_change> mine;
  ASSERT_TRUE(fresh.restore(bytes, mine));
  EXPECT_EQ(fresh.snapshot(), bytes);
  ASSERT_NE(fresh.find("$G", "ORDERS"), nullptr);
  EXPECT_EQ(fresh.find("$G", "ORDERS")->assignment, s.find("$G", "ORDERS")->assignment);
  EXPECT_EQ(fresh.find("$G", "ORDERS")->consumers.at("C1"), c);
  EXPECT_EQ(fresh.find("$G", "SCALED")->assignment.seed_from, "s2");
  EXPECT_EQ(fresh.removed(), std::set<std::string>{"s9"});
  EXPECT_EQ(fresh.r1_streams().size(), 2u);
  EXPECT_EQ(fresh.r1_streams().at("R1B").server, "s2");
  EXPECT_EQ(fresh.tags_of("s3"), std::vector<std::string>{"ssd"});
  EXPECT_EQ(fresh.tags_of("s2"), std::vector<std::string>{"az:2"});
  // A fresh table (a restart): every replica of this server's is created.
  EXPECT_EQ(described(mine), (std::vector<std::string>{"create_stream ORDERS", "create_stream SCALED",
                                                       "create_consumer ORDERS.C1"}));
  // Bad bytes change nothing.
  std::vector<js::meta_change> none;
  EXPECT_FALSE(fresh.restore(std::vector<std::uint8_t>{}, none));
  EXPECT_FALSE(fresh.restore(std::vector<std::uint8_t>{1, 200, 0, 0, 0, 1}, none));
  auto cut = bytes;
  cut.resize(cut.size() - 3);
  EXPECT_FALSE(fresh.restore(cut, none));
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(fresh.snapshot(), bytes);
}

// A server far behind (InstallSnapshot): what changed while it was away, for its replicas.
TEST(MetaState, RestoreOverAnOldTableSaysWhatChangedHere) {
  js::meta_state behind("s3"), leader("s1");
  const std::vector<re::meta_op> common = {
      named("KEEP", 9, {"s1", "s2", "s3"}),
      named("GONE", 11, {"s1", "s2", "s3"}),
      named("MOVED", 12, {"s1", "s2", "s3"}),
      named("RECONF", 13, {"s1", "s2", "s3"}),
      named("SCALE", 14, {"s1", "s2", "s3"}),
      re::consumer_assign{"$G", "KEEP", "STAYS", "{}", {"s1", "s2", "s3"}, 1, 30},
      re::consumer_assign{"$G", "KEEP", "DELETED", "{}", {"s1", "s2", "s3"}, 1, 31},
      re::consumer_assign{"$G", "KEEP", "PAUSED", "{}", {"s1", "s2", "s3"}, 1, 32},
      re::consumer_assign{"$G", "SCALE", "W", "{}", {"s1", "s2", "s3"}, 1, 33}};
  apply_all(behind, common);
  apply_all(leader, common);
  // While s3 is away: a stream deleted, one moved off s3, one reconfigured, one scaled
  // (new groups for it and its consumer), a new one on s3 and one elsewhere, a consumer
  // deleted, one paused, one created.
  re::stream_update moved;
  static_cast<re::stream_assign&>(moved) = named("MOVED", 12, {"s1", "s2", "s4"});
  re::stream_update reconf;
  static_cast<re::stream_assign&>(reconf) = named("RECONF", 13, {"s1", "s2", "s3"});
  reconf.config_json = R"({"max_msgs":5})";
  re::stream_update scale;
  static_cast<re::stream_assign&>(scale) = named("SCALE", 40, {"s1", "s3"});
  scale.seed_from = "s1";
  scale.consumers = {re::consumer_assign{"$G", "SCALE", "W", "{}", {"s1", "s3"}, 1, 41}};
  apply_all(leader, {re::stream_remove{"$G", "GONE"}, moved, reconf, scale, named("NEW", 50, {"s2", "s3", "s4"}),
                     named("ELSEWHERE", 51, {"s1", "s2", "s4"}), re::consumer_remove{"$G", "KEEP", "DELETED"},
                     re::consumer_update{"$G", "KEEP", "PAUSED", R"({"pause_until":"x"})"},
                     re::consumer_assign{"$G", "KEEP", "ADDED", "{}", {"s1", "s2", "s3"}, 1, 52}});
  std::vector<js::meta_change> mine;
  ASSERT_TRUE(behind.restore(leader.snapshot(), mine));
  EXPECT_EQ(described(mine), (std::vector<std::string>{"remove_stream GONE", "remove_stream MOVED",
                                                       "create_stream NEW", "update_stream RECONF",
                                                       "update_stream SCALE", "remove_consumer KEEP.DELETED",
                                                       "remove_consumer SCALE.W", "create_consumer KEEP.ADDED",
                                                       "update_consumer KEEP.PAUSED", "create_consumer SCALE.W"}));
  EXPECT_EQ(behind.snapshot(), leader.snapshot());
  // The update carries the new assignment; the scaled consumer its new group.
  EXPECT_EQ(mine[3].stream.config_json, R"({"max_msgs":5})");
  EXPECT_EQ(mine[4].stream.group_id, 40u);
  EXPECT_EQ(mine.back().consumer.group_id, 41u);
  // Restoring the same table again changes nothing.
  mine.clear();
  ASSERT_TRUE(behind.restore(leader.snapshot(), mine));
  EXPECT_TRUE(mine.empty());
}
