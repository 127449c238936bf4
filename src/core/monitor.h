#pragma once
// The HTTP monitoring server (nats-server's -m / http: /varz, /connz, /subsz, /jsz,
// /healthz, ...). libmicrohttpd serves on a thread of its own; every endpoint asks the shards
// for copies of what it reports (dispatcher::call_on_shard), so building a big /connz never
// holds a lock the client data path takes, and never stalls it.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct MHD_Daemon;

namespace core {

class server;

using http_query = std::map<std::string, std::string>;

struct http_reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class monitor {
 public:
  explicit monitor(server& srv) : _srv(srv) {}
  ~monitor();
  monitor(const monitor&) = delete;
  monitor& operator=(const monitor&) = delete;

  // Binds host:port (port -1: a free one) and starts serving; false with `error` set.
  bool start(const std::string& host, int port, const std::string& base_path, std::string& error);
  void stop();
  int port() const { return _port; }
  // Routes one request (path without the base path); public for the handler.
  http_reply handle(const std::string& path, const http_query& q);
  std::string base_path() const { return _base; }

 private:
  server& _srv;
  MHD_Daemon* _daemon = nullptr;
  int _port = 0;
  std::string _base;
  std::mutex _stats_mu;
  std::map<std::string, std::uint64_t> _req_stats;  // varz http_req_stats
};

// The endpoints (monitor_json.cc; connz and subsz in monitor_conns.cc, metrics in
// monitor_metrics.cc, routez in route_monitor.cc). Each collects snapshots from the shards.
http_reply monitor_varz(server& srv, const http_query& q, const std::map<std::string, std::uint64_t>& req_stats);
http_reply monitor_connz(server& srv, const http_query& q);
http_reply monitor_subsz(server& srv, const http_query& q);
http_reply monitor_jsz(server& srv, const http_query& q);
http_reply monitor_healthz(server& srv, const http_query& q);
http_reply monitor_routez(server& srv, const http_query& q);
http_reply monitor_leafz(server& srv, const http_query& q);
http_reply monitor_gatewayz(server& srv, const http_query& q);
http_reply monitor_accountz(server& srv, const http_query& q);
http_reply monitor_accstatz(server& srv, const http_query& q);
http_reply monitor_metrics(server& srv, const http_query& q);
std::string monitor_index_html();
// varz "cluster" (route_monitor.cc): {} without a cluster, as nats-server.
nlohmann::ordered_json cluster_varz(server& srv);
// Snapshots from every shard, taken on their threads (bounded wait); services' /metrics text.
struct shard_snapshot;
struct snapshot_request;
std::vector<shard_snapshot> collect_snapshots(server& srv, const snapshot_request& q);
std::string collect_service_metrics(server& srv);

}  // namespace core
