#include "bench/e2e/stats.h"

#include <algorithm>
#include <cmath>

namespace peregrine::bench {

int64_t percentile_sorted(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(q * n));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

summary summarize(std::vector<int64_t>& samples_ns) {
  summary s;
  if (samples_ns.empty()) return s;
  std::sort(samples_ns.begin(), samples_ns.end());
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  s.samples = samples_ns.size();
  s.p50_us = us(percentile_sorted(samples_ns, 0.50));
  s.p90_us = us(percentile_sorted(samples_ns, 0.90));
  s.p99_us = us(percentile_sorted(samples_ns, 0.99));
  s.p999_us = us(percentile_sorted(samples_ns, 0.999));
  s.max_us = us(samples_ns.back());
  long double total = 0;
  for (int64_t v : samples_ns) total += v;
  s.mean_us = static_cast<double>(total / samples_ns.size()) / 1000.0;
  return s;
}

}  // namespace peregrine::bench
