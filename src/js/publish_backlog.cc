#include "src/js/publish_backlog.h"

#include <utility>

namespace js {

publish_backlog::verdict publish_backlog::offer(std::size_t in_flight, std::uint64_t in_flight_bytes,
                                                std::uint64_t bytes) const {
  if (_q.empty() && window_open(in_flight, in_flight_bytes)) return verdict::submit;
  // One publish always fits an empty queue, whatever its size (max_payload bounds it).
  if (!_q.empty() && (_q.size() >= _l.max_waiting || _bytes + bytes > _l.max_waiting_bytes))
    return verdict::refuse;
  return verdict::wait;
}

void publish_backlog::push_back(waiting_publish p) {
  _bytes += p.bytes();
  _q.push_back(std::move(p));
}

void publish_backlog::push_front(waiting_publish p) {
  _bytes += p.bytes();
  _q.push_front(std::move(p));
}

std::optional<waiting_publish> publish_backlog::next(std::size_t in_flight, std::uint64_t in_flight_bytes) {
  if (_q.empty() || !window_open(in_flight, in_flight_bytes)) return std::nullopt;
  waiting_publish p = std::move(_q.front());
  _q.pop_front();
  _bytes -= p.bytes();
  return p;
}

std::deque<waiting_publish> publish_backlog::take_all() {
  _bytes = 0;
  return std::exchange(_q, {});
}

}  // namespace js
