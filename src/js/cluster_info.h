#pragma once
// The `cluster` object of StreamInfo and ConsumerInfo for a replicated asset (streams.md
// §11.4), as nats-server 2.9.10 writes its ClusterInfo/PeerInfo structs:
//   {"name":<cluster>,"leader":<server>,"replicas":[{"name","current","offline"?,"active",
//    "lag"?,"peer"}]}
// name and leader are left out when empty (no leader during an election), replicas when
// there are none; the leader itself is not among the replicas, which are sorted by name.
// A replica is current when it holds everything the leader committed and was heard from
// within the lost-quorum interval (10 s); lag is the entries it is behind the leader's
// commit; active is the time since it was last heard from, in nanoseconds.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/core/cluster_replication.h"

namespace js {

constexpr std::int64_t kLostQuorumIntervalNs = 10'000'000'000;

struct replica_peer_state {
  std::string name;          // server name
  std::string peer_id;       // the peer's id in the group as nats-server shows it (hash)
  bool offline = false;      // the server is known to be down
  std::uint64_t match_index = 0;       // last log index the leader knows it holds
  std::int64_t last_seen_ns = -1;      // unix ns of the last frame from it; -1 never
};

struct replica_group_state {
  std::string cluster;
  std::string leader;  // "" while there is none
  std::uint64_t commit_index = 0;
  std::vector<replica_peer_state> peers;  // every member, the leader included
};

nlohmann::ordered_json cluster_json(const replica_group_state& g, std::int64_t now_ns);
// The same from a group's progress as the replication thread reports it.
nlohmann::ordered_json cluster_json(const core::group_progress& p, const std::string& cluster, std::int64_t now_ns);

}  // namespace js
