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

}  // namespace js
