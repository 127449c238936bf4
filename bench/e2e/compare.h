// `peregrine-bench compare a.json b.json ...`: per-percentile and throughput table of saved
// reports with ratios to the first, and optional overlaid SVG plots.
#pragma once

#include <string>
#include <vector>

namespace peregrine::bench {

struct compare_options {
  std::vector<std::string> files;
  std::string svg;       // percentile spectra overlaid (corrected latency)
  std::string time_svg;  // latency over time, every run
  bool linear_y = false;  // spectrum latency axis linear from 0 instead of log
};

// Prints the table to stdout; returns 0, or 2 with a message on stderr for unreadable input.
int run_compare(const compare_options& opts);

}  // namespace peregrine::bench
