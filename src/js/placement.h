#pragma once
// Where a replicated stream's (or consumer's) R peers go, decided by the meta leader
// (issue 11). Pure: the candidates and their load come in, names go out.
//
// nats-server's rule: only online JetStream servers of the requested cluster (the leader's
// own when none is asked for) whose server_tags include every requested tag (case-
// insensitive); among those, the ones holding fewest replicated assets first. nats-server
// shuffles before a stable sort, so ties land on a random server; here ties go by name, so a
// placement replays exactly. Fewer suitable servers than replicas: 10005 "no suitable peers
// for placement" with the reasons that excluded servers.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/js/api_errors.h"

namespace js {

struct placement_candidate {
  std::string name;
  std::string cluster;
  std::vector<std::string> tags;
  bool offline = false;
  std::uint64_t assets = 0;  // replicated streams and consumers already placed on it
};

struct placement_request {
  unsigned replicas = 1;
  std::string cluster;            // "" = default_cluster
  std::string default_cluster;    // the meta leader's cluster
  std::vector<std::string> tags;  // every one required
  std::vector<std::string> exclude;
};

struct placement_result {
  std::vector<std::string> peers;  // replicas names when ok
  std::optional<api_error> error;
};

placement_result place_replicas(const placement_request& req,
                                const std::vector<placement_candidate>& candidates);

}  // namespace js
