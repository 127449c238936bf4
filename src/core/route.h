#pragma once
// A route: a connection to another server of the cluster (see src/core/route_dispatch.cc).
// Its state lives on shard 0, which owns every route connection.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/core/auth_types.h"

namespace core {

// A route interest key, the RS+/RS- arguments without the weight: "account subject[ queue]".
inline std::string route_interest_key(std::string_view account, std::string_view subject, std::string_view queue) {
  std::string k(account);
  k += ' ';
  k += subject;
  if (!queue.empty()) {
    k += ' ';
    k += queue;
  }
  return k;
}
inline bool is_queue_interest_key(std::string_view key) { return std::count(key.begin(), key.end(), ' ') == 2; }

struct route_link {
  bool solicited = false;   // we dialed it
  bool implicit = false;    // learned by gossip, not configured
  std::string url;          // the URL dialed (solicited routes)
  bool registered = false;  // INFO seen, not a duplicate: counts as a route of the cluster
  bool awaiting_auth = false;  // accepted while cluster.authorization is set: CONNECT must come first
  // The peer took us: an accepted route at registration (its CONNECT came first), a dialed one
  // at the PONG to our first PING (sent behind our CONNECT, so the peer checked it). Only then
  // are its client URLs advertised: a dialer refused for its credentials never shows them.
  bool confirmed = false;
  const permissions* perms = nullptr;  // cluster.permissions, when they apply to this route
  std::string remote_id, remote_name, remote_cluster;
  std::string remote_route_url;           // "nats-route://host:port/", gossiped to other routes
  std::vector<std::string> connect_urls;  // the remote server's client URLs
  nlohmann::ordered_json remote_info;     // its INFO, forwarded (with "ip") when we accepted it
  std::uint64_t rid = 0;                  // routez rid
  base::nanos ping_sent_ns = 0;           // the first PING after registering: routez rtt
};

}  // namespace core
