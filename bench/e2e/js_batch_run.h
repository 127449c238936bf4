// What the two batch modes (js_batch_mode.cc) share with their pipelined raw-socket
// publishers (js_batch_pipelined.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "bench/e2e/client.h"
#include "bench/e2e/modes.h"

namespace peregrine::bench {

using clock_type = std::chrono::steady_clock;

// The stream (with allow_atomic / allow_batched on), the batch shape and the run's bounds.
struct batch_run {
  js_session s;
  std::string subj;  // every message's subject
  std::string payload;
  int n = 2;  // messages per batch
  uint64_t warm_batches = 0, batches = 0;
  clock_type::time_point start, deadline;
  bool more(uint64_t b) const { return b < warm_batches + batches && clock_type::now() < deadline; }
};

// cfg.pipeline batches in flight from one raw socket, every message pre-encoded; samples:
// one per batch, its first byte written -> its (final) PubAck read.
result run_js_batch_pipelined(const config& cfg, progress& prog, batch_run& run);
result run_js_fast_batch_pipelined(const config& cfg, progress& prog, batch_run& run);

}  // namespace peregrine::bench
