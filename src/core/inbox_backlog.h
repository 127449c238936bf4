#pragma once
// What a shard holds back of one peer's ring (dispatcher::drain_inbox). Subscription changes
// are applied in slices of at most sub_slice::kSliceNs per loop turn: a stream of 74,000
// subjects on JetStream's own thread arrives as 74,000 sub_adds, and applied as they came off
// the ring they held the client shard's loop, and the PONGs gated behind them, for 50-270 ms.
// What does not fit a turn waits here, and a delivery from the same peer waits behind it, so
// a reply saying a stream exists reaches its client only once that stream's subscriptions
// are in this shard's sublist (the client's next publish finds them). A PONG waits only for
// the deliveries to its own connection held here, not for other connections' subscription
// changes or the messages to other connections queued behind them.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <unordered_map>

#include "src/base/clock.h"
#include "src/core/shard_msg.h"

namespace core {

// One loop turn's budget for applying subscription changes, shared by every peer's ring.
class sub_slice {
 public:
  static constexpr base::nanos kSliceNs = 500 * base::kMicro;
  static constexpr std::size_t kCheckEvery = 32;  // changes applied between clock reads

  void start(base::nanos now) {
    _until = now + kSliceNs;
    _applied = 0;
    _checked_at = 0;
    _over = false;
  }
  // Whether another change fits this turn (at least kCheckEvery always do).
  bool fits(const base::clock& clk) {
    if (!_over && _applied >= kCheckEvery && _applied % kCheckEvery == 0 && _applied != _checked_at) {
      _checked_at = _applied;
      _over = clk.monotonic_ns() >= _until;
    }
    return !_over;
  }
  void spent() { ++_applied; }
  std::size_t applied() const { return _applied; }

 private:
  base::nanos _until = 0;
  std::size_t _applied = 0;
  std::size_t _checked_at = 0;
  bool _over = false;
};

class inbox_backlog {
 public:
  using kind = shard_msg::kind;
  // With deliveries held, the ring is left alone beyond this many (its back-pressure holds);
  // subscription changes alone may queue beyond it (they sat in the peer's overflow before).
  static constexpr std::size_t kMaxWithDeliveries = 4096;

  static bool is_sub_change(kind k) { return k == kind::sub_add || k == kind::sub_del || k == kind::conn_gone; }

  // Whether a message just taken off the ring waits here instead of being applied now:
  // anything behind what already waits, or a subscription change past the turn's budget.
  // Accepted sockets and acks of our own broadcasts have no order with the rest.
  bool must_wait(kind k, bool budget_left) const {
    if (k == kind::new_conn || k == kind::sub_ack) return false;
    if (!_q.empty()) return true;
    return is_sub_change(k) && !budget_left;
  }
  // `ring_pos`: the message's position in the ring (consumed() before it was taken).
  void push(shard_msg&& m, std::uint64_t ring_pos) {
    if (m.k == kind::deliver) {
      _deliveries.push_back(ring_pos);
      for (const auto& t : m.targets) {
        auto& at = _to_conn[t.conn_id];
        if (at.empty() || at.back() != ring_pos) at.push_back(ring_pos);  // one entry per connection
      }
    }
    _q.push_back(std::move(m));
  }
  bool empty() const { return _q.empty(); }
  std::size_t size() const { return _q.size(); }
  kind front_kind() const { return _q.front().k; }
  shard_msg pop() {
    shard_msg m = std::move(_q.front());
    _q.pop_front();
    if (m.k == kind::deliver) {
      const std::uint64_t pos = _deliveries.front();
      _deliveries.pop_front();
      for (const auto& t : m.targets) {
        auto it = _to_conn.find(t.conn_id);
        if (it == _to_conn.end() || it->second.front() != pos) continue;  // (a connection listed twice)
        it->second.pop_front();
        if (it->second.empty()) _to_conn.erase(it);
      }
    }
    return m;
  }
  // Whether more may be taken off the ring now.
  bool accepting() const { return _deliveries.empty() || _q.size() < kMaxWithDeliveries; }
  bool holds_deliveries() const { return !_deliveries.empty(); }
  // Ring position of the oldest delivery held here (max when none).
  std::uint64_t first_delivery() const {
    return _deliveries.empty() ? std::numeric_limits<std::uint64_t>::max() : _deliveries.front();
  }
  // The same among the deliveries to connection `conn`: a PONG to it gated at ring position
  // p waits while this is below p. Only its own messages must be queued ahead of its PONG;
  // waiting for every delivery held here made a PING wait until the shard had applied every
  // subscription change queued ahead of the reply to another client's big STREAM.UPDATE or
  // DELETE (a 50,000-subject swap from JetStream's own thread: 100,000 changes).
  bool holds_deliveries_to(std::uint64_t conn) const { return _to_conn.count(conn) != 0; }
  std::uint64_t first_delivery_to(std::uint64_t conn) const {
    const auto it = _to_conn.find(conn);
    return it == _to_conn.end() ? std::numeric_limits<std::uint64_t>::max() : it->second.front();
  }

 private:
  std::deque<shard_msg> _q;
  std::deque<std::uint64_t> _deliveries;  // ring positions of the deliveries in _q, in order
  // The same per target connection (never empty: erased with its last delivery).
  std::unordered_map<std::uint64_t, std::deque<std::uint64_t>> _to_conn;
};

}  // namespace core
