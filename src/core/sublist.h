#pragma once
// Subscription index: a trie over subject tokens with '*' and '>' nodes and a bounded
// match cache. One instance per shard, used only by that shard's thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/result.h"

namespace core {

class internal_handler;

// Owned by the caller; the sublist stores pointers. `subject` and `queue` must not change
// while inserted.
struct subscription {
  std::string subject;
  std::string queue;            // empty: plain subscription
  std::string sid;              // client's subscription id
  std::uint32_t shard = 0;      // shard that owns the connection
  std::uint64_t conn_id = 0;    // connection id (unique per server)
  std::uint32_t account = 0;    // the account whose sublist holds it (0: $G)
  void* conn = nullptr;         // the connection object, meaningful only on its shard
  std::uint64_t max_msgs = 0;   // 0: unlimited (UNSUB with max)
  std::uint64_t delivered = 0;  // messages delivered so far
  internal_handler* handler = nullptr;  // set for server-internal subscriptions (JetStream)
  bool via_route = false;       // interest of another server, held by a route connection
  std::uint32_t weight = 1;     // a route's queue interest: members behind it (RS+ weight)
  bool announce = false;        // an internal subscription the cluster sees (RS+): replicated JetStream
};

struct match_result {
  std::vector<subscription*> plain;
  std::vector<std::vector<subscription*>> queues;  // one entry per matching queue group
  bool empty() const { return plain.empty() && queues.empty(); }
};

class sublist {
 public:
  explicit sublist(std::size_t cache_max = 4096);
  ~sublist();
  sublist(const sublist&) = delete;
  sublist& operator=(const sublist&) = delete;

  // errc::invalid_argument when the subject is not a valid subscription subject.
  base::status insert(subscription* s);
  // False when `s` was not inserted.
  bool remove(subscription* s);
  // Every subscription whose subject matches the literal `subject`. The reference stays
  // valid until the next insert/remove/match call on this sublist.
  const match_result& match(std::string_view subject);
  // True when at least one subscription matches (cheaper than match for no-responders).
  bool has_match(std::string_view subject);
  std::size_t count() const noexcept;
  std::size_t cache_size() const noexcept;
  // Trie nodes currently allocated (tests use it to check that remove prunes).
  std::size_t node_count() const noexcept;
  // Cached subjects compared with changed wildcard filters so far (tests bound the cost).
  std::uint64_t invalidation_checks() const noexcept;
  // Called after every successful insert and remove (the system account's worker learns of
  // new listeners this way, sys_bell.h).
  void on_change(std::function<void()> fn) { _on_change = std::move(fn); }

 private:
  struct impl;
  std::unique_ptr<impl> _impl;
  std::function<void()> _on_change;
};

}  // namespace core
