#pragma once
// JetStream on several owner threads (--js_threads N): what the N `jetstream` instances
// share. Instance i runs on owner thread i and owns the stream groups placed on it; instance
// 0 is also the control plane (the hub): it alone subscribes $JS.API, keeps the placement
// table and answers account-wide requests, and forwards each request about a stream to its
// owner as a message (a copied request on the owner's closure queue); the owner answers.
// Cross-thread state is the atomics below or messages; the table has one writer (the hub).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/service.h"
#include "src/js/jetstream.h"
#include "src/js/stream_config.h"
#include "src/js/subject_registry.h"

namespace js {

class jetstream;
class consumer_thread;
class cluster_event_router;

// FNV-1a (64 bit) of the stream name: the placement hash. Fixed by definition (no seed, no
// library hash), so a stream lands on the same owner across restarts and versions as long
// as the owner count stays the same.
constexpr std::uint64_t placement_hash(std::string_view name) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The owner thread of stream `name` among `owners` (>= 1).
constexpr std::size_t owner_of(std::string_view name, std::size_t owners) {
  return owners <= 1 ? 0 : std::size_t(placement_hash(name) % owners);
}

// In an account other than $G the hash covers the account too ("<account>\0<stream>"), so
// accounts that each have an ORDERS spread over the owners; $G keeps the hash of the name
// alone, so existing deployments do not move.
constexpr std::uint64_t placement_hash(std::string_view account, std::string_view name) {
  if (account == "$G") return placement_hash(name);
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : account) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h *= 1099511628211ull;  // the 0 separator (xor with 0 changes nothing)
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
constexpr std::size_t owner_of(std::string_view account, std::string_view name, std::size_t owners) {
  return owners <= 1 ? 0 : std::size_t(placement_hash(account, name) % owners);
}

// What the hub subscribes under "$JS.API" (and a domain's prefix) with `owners` owner
// threads: everything with one; with several, disjoint patterns that leave out the pulls
// (CONSUMER.MSG.NEXT.<stream>.<consumer>) and DIRECT.>, which the owners serve themselves.
std::vector<std::string> hub_api_patterns(std::size_t owners);

// One stream in the hub's placement table: its owner and the config it last reported
// (for overlap checks, mirror rules, reservations, NAMES and DIRECT.GET without asking).
struct placed_stream {
  std::size_t owner = 0;
  stream_config cfg;
};
using placement_table = std::map<std::string, placed_stream, std::less<>>;

// One owner thread's slot. `host` and `recovered` are written by the owner in start()
// before `loaded` is set (release); the hub reads them after seeing it (acquire).
struct owner_slot {
  jetstream* js = nullptr;
  core::service_host* host = nullptr;
  std::vector<stream_config> recovered;  // streams this owner restored at start
  std::atomic<bool> loaded{false};
  std::atomic<std::int64_t> consumers{0};  // consumers on this owner
  std::atomic<std::uint64_t> api_errors{0};
};

// What every account's JetStream shares: the server-wide storage in use and reserved (the
// sum of max_bytes of the streams that set it), for the server's max_memory/max_file_store.
struct server_usage {
  std::atomic<std::int64_t> used[2] = {0, 0};      // memory, file
  std::atomic<std::int64_t> reserved[2] = {0, 0};  // kept by each account's hub with its table
};

// A stream's slot in those counters, and what it reserves of its storage type's limit.
inline int storage_index(storage_type t) { return t == storage_type::memory ? 0 : 1; }
inline std::int64_t reservation(const stream_config& c) { return c.max_bytes > 0 ? c.max_bytes : 0; }

struct owner_set {
  explicit owner_set(std::size_t n, account_limits acc = {}, std::shared_ptr<server_usage> srv = nullptr,
                     std::size_t js_accounts = 1)
      : limits(std::move(acc)), server(srv ? std::move(srv) : std::make_shared<server_usage>()),
        accounts(js_accounts) {
    for (std::size_t i = 0; i < n; ++i) slots.push_back(std::make_unique<owner_slot>());
  }
  std::size_t size() const { return slots.size(); }
  // Runs `fn` on owner `i`'s thread at its next turn (thread-safe).
  void post(std::size_t i, std::function<void()> fn) const { slots[i]->host->call(std::move(fn)); }

  std::vector<std::unique_ptr<owner_slot>> slots;
  // Written by the hub only, and never while an owner runs a forwarded create/update/delete
  // (those read it for the cross-stream checks; the hub holds later changes back meanwhile).
  placement_table table;
  // Every stream's subjects (kept with `table`, same rules), for the overlap check of a create
  // or update in time that follows its own subjects, not the number of streams.
  subject_registry subjects;
  // The account's storage use (memory, file), published by every group.
  std::atomic<std::int64_t> used_bytes[2] = {0, 0};
  account_limits limits;  // the account served and its limits
  std::shared_ptr<server_usage> server;
  std::size_t accounts = 1;  // accounts with JetStream on this server (/jsz)
  // In a cluster: the replication events' router every account's hub shares (all hubs run on
  // owner thread 0); null for a lone instance, whose cluster_streams makes its own.
  std::shared_ptr<cluster_event_router> cluster_router;
  // In a cluster, for the other owners' limit checks (they have no cluster_streams): the
  // account's streams elsewhere and their reservations per storage type, as the hub's
  // cluster_streams counts them; refreshed by the hub when the meta table changed.
  std::atomic<std::uint64_t> cluster_stream_count{0};
  std::atomic<std::int64_t> cluster_reserved[2] = {0, 0};
  // --consumer_threads: the account's consumer thread services (set before the server starts).
  std::vector<consumer_thread*> consumer_threads;
};

// The n instances (n >= 1), each to run on its own owner thread; instance 0 is the hub.
std::vector<std::unique_ptr<core::service>> make_jetstream_owners(std::size_t n);

}  // namespace js
