// Placement in a cluster (cluster_streams.h): every server's server_tags reach the meta log
// with its R1 stream report (cluster_r1_streams.cc), so the meta leader places a replicated
// stream's peers by its `placement` {cluster, tags} as nats-server does (placement.h has the
// rule), and an R1 create whose placement the asked server does not meet is sent to one that
// does (nats-server's meta leader places every stream; Peregrine keeps an R1 stream on the
// server asked when that server may hold it). The candidates' states are the meta leader's
// (only it tracks every member), so such a create goes there first.
#include "src/js/cluster_constants.h"
#include "src/js/cluster_streams.h"

namespace js {

using cluster::kMaxHops;

std::vector<placement_candidate> cluster_streams::placement_candidates(const std::string& leave_out) const {
  const auto meta = _repl.meta();
  std::vector<placement_candidate> out;
  if (_self != leave_out) out.push_back({_self, meta.cluster, _host.options().server_tags, false, _meta.assets_on(_self)});
  for (const auto& r : meta.replicas)
    if (r.name != leave_out && !_meta.removed().count(r.name))
      out.push_back({r.name, meta.cluster, _meta.tags_of(r.name), r.offline, _meta.assets_on(r.name)});
  return out;
}

placement_request cluster_streams::placement_of(const stream_config& cfg, unsigned replicas) const {
  placement_request req;
  req.replicas = replicas;
  req.default_cluster = _repl.meta().cluster;
  if (cfg.placement.is_object()) {
    req.cluster = cfg.placement.value("cluster", std::string());
    if (auto t = cfg.placement.find("tags"); t != cfg.placement.end() && t->is_array())
      for (const auto& tag : *t)
        if (tag.is_string()) req.tags.push_back(tag.get<std::string>());
  }
  return req;
}

bool cluster_streams::place_r1_create(std::string_view name, const stream_config& cfg, const core::inbound_msg& m,
                                      int hops) {
  if (!cfg.placement.is_object() || cfg.placement.empty()) return false;
  const placement_request req = placement_of(cfg, 1);
  auto cands = placement_candidates();
  // This server first: it keeps the stream when it may hold it.
  if (!cands.empty()) {
    std::vector<placement_candidate> self_only{cands.front()};
    if (!place_replicas(req, self_only).error) return false;
  }
  // Only the meta leader knows every member's state: it places the stream.
  std::string leader;
  if (!meta_leader(leader)) {
    if (leader.empty() || hops >= kMaxHops)
      respond_error(m.reply, "stream_create_response", make_error(err::cluster_unavailable));
    else
      forward(leader, "STREAM.CREATE." + std::string(name), m, hops);
    return true;
  }
  const auto placed = place_replicas(req, cands);
  if (placed.error || placed.peers.empty() || hops >= kMaxHops) {
    respond_error(m.reply, "stream_create_response",
                  placed.error ? *placed.error : make_error(err::no_suitable_peers, "no suitable peers for placement"));
    return true;
  }
  forward(placed.peers.front(), "STREAM.CREATE." + std::string(name), m, hops);
  return true;
}

}  // namespace js
