#pragma once
// What the core sees of replication (src/repl's repl_host implements it; the core cannot
// include src/repl). Shard 0 reports route peers so the replication thread knows where each
// server's replication listener is (`pg_repl_port` in the route INFO); monitoring and the
// JetStream API read the meta group's state and ask it to step down. Every call is
// thread-safe and returns at once.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace core {

struct meta_peer_status {
  std::string name;
  bool current = false;
  bool offline = false;
  std::int64_t active_ns = 0;  // since a frame last came from it
  std::uint64_t lag = 0;
};

struct meta_status {
  bool running = false;  // this server is in a meta group
  std::string cluster;
  std::string leader;    // server name, empty when none is known
  bool self_leader = false;
  std::size_t cluster_size = 0;
  std::vector<meta_peer_status> replicas;  // the other members (filled on the leader)
};

class cluster_replication {
 public:
  virtual ~cluster_replication() = default;
  virtual void route_peer(const std::string& name, const std::string& host, int repl_port,
                          bool up) = 0;
  virtual meta_status meta() const = 0;
  // Hands meta leadership to another member (forwarded to the leader from a follower).
  // False when there is no meta group or no known leader.
  virtual bool meta_stepdown() = 0;
};

// nats-server's node id of a server ("peer"): the first 8 bytes of sha256(name), each as a
// base-62 digit (byte % 62), as its getHash does (checked against nats-server 2.9.10's /jsz).
std::string server_name_hash(const std::string& name);
// nats-server's MetaClusterInfo (/jsz "meta_cluster", /varz "jetstream"."meta").
nlohmann::ordered_json meta_cluster_json(const meta_status& m);

}  // namespace core
