#pragma once
// What a replicated state machine (a stream or consumer replica in src/js) needs from its
// Raft group: propose an entry, and know whether it leads and in which term. Committed
// entries reach the machine from whoever drives the group (actions::applies), in index
// order, so the machine itself never touches raft and is unit-tested over a fake log.
#include <cstdint>
#include <span>

#include "src/repl/raft_group.h"

namespace repl {

class replicated_log {
 public:
  virtual ~replicated_log() = default;
  virtual propose_result propose(std::span<const std::uint8_t> data) = 0;
  // The same without waiting, where the group runs on another thread: `queued` with a ticket
  // (its index arrives later: the machine's on_proposed) or `busy` (nothing done, try again
  // later). A log on the caller's thread answers at once, as propose().
  virtual propose_result propose_async(std::span<const std::uint8_t> data) { return propose(data); }
  virtual bool is_leader() const = 0;
  virtual std::uint64_t term() const = 0;
};

// replicated_log over one raft_group. raft_group's calls take the time and an actions sink;
// the driver binds them for the duration of one event (a propose outside an event fails).
class group_log final : public replicated_log {
 public:
  explicit group_log(raft_group& g) : _group(g) {}
  void bind(std::uint64_t now_ms, actions* out) {
    _now = now_ms;
    _out = out;
  }
  propose_result propose(std::span<const std::uint8_t> data) override {
    if (_out == nullptr) return {propose_status::failed, 0};
    return _group.propose(_now, data, *_out);
  }
  bool is_leader() const override { return _group.current_role() == role::leader; }
  std::uint64_t term() const override { return _group.term(); }

 private:
  raft_group& _group;
  std::uint64_t _now = 0;
  actions* _out = nullptr;
};

}  // namespace repl
