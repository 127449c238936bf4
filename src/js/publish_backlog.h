#pragma once
// Back pressure for a replicated stream's publishes on its leader (pure: no threads or
// clocks). A publish goes to the replica at once while its in-flight window (proposed, not yet
// applied) has room and nothing waits; otherwise it waits here in arrival order, and goes as
// applies free the window. A publish the replica could not hand over (the proposal ring to
// the replication thread was full: submit_status::busy) waits first in line. Past the
// waiting limits a publish is refused: the caller answers it with 10008 (JetStream system
// temporarily unavailable), which clients retry; nothing is dropped without an answer.
//
// nats-server 2.9.10 has no such limit (its raft proposal queue grows without bound).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace js {

struct backlog_limits {
  std::size_t window = 8192;                 // proposals in flight
  std::uint64_t window_bytes = 64u << 20;    // their accounted bytes
  std::size_t max_waiting = 65536;
  std::uint64_t max_waiting_bytes = 64u << 20;
};

struct waiting_publish {
  std::string subject;
  std::string headers;
  std::string payload;
  std::string reply;
  // A fast-ingest message its batch table already took (the batch's id): only its store is
  // still to happen (a replicated stream's hand-over queue was full).
  std::string fast_batch;
  std::uint64_t bytes() const { return subject.size() + headers.size() + payload.size() + reply.size(); }
};

class publish_backlog {
 public:
  enum class verdict : std::uint8_t { submit, wait, refuse };

  explicit publish_backlog(backlog_limits l = {}) : _l(l) {}

  // A publish of `bytes` arrived; in_flight(_bytes): the replica's proposals not applied yet.
  verdict offer(std::size_t in_flight, std::uint64_t in_flight_bytes, std::uint64_t bytes) const;
  void push_back(waiting_publish p);   // after verdict::wait
  void push_front(waiting_publish p);  // the replica was busy: it goes first next time
  // The oldest waiting publish if the window has room for it now.
  std::optional<waiting_publish> next(std::size_t in_flight, std::uint64_t in_flight_bytes);
  // Leadership lost: everything waiting, for the caller to answer.
  std::deque<waiting_publish> take_all();

  bool empty() const { return _q.empty(); }
  std::size_t size() const { return _q.size(); }
  std::uint64_t bytes() const { return _bytes; }
  std::uint64_t refused() const { return _refused; }
  void count_refused() { ++_refused; }

 private:
  bool window_open(std::size_t in_flight, std::uint64_t in_flight_bytes) const {
    return in_flight < _l.window && in_flight_bytes < _l.window_bytes;
  }
  backlog_limits _l;
  std::deque<waiting_publish> _q;
  std::uint64_t _bytes = 0;
  std::uint64_t _refused = 0;
};

}  // namespace js
