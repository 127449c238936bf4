// A STREAM.UPDATE of a replicated stream takes effect at an entry of the stream's log
// (repl_entries::config_change): every replica trims at the same point, and a replica whose
// meta group lags still has the new config when it leads.
#include "src/js/repl_entries.h"
#include "tests/unit/js/stream_replica_rig.h"

namespace {

using namespace stream_replica_rig;
namespace re = js::repl_entries;

std::string json_of(const js::stream_config& c) { return js::to_json(c, false).dump(); }

js::stream_config limited(std::int64_t max_msgs) {
  auto c = config();
  c.max_msgs = max_msgs;
  c.subjects = {"orders.>", "returns.*"};
  return c;
}

std::size_t config_entries(const fake_log& log) {
  std::size_t n = 0;
  for (const auto& e : log.history)
    if (auto op = re::decode_stream(e.value.data); op && std::holds_alternative<re::config_change>(*op)) ++n;
  return n;
}

TEST(StreamReplicaConfig, FollowerWithoutTheMetaEntryTakesTheConfigFromTheLog) {
  rig leader, follower;
  leader.replica.start_config(json_of(config()), 1);
  follower.replica.start_config(json_of(config()), 1);
  follower.log.leader = false;
  leader.become_ready();
  for (int i = 0; i < 10; ++i) leader.pub("orders." + std::to_string(i));
  leader.commit_all();
  // Only the leader's meta group has applied the update (entry 5) so far.
  leader.replica.want_config(json_of(limited(5)), 5);
  EXPECT_EQ(leader.replica.config().max_msgs, -1);  // not before its entry is applied
  leader.commit_all();
  EXPECT_EQ(leader.replica.config().max_msgs, 5);
  EXPECT_EQ(leader.replica.config_index(), 5u);
  EXPECT_EQ(leader.store.state().msgs, 5u);
  leader.pub("returns.1");
  leader.commit_all();
  std::vector<replica_reply> ignored;
  for (auto& e : leader.log.history) follower.replica.apply(e, ignored);
  EXPECT_EQ(follower.replica.config().max_msgs, 5);
  EXPECT_EQ(follower.replica.config_json(), json_of(limited(5)));
  EXPECT_EQ(follower.store.state(), leader.store.state());
  EXPECT_EQ(follower.store.first_seq(), 7u);
  // The follower's meta group catches up later: nothing changes, nothing is proposed.
  follower.replica.want_config(json_of(limited(5)), 5);
  EXPECT_EQ(follower.replica.config_index(), 5u);
  EXPECT_TRUE(follower.log.proposed.empty());
}

TEST(StreamReplicaConfig, NextLeaderProposesAChangeItsPredecessorDidNot) {
  rig r;
  r.replica.start_config(json_of(config()), 1);
  r.log.leader = false;
  r.replica.on_role(kNow);
  r.replica.want_config(json_of(limited(3)), 4);  // the meta entry, applied while following
  EXPECT_TRUE(r.log.proposed.empty());
  EXPECT_EQ(r.replica.config().max_msgs, -1);
  r.log.leader = true;
  r.log.current_term = 2;
  r.become_ready();  // leader_start applied: the change follows it into the log
  ASSERT_EQ(config_entries(r.log), 1u);
  r.commit_all();
  EXPECT_EQ(r.replica.config().max_msgs, 3);
  EXPECT_EQ(r.replica.config_index(), 4u);
  r.replica.on_role(kNow);
  EXPECT_EQ(config_entries(r.log), 1u);  // proposed once
}

TEST(StreamReplicaConfig, OlderOrRepeatedChangeIsIgnored) {
  rig r(limited(5));
  r.replica.start_config(json_of(limited(5)), 7);
  r.become_ready();
  std::vector<replica_reply> out;
  repl::committed_entry e;
  e.index = r.replica.applied_index() + 1;
  e.value.term = 1;
  e.value.data = re::encode(re::stream_op{re::config_change{6, json_of(limited(2))}});
  r.replica.apply(e, out);
  EXPECT_FALSE(r.replica.failed());
  EXPECT_EQ(r.replica.config().max_msgs, 5);  // entry 6 is older than the config's 7
  EXPECT_EQ(r.replica.config_index(), 7u);
  EXPECT_EQ(r.replica.config_json(), json_of(limited(5)));
}

TEST(StreamReplicaConfig, UndecodableConfigStopsTheReplica) {
  rig r;
  r.become_ready();
  std::vector<replica_reply> out;
  repl::committed_entry e;
  e.index = r.replica.applied_index() + 1;
  e.value.term = 1;
  e.value.data = re::encode(re::stream_op{re::config_change{9, "{not json"}});
  r.replica.apply(e, out);
  EXPECT_TRUE(r.replica.failed());
}

}  // namespace
