#pragma once
// A route: a connection to another server of the cluster (see src/core/route_dispatch.cc).
// Its state lives on shard 0, which owns every route connection.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/clock.h"

namespace core {

struct route_link {
  bool solicited = false;   // we dialed it
  bool implicit = false;    // learned by gossip, not configured
  std::string url;          // the URL dialed (solicited routes)
  bool registered = false;  // INFO seen, not a duplicate: counts as a route of the cluster
  std::string remote_id, remote_name, remote_cluster;
  std::string remote_route_url;           // "nats-route://host:port/", gossiped to other routes
  std::vector<std::string> connect_urls;  // the remote server's client URLs
  nlohmann::ordered_json remote_info;     // its INFO, forwarded (with "ip") when we accepted it
  std::uint64_t rid = 0;                  // routez rid
  base::nanos ping_sent_ns = 0;           // the first PING after registering: routez rtt
};

}  // namespace core
