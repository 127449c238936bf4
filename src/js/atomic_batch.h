#pragma once
// Atomic batch bookkeeping: messages carrying Nats-Batch-Id are staged per
// batch until the one with Nats-Batch-Commit, then handed back together for the stream to
// validate and store as one unit. Pure: the stream supplies `now`; nothing here touches the
// store or the network.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/js/api_errors.h"

namespace js {

struct batch_msg {
  std::string subject;
  std::string headers;
  std::string payload;
  // Its only JetStream headers are the batch's own (Id, Sequence, Commit): the commit's
  // checks have nothing to read in it, so its headers need not be parsed again.
  bool plain = false;
};

struct batch_limits {
  std::size_t max_inflight = 50;  // batches open at once per stream
  std::uint64_t max_msgs = 1000;  // messages per batch
  std::int64_t timeout_ns = 10'000'000'000;  // inactivity before a batch is abandoned
};

class atomic_batch_table {
 public:
  explicit atomic_batch_table(batch_limits l = {}) : _limits(l) {}

  struct outcome {
    enum kind { staged, commit, failed } what = staged;
    std::optional<api_error> error;   // failed
    std::vector<batch_msg> msgs;      // commit: every message to store, in order
    bool eob = false;                 // commit came as an end-of-batch marker (not stored)
    std::string abandoned;            // failed an open batch: advisory reason, else empty
  };
  // One message of batch `id` with its Nats-Batch-Sequence and Nats-Batch-Commit values.
  outcome add(std::string_view id, std::optional<std::string_view> seq, std::optional<std::string_view> commit,
              batch_msg m, std::int64_t now);
  // Batches idle past the timeout are dropped; returns their ids.
  std::vector<std::string> expire(std::int64_t now);
  // When the first open batch times out (INT64_MAX: none open), so an idle stream wakes for it.
  std::int64_t next_deadline() const;
  // Everything open is dropped (allow_atomic turned off, stream deleted).
  void clear() {
    _open.clear();
    _last_id = nullptr;
    _last = nullptr;
  }
  // One batch dropped (a message needing a higher API level); true if it was open.
  bool drop(std::string_view id) {
    _last_id = nullptr;
    _last = nullptr;
    return _open.erase(std::string(id)) > 0;
  }
  bool empty() const { return _open.empty(); }
  const batch_limits& limits() const { return _limits; }

 private:
  struct open_batch {
    std::vector<batch_msg> msgs;
    std::uint64_t next_seq = 1;
    std::int64_t last_activity = 0;
  };
  batch_limits _limits;
  std::unordered_map<std::string, open_batch> _open;
  // The batch the last message was for (the next one usually is too): no hash lookup then.
  // Element pointers survive rehashing; erasing resets it.
  const std::string* _last_id = nullptr;
  open_batch* _last = nullptr;
};

}  // namespace js
