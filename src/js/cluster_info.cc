#include "src/js/cluster_info.h"

#include <algorithm>

namespace js {

nlohmann::ordered_json cluster_json(const replica_group_state& g, std::int64_t now_ns) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!g.cluster.empty()) j["name"] = g.cluster;
  if (!g.leader.empty()) j["leader"] = g.leader;
  std::vector<const replica_peer_state*> others;
  for (const auto& p : g.peers)
    if (p.name != g.leader) others.push_back(&p);
  std::sort(others.begin(), others.end(),
            [](const replica_peer_state* a, const replica_peer_state* b) { return a->name < b->name; });
  if (others.empty()) return j;
  auto& replicas = j["replicas"] = nlohmann::ordered_json::array();
  for (const auto* p : others) {
    const bool seen = p->last_seen_ns >= 0;
    // A clock step back must not show a negative age: nats-server clamps it to 1 ns.
    const std::int64_t active = seen ? std::max<std::int64_t>(now_ns - p->last_seen_ns, 1) : 0;
    const std::uint64_t lag = g.commit_index > p->match_index ? g.commit_index - p->match_index : 0;
    nlohmann::ordered_json r;
    r["name"] = p->name;
    r["current"] = seen && !p->offline && lag == 0 && active <= kLostQuorumIntervalNs;
    if (p->offline) r["offline"] = true;
    r["active"] = active;
    if (lag > 0) r["lag"] = lag;
    r["peer"] = p->peer_id;
    replicas.push_back(std::move(r));
  }
  return j;
}

nlohmann::ordered_json cluster_json(const core::group_progress& p, const std::string& cluster, std::int64_t now_ns) {
  replica_group_state g;
  g.cluster = cluster;
  g.leader = p.leader;
  g.commit_index = p.commit;
  for (const auto& peer : p.peers) {
    replica_peer_state s;
    s.name = peer.name;
    s.peer_id = core::server_name_hash(peer.name);
    s.offline = peer.offline;
    s.match_index = peer.match;
    s.last_seen_ns = peer.since_rx_ms < 0 ? -1 : now_ns - peer.since_rx_ms * 1'000'000;
    g.peers.push_back(std::move(s));
  }
  return cluster_json(g, now_ns);
}

}  // namespace js
