// The paced driver behind every latency mode (see paced_modes.cc): a fixed schedule of
// `cfg.rate` msgs/s per publisher (or closed loop), one message in flight per publisher.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "bench/e2e/modes.h"

namespace peregrine::bench {

// One round trip for publisher k (0 <= k < publishers); returns an error text, empty on success.
using round_trip = std::function<std::string(int k)>;

// Sleeps until t_ns (steady clock): coarse sleep while far away, then yields.
void wait_until(int64_t t_ns);

result run_paced(const config& cfg, progress& prog, int publishers, const round_trip& one);

}  // namespace peregrine::bench
