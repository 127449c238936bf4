#pragma once
// Atomic batches across a crash: a batch is appended in one go and its last
// stored message carries Nats-Batch-Commit, so the commit marker is the store's own record
// of that message. A crash in the middle of the append leaves, at the very tail of the
// recovered log, messages of one batch without that marker: a torn commit, dropped whole.
#include <cstdint>
#include <string>
#include <vector>

#include "storage/store.h"

namespace js {

struct torn_batch {
  std::string id;                    // empty = the tail is not a torn batch
  std::vector<std::uint64_t> seqs;   // its messages left in the store, newest first
};

// Reads the store's tail; changes nothing.
torn_batch find_torn_batch(storage::stream_store& s);

// A roll-up of the tail: the message at `seq` carries Nats-Rollup `value` on `subject`.
struct tail_rollup {
  std::uint64_t seq = 0;
  std::string value, subject;
};
// The roll-ups whose removals a crash may have cut short: the last message's, or every one of
// the last batch's when the tail is a committed atomic batch (its roll-ups run after its
// commit is appended). Reads the store; changes nothing.
std::vector<tail_rollup> tail_rollups(storage::stream_store& s);

}  // namespace js
