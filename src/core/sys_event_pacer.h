#pragma once
// When the system account's worker has periodic work, with nats-server's pacing: STATSZ 1 s
// after start, the interval doubling up to 10 s, sent while someone listens; an account's
// CONNS on a change of its connection count and every 30 s while it has connections, while
// someone listens to it. Pure (times in, decisions out): the worker tells it what changed
// (a subscription in the system account, a client joining or leaving) and what it found, and
// sleeps until next_wake(), so an idle server with nobody listening never asks its shards.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "src/base/clock.h"

namespace core {

class sys_event_pacer {
 public:
  static constexpr base::nanos kNever = std::numeric_limits<base::nanos>::max();
  static constexpr base::nanos kFirstStatsz = base::kSecond;
  static constexpr base::nanos kStatszInterval = 10 * base::kSecond;
  static constexpr base::nanos kConnsHeartbeat = 30 * base::kSecond;

  explicit sys_event_pacer(base::nanos start) : _statsz_due(start + kFirstStatsz), _statsz_every(kFirstStatsz) {}

  // Who listens to an account's CONNS events: $SYS.ACCOUNT.<acc>.SERVER.CONNS (new) and
  // $SYS.SERVER.ACCOUNT.<acc>.CONNS (old; nats-server sends both).
  struct listener {
    std::string account;
    bool new_subject = false, old_subject = false;
  };

  // A subscription in the system account came or went: who listens must be asked again.
  void interest_changed() { _interest_known = false; }
  bool needs_interest() const { return !_interest_known; }
  // The answer: STATSZ heard, and each account's CONNS listeners.
  void set_interest(bool statsz, std::vector<listener> conns);
  // Client connections are worth watching (someone listens to CONNS, or nobody knows yet).
  bool wants_connections() const { return !_interest_known || !_listeners.empty(); }
  // A client connected, joined an account or left.
  void connections_changed() { _counts_dirty = true; }

  // True when a STATSZ goes out now (due and heard); moves the schedule on either way.
  bool statsz_due(base::nanos now);
  // True when the accounts' connection counts are needed (a change or a heartbeat due).
  bool conns_due(base::nanos now) const;
  // Given the counts, the CONNS events to send now (each listened account whose count
  // changed or whose heartbeat is due); remembers what was sent.
  std::vector<listener> conns_events(base::nanos now, const std::map<std::string, std::uint64_t>& counts);

  // When the worker must run next (kNever: only when something changes).
  base::nanos next_wake() const;

 private:
  struct sent {
    std::uint64_t conns = 0;
    base::nanos at = 0;
  };
  base::nanos heartbeat_due() const;  // the earliest CONNS heartbeat, kNever without one

  bool _interest_known = false;
  bool _statsz_heard = false;
  bool _counts_dirty = true;
  std::vector<listener> _listeners;  // accounts with at least one CONNS subject heard
  base::nanos _statsz_due, _statsz_every;
  std::map<std::string, sent> _sent;  // listened accounts only
};

}  // namespace core
