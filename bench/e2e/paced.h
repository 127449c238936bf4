// The paced driver behind every latency mode (see paced_modes.cc): a fixed schedule of
// `cfg.rate` msgs/s per publisher (or closed loop), one message in flight per publisher.
#pragma once

#include <functional>
#include <string>

#include "bench/e2e/modes.h"

namespace peregrine::bench {

// One round trip for publisher k (0 <= k < publishers); returns an error text, empty on success.
using round_trip = std::function<std::string(int k)>;

result run_paced(const config& cfg, progress& prog, int publishers, const round_trip& one);

}  // namespace peregrine::bench
