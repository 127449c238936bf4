// The meta group's monitoring JSON, as nats-server 2.9.10 shows it. The expected peer hashes
// and layout were read from a 3-node nats-server 2.9.10 cluster (servers N0, N1, N2).
#include "src/core/cluster_replication.h"

#include <gtest/gtest.h>

namespace {

TEST(cluster_replication, peer_hashes_match_nats_server) {
  EXPECT_EQ(core::server_name_hash("N0"), "wjuCaEDI");
  EXPECT_EQ(core::server_name_hash("N1"), "xZ93l5JM");
  EXPECT_EQ(core::server_name_hash("N2"), "gX64jrmD");
}

TEST(cluster_replication, meta_cluster_json_in_nats_server_field_order) {
  core::meta_status m;
  m.running = true;
  m.cluster = "ref";
  m.leader = "N0";
  m.self_leader = true;
  m.cluster_size = 3;
  m.replicas = {{"N1", true, false, 722424794, 0}, {"N2", false, true, 5, 7}};
  EXPECT_EQ(core::meta_cluster_json(m).dump(),
            R"({"name":"ref","leader":"N0","peer":"wjuCaEDI","replicas":[)"
            R"({"name":"N1","current":true,"active":722424794,"peer":"xZ93l5JM"},)"
            R"({"name":"N2","current":false,"offline":true,"active":5,"lag":7,"peer":"gX64jrmD"}],)"
            R"("cluster_size":3})");
  m.self_leader = false;  // a follower shows no replicas
  EXPECT_EQ(core::meta_cluster_json(m).dump(),
            R"({"name":"ref","leader":"N0","peer":"wjuCaEDI","cluster_size":3})");
  m.leader.clear();  // no leader known: no leader, no peer
  EXPECT_EQ(core::meta_cluster_json(m).dump(), R"({"name":"ref","cluster_size":3})");
}

}  // namespace
