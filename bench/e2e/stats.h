// Latency statistics for pg-bench: exact percentiles from all recorded samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace peregrine::bench {

struct summary {
  uint64_t samples = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
  double mean_us = 0;
};

// Sorts samples_ns in place and takes nearest-rank percentiles (no interpolation, no binning:
// benchmark runs are at most a few million samples, so a sorted vector is cheap and exact).
summary summarize(std::vector<int64_t>& samples_ns);

// Nearest-rank percentile of an already sorted vector; q in [0, 1].
int64_t percentile_sorted(const std::vector<int64_t>& sorted, double q);

}  // namespace peregrine::bench
