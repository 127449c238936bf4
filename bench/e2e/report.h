// peregrine-bench output: the JSON document (summary keys first, then full histograms, time
// series, environment and command), the .hgrm percentile spectrum and the human table.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "bench/e2e/histogram.h"
#include "bench/e2e/modes.h"

namespace peregrine::bench {

// Percentiles every report shows, with their JSON key suffixes.
struct percentile_key {
  double q;
  const char* key;    // "p999_us"
  const char* label;  // "p99.9"
};
inline constexpr percentile_key kPercentiles[] = {
    {0.50, "p50_us", "p50"},          {0.90, "p90_us", "p90"},         {0.99, "p99_us", "p99"},
    {0.999, "p999_us", "p99.9"},      {0.9999, "p9999_us", "p99.99"}, {0.99999, "p99999_us", "p99.999"},
};

// {"count","min_us","mean_us",p50_us..p99999_us,"max_us"}.
nlohmann::ordered_json percentiles_json(const log_histogram& h);
// Full histogram: layout, count, exact min/max, and [lowest_ns, count] for non-empty buckets.
nlohmann::ordered_json histogram_json(const log_histogram& h);
// Reads histogram_json back (for compare); false on a malformed document.
bool histogram_from_json(const nlohmann::json& j, log_histogram& out);

// Host, kernel, CPU, pinning, and what the server said in its INFO line.
nlohmann::ordered_json environment_json(const config& cfg, const std::string& server_note);

struct run_meta {
  std::string command;      // the exact command line, shell quoted
  std::string server_note;  // --server-note: how the server was started (flags, durability)
};
nlohmann::ordered_json report_json(const config& cfg, const result& r, const run_meta& meta);

// HdrHistogram's percentile distribution text (values in milliseconds, 5 ticks per halving
// of the distance to 100%), readable by its plotter.
std::string hgrm_text(const log_histogram& h);

void print_human(const config& cfg, const result& r);

// The latency histogram a report leads with: corrected in open loop, else the measured one
// (closed loop: intended == actual send, so it is the same histogram).
const log_histogram& headline(const result& r);

}  // namespace peregrine::bench
