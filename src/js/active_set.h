#pragma once
// An owner thread's active set (pure, no threads): which of its groups to poll this turn.
// A group is queued when a message reaches it (wake); after its poll it stays queued while
// busy, else its next timer goes into a deadline heap and the group is left alone until a
// message or that deadline. Stale heap entries (the group was rescheduled or removed) are
// skipped by serial and deadline, so rescheduling never searches the heap.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace js {

// The owner's bookkeeping inside each member.
struct active_member {
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  bool queued = false;
  bool removed = false;  // left the set; the object may live a little longer
  std::int64_t scheduled = kNever;  // the deadline of its live heap entry
  std::uint64_t serial = 0;
};

template <typename T>  // T derives from active_member
class active_set {
 public:
  void add(T& m) {
    m.serial = ++_next_serial;
    _members[m.serial] = &m;
    wake(m);
  }
  void remove(T& m) {
    _members.erase(m.serial);
    m.removed = true;
    if (m.queued) _active.erase(std::find(_active.begin(), _active.end(), &m));
    m.queued = false;
  }
  void wake(T& m) {
    if (m.queued || m.removed) return;
    m.queued = true;
    _active.push_back(&m);
  }
  // The members to poll now: those woken, and those whose deadline came. The caller polls
  // each (skipping any removed meanwhile) and then calls reschedule.
  std::vector<T*>& take_due(std::int64_t now) {
    while (!_deadlines.empty() && _deadlines.top().first <= now) {
      const auto [when, serial] = _deadlines.top();
      _deadlines.pop();
      auto it = _members.find(serial);
      if (it == _members.end() || it->second->scheduled != when) continue;  // stale
      it->second->scheduled = active_member::kNever;                       // out of the heap now
      wake(*it->second);
    }
    _polling.clear();
    _polling.swap(_active);
    for (T* m : _polling) m->queued = false;
    return _polling;
  }
  // After a poll: busy members are polled again next turn, the others at `next`.
  void reschedule(T& m, bool busy, std::int64_t next) {
    if (m.removed) return;
    if (busy) return wake(m);
    if (next == m.scheduled) return;  // that entry is still in the heap
    m.scheduled = next;
    if (next != active_member::kNever) _deadlines.emplace(next, m.serial);
  }
  // After a poll, asking the member itself: busy(now) first, then next_wakeup(now). A state
  // write may finish on its writer thread between the two questions (busy while it is in
  // flight, due at once after); asked in this order the member is then busy or due, asked
  // the other way round it was neither, and an ack sync held for that write went unanswered.
  void reschedule(T& m, std::int64_t now) {
    const bool busy = m.busy(now);
    reschedule(m, busy, m.next_wakeup(now));
  }
  bool any_queued() const { return !_active.empty(); }
  // The earliest deadline (maybe a stale one: it only ends an idle block early).
  std::int64_t next_deadline() const { return _deadlines.empty() ? active_member::kNever : _deadlines.top().first; }

 private:
  using deadline = std::pair<std::int64_t, std::uint64_t>;  // (when, serial), earliest first
  std::priority_queue<deadline, std::vector<deadline>, std::greater<>> _deadlines;
  std::unordered_map<std::uint64_t, T*> _members;
  std::vector<T*> _active, _polling;
  std::uint64_t _next_serial = 0;
};

}  // namespace js
