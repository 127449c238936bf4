#pragma once
// A consumer machine's advisory action as nats-server publishes it: subject, type and body
// (fields in nats-server's order). Shared by the standalone consumer_agent and the leader of
// a replicated consumer (cluster_consumers).
#include <string>

#include <nlohmann/json.hpp>

#include "src/js/consumer.h"

namespace js {

struct consumer_event {
  std::string subject;  // $JS.EVENT.ADVISORY.CONSUMER.<KIND>.<stream>.<consumer> (or METRIC)
  std::string type;     // short advisory type, or a full "io.nats..." one
  nlohmann::ordered_json body;
};

consumer_event consumer_advisory_event(const advisory& a, const std::string& account, const std::string& stream,
                                       const std::string& consumer);

}  // namespace js
