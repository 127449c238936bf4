#pragma once
// pg-repl's group events for every account's replicated streams. The replication thread has
// one event sink per server, while each account with JetStream has its own cluster_streams
// (its own sublists, `$JS.API` and streams), all on the hub thread: every account's owner 0
// runs on the same JetStream thread (core::server::add_service). The router owns the bounded
// SPSC ring; the first account to poll in a turn drains it for all:
// - a meta group event goes to every account: each keeps the whole cluster-wide table (the
//   meta log is one for all accounts, as nats-server's) and acts on its own streams only;
// - a stream's or consumer's group event goes to the account holding that group (one that
//   nobody holds any more is dropped).
// The primary account (the first with JetStream) also takes the meta group's snapshots.
#include <cstdint>
#include <string>
#include <vector>

#include "src/base/spsc_ring.h"
#include "src/core/cluster_replication.h"

namespace js {

class cluster_streams;

class cluster_event_router {
 public:
  explicit cluster_event_router(std::string primary_account) : _primary(std::move(primary_account)) {}
  cluster_event_router(const cluster_event_router&) = delete;
  cluster_event_router& operator=(const cluster_event_router&) = delete;

  const std::string& primary() const { return _primary; }
  // Every account's instance on this server (the primary reports their R1 streams together).
  const std::vector<cluster_streams*>& members() const { return _members; }
  // An account's instance joins (on the hub thread); the first sets pg-repl's event sink,
  // which wakes the hub thread through `wake_fd` once per pg-repl turn.
  void attach(cluster_streams& member, core::cluster_replication& repl, int wake_fd);
  void detach(cluster_streams& member);
  // Hands out what the ring holds (at most `budget` events); the work done.
  std::size_t drain(std::int64_t now_ns, std::size_t budget = 4096);

 private:
  void route(core::group_event& ev, std::int64_t now_ns);

  std::string _primary;
  base::spsc_ring<core::group_event> _events{16384};
  std::vector<cluster_streams*> _members;  // in attach order
  bool _sink_set = false;
};

}  // namespace js
