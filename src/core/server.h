#pragma once
// The server: identity, INFO, shards (threads) and their transports, start and stop.
#include <memory>
#include <thread>
#include <vector>

#include "src/base/result.h"
#include "src/core/dispatcher.h"
#include "src/core/server_shared.h"

namespace core {

class server {
 public:
  explicit server(server_options opts);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Adds a service (JetStream) that runs on shard 0 (or its own thread with js_thread);
  // call before start().
  void add_service(std::unique_ptr<service> s) { _pending_services.push_back(std::move(s)); }
  // Creates shards and transports, binds the listener and starts the shard threads.
  base::status start();
  // Stops accepting, stops every shard and joins the threads. Idempotent.
  void shutdown();
  const server_shared& shared() const { return _shared; }
  std::string_view transport_name() const { return _transport_name; }

 private:
  std::unique_ptr<net::transport> make_transport();
  server_shared _shared;
  std::vector<std::unique_ptr<dispatcher>> _shards;
  std::vector<std::thread> _threads;
  std::string _transport_name;
  std::vector<std::unique_ptr<service>> _pending_services;
  bool _fallback_logged = false;
  bool _started = false;
};

// How many shards the default (`--shards 0`) gives on this machine.
int default_shard_count();
// A server id in nats-server's style: 'N' followed by 55 base32 characters.
std::string make_server_id();

}  // namespace core
