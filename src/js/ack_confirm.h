#pragma once
// Ack sync replies held until the consumer state that includes the ack is durable (a
// confirmation is a promise, like a PubAck). Snapshots of a consumer's state are numbered
// by generation and written in order; a reply waits for the first generation handed to the
// writer after its ack was applied, so one snapshot confirms every ack of a burst (group
// commit). Pure bookkeeping: the consumer agent reports hand-overs and completions.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace js {

class held_ack_replies {
 public:
  // An ack with reply subject `reply` was applied; `next_gen` is the generation the next
  // snapshot handed to the writer will get.
  void hold(std::string reply, std::uint64_t next_gen);
  bool empty() const { return _q.empty(); }
  std::size_t size() const { return _q.size(); }
  // Some reply waits for a snapshot not handed over yet (last handed: `handed_gen`).
  bool needs_snapshot(std::uint64_t handed_gen) const { return !_q.empty() && _q.back().gen > handed_gen; }
  // Every snapshot up to `gen` is written: the replies it covers, oldest first.
  std::vector<std::string> written(std::uint64_t gen);
  // The last write failed: every held reply waits for the next snapshot (`next_gen`).
  void failed(std::uint64_t next_gen);
  // Everything, regardless of generation (the state was written synchronously, or the
  // consumer is gone).
  std::vector<std::string> take_all();

 private:
  struct held {
    std::uint64_t gen;
    std::string reply;
  };
  std::deque<held> _q;  // gens never decrease front to back
};

}  // namespace js
