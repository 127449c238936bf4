#pragma once
// The server: identity, INFO, shards (threads) and their transports, start and stop.
#include <memory>
#include <thread>
#include <vector>

#include "src/base/result.h"
#include "src/core/dispatcher.h"
#include "src/core/monitor.h"
#include "src/core/route_manager.h"
#include "src/core/server_shared.h"
#include "src/core/transport_factory.h"

namespace core {

class server {
 public:
  // `transports` makes the shards' transports (src/main.cc picks them from the options).
  server(server_options opts, std::unique_ptr<transport_factory> transports);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Adds a service (JetStream) that runs on shard 0 (or, with --js_threads N, on owner thread
  // `owner` % N; by default the k-th service added on owner k % N) in `account` (empty: the
  // global account; an account not configured is an error at start); call before start().
  void add_service(std::unique_ptr<service> s, std::string account = {}, std::size_t owner = SIZE_MAX) {
    if (owner == SIZE_MAX) owner = _pending_services.size();
    _pending_services.push_back({std::move(s), std::move(account), owner});
  }
  // The account whose JetStream takes the cluster operator's requests from the system account
  // (sys_js_relay.h; default the global account); call before start().
  void set_operator_js_account(std::string account) { _operator_js_account = std::move(account); }
  // The replication thread (src/repl); call before start(). Its connections arrive on the
  // cluster port.
  void set_replication(cluster_replication* r) { _shared.replication = r; }
  // Creates shards and transports, binds the listener and starts the shard threads.
  base::status start();
  // Stops accepting, stops every shard and joins the threads. Idempotent.
  void shutdown();
  // Applies reloaded options (those plan_reload lets change); shards pick them up within a tick.
  void reload(const server_options& applied);
  // Stops accepting, sends INFO ldm and closes the connections over lame_duck_duration.
  // Idempotent. The caller exits once lame_duck_duration passed or no connection is left.
  void enter_lame_duck();
  const server_shared& shared() const { return _shared; }
  server_shared& shared() { return _shared; }
  std::vector<dispatcher*> shards() const {
    std::vector<dispatcher*> v;
    for (const auto& s : _shards) v.push_back(s.get());
    return v;
  }
  std::int64_t start_wall_ns() const { return _start_wall_ns; }
  std::int64_t config_load_wall_ns() const { return _config_load_wall_ns ? _config_load_wall_ns : _start_wall_ns; }
  std::string transport_name() const { return _transports->name(); }
  // The HTTP monitor's bound port (0: monitoring off). Started by start() when http_port != 0.
  int monitor_port() const { return _monitor ? _monitor->port() : 0; }
  // The cluster listener's bound port (0: no cluster).
  int cluster_port() const { return _routes ? _routes->bound_port() : 0; }
  // Why start() failed, when it is not the client listener (main reports that one).
  const std::string& start_error() const { return _start_error; }

 private:
  nlohmann::ordered_json build_info(const server_options& o, int bound_port) const;
  void publish_live(const server_options& o);
  base::status start_cluster();
  std::unique_ptr<route_manager> _routes;
  std::shared_ptr<dispatcher*> _route_shard0;
  std::unique_ptr<monitor> _monitor;
  std::string _start_error;
  std::int64_t _start_wall_ns = 0;
  std::int64_t _config_load_wall_ns = 0;
  server_shared _shared;
  std::vector<std::unique_ptr<dispatcher>> _shards;
  std::vector<std::thread> _threads;
  std::unique_ptr<transport_factory> _transports;
  struct pending_service {
    std::unique_ptr<service> svc;
    std::string account;
    std::size_t owner = 0;
  };
  std::vector<pending_service> _pending_services;
  std::string _operator_js_account = "$G";
  bool _started = false;
};

// How many shards the default (`--shards 0`) gives on this machine.
int default_shard_count();
// A server id in nats-server's style: 'N' followed by 55 base32 characters.
std::string make_server_id();

}  // namespace core
