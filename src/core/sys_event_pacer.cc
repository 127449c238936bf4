#include "src/core/sys_event_pacer.h"

#include <algorithm>

namespace core {

void sys_event_pacer::set_interest(bool statsz, std::vector<listener> conns) {
  _interest_known = true;
  _statsz_heard = statsz;
  std::erase_if(conns, [](const listener& l) { return !l.new_subject && !l.old_subject; });
  // A new listener gets the count at once; one that left forgets what it was sent (and so no
  // heartbeat keeps the worker waking for it).
  std::erase_if(_sent, [&](const auto& kv) {
    return std::none_of(conns.begin(), conns.end(), [&](const listener& l) { return l.account == kv.first; });
  });
  for (const listener& l : conns)
    if (!_sent.contains(l.account)) _counts_dirty = true;
  _listeners = std::move(conns);
}

bool sys_event_pacer::statsz_due(base::nanos now) {
  if (now < _statsz_due) return false;
  // Past several due times (nobody listened, so the worker slept): one STATSZ now, and the
  // schedule goes on as if it had run.
  while (_statsz_due <= now) {
    _statsz_every = std::min(_statsz_every * 2, kStatszInterval);
    _statsz_due += _statsz_every;
  }
  return _statsz_heard;
}

base::nanos sys_event_pacer::heartbeat_due() const {
  base::nanos due = kNever;
  for (const auto& [name, s] : _sent)
    if (s.conns > 0) due = std::min(due, s.at + kConnsHeartbeat);
  return due;
}

bool sys_event_pacer::conns_due(base::nanos now) const {
  if (_listeners.empty()) return false;
  return _counts_dirty || now >= heartbeat_due();
}

std::vector<sys_event_pacer::listener> sys_event_pacer::conns_events(base::nanos now,
                                                                     const std::map<std::string, std::uint64_t>& counts) {
  _counts_dirty = false;
  std::vector<listener> out;
  for (const listener& l : _listeners) {
    const auto c = counts.find(l.account);
    const std::uint64_t conns = c == counts.end() ? 0 : c->second;
    const auto s = _sent.find(l.account);
    const bool changed = s == _sent.end() ? conns > 0 : s->second.conns != conns;
    const bool beat = s != _sent.end() && conns > 0 && now >= s->second.at + kConnsHeartbeat;
    if (!changed && !beat) continue;
    _sent[l.account] = sent{conns, now};
    out.push_back(l);
  }
  return out;
}

base::nanos sys_event_pacer::next_wake() const {
  if (!_interest_known) return 0;
  base::nanos wake = _statsz_heard ? _statsz_due : kNever;
  if (!_listeners.empty()) wake = std::min(wake, _counts_dirty ? 0 : heartbeat_due());
  return wake;
}

}  // namespace core
