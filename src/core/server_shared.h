#pragma once
// What every shard reads about the server: options, identity and the INFO template.
// Written once before the shards start; read-only afterwards (counters are atomic), except
// the live config, which a reload replaces as a whole (see live_config).
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/core/account.h"
#include "src/core/auth.h"
#include "src/core/options.h"
#include "src/core/sys_bell.h"

namespace core {

// What a config reload may change while running: limits, auth, INFO. Immutable once
// published; shards swap their pointer when `live_gen` moves (checked once per tick).
struct live_config {
  server_options opts;
  nlohmann::ordered_json info;  // INFO fields common to every client
  bool auth_required = false;
  std::shared_ptr<const auth_table> auth;  // never null once published
};

class route_manager;
class cluster_replication;

struct server_shared {
  server_options opts;  // as started; services read these
  std::string server_id;
  std::string server_name;
  nlohmann::ordered_json info;  // INFO at start (live->info after a reload)
  bool auth_required = false;
  std::uint32_t shard_count = 1;
  std::atomic<int> connections{0};
  std::atomic<std::uint64_t> total_connections{0};
  std::atomic<std::uint64_t> slow_consumers{0};
  std::atomic<std::uint64_t> in_msgs{0};
  std::atomic<std::uint64_t> sys_seq{0};  // ServerInfo "seq" of system account messages
  sys_bell sys_wake;                        // the system account's worker sleeps on it
  response_ledger service_replies;          // responses through service imports (account.h)
  // Lame duck: the monotonic time it started (0: not in lame duck mode).
  std::atomic<std::int64_t> lame_duck_since_ns{0};

  // Cluster: the route dialer/listener (null without a cluster), the INFO routes get, and the
  // client URLs of the whole cluster for INFO connect_urls: shard 0 rewrites them when routes
  // come and go and bumps cluster_gen; every shard then sends clients an async INFO.
  route_manager* routes = nullptr;
  nlohmann::ordered_json route_info;
  // Replication (src/repl, set by main before start): told about route peers; it takes its
  // connections on the cluster port, announced as "pg_repl_port" in the route INFO (other
  // servers ignore it).
  cluster_replication* replication = nullptr;
  std::vector<std::string> own_client_urls;
  std::atomic<std::uint64_t> cluster_gen{0};
  void set_cluster_urls(std::vector<std::string> urls) {
    std::lock_guard lk(_live_mu);
    _cluster_urls = std::move(urls);
    cluster_gen.fetch_add(1, std::memory_order_release);
  }
  std::vector<std::string> cluster_urls() const {
    std::lock_guard lk(_live_mu);
    return _cluster_urls;
  }

  // A reload lowered max_connections below the count: shards close this many (any of theirs).
  std::atomic<std::int64_t> conn_excess{0};
  std::atomic<std::uint64_t> live_gen{0};
  void publish_live(std::shared_ptr<const live_config> l) {
    std::lock_guard lk(_live_mu);
    _live = std::move(l);
    live_gen.fetch_add(1, std::memory_order_release);
    sys_wake.interest_changed();  // the accounts whose CONNS someone may listen to can change
  }
  std::shared_ptr<const live_config> live() const {
    std::lock_guard lk(_live_mu);
    return _live;
  }

  // The INFO line for one client (adds client_id and client_ip, as nats-server does).
  // `nonce` (nkey users exist) is for the client to sign in CONNECT.
  std::string info_line(std::uint64_t client_id, const std::string& client_ip) const {
    return info_line(info, client_id, client_ip);
  }
  // `cluster` (when not null) is added after client_ip: {"cluster": name, "connect_urls": [...]}
  static std::string info_line(const nlohmann::ordered_json& info, std::uint64_t client_id,
                               const std::string& client_ip, const std::string& nonce = {},
                               const nlohmann::ordered_json* cluster = nullptr);

 private:
  mutable std::mutex _live_mu;
  std::shared_ptr<const live_config> _live;
  std::vector<std::string> _cluster_urls;
};

}  // namespace core
