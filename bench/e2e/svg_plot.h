// Self-contained SVG plots for peregrine-bench (no plotting dependency): the percentile
// spectrum on a 1/(1-p) log axis with several runs overlaid, and latency over time.
#pragma once

#include <string>
#include <vector>

#include "bench/e2e/histogram.h"
#include "bench/e2e/recorder.h"

namespace peregrine::bench {

struct spectrum_run {
  std::string label;
  const log_histogram* hist;
};
enum class y_scale { log, linear };
// x: percentile, log scale in 1/(1-p) from 0% to 99.9999% (ticks 0%, 90%, 99% ... ; capped at
// the run's sample count), y: latency in microseconds, by default on a log axis (a spectrum
// spans decades: a 20 us median under a 50 ms tail) from the decade below the smallest value to
// the decade above the largest; y_scale::linear draws it from 0 instead.
std::string percentile_spectrum_svg(const std::string& title, const std::vector<spectrum_run>& runs,
                                    y_scale scale = y_scale::log);

struct series_run {
  std::string label;
  const std::vector<series_point>* points;
};
// x: seconds into the measured phase, y: latency in microseconds; p50 solid, p99 dashed and
// max dotted per run.
std::string latency_over_time_svg(const std::string& title, const std::vector<series_run>& runs);

// Escapes &, <, >, " for XML text and attributes.
std::string xml_escape(const std::string& s);

}  // namespace peregrine::bench
