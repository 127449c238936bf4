#include "src/core/monitor_format.h"

#include "src/base/go_text.h"

#include <algorithm>

#include <fmt/format.h>

namespace core {

std::string uptime_text(std::int64_t ns) {
  const std::int64_t s = std::max<std::int64_t>(0, ns / 1'000'000'000);
  const std::int64_t m = s / 60, h = m / 60, d = h / 24, y = d / 365;
  if (y > 0) return fmt::format("{}y{}d{}h{}m{}s", y, d % 365, h % 24, m % 60, s % 60);
  if (d > 0) return fmt::format("{}d{}h{}m{}s", d, h % 24, m % 60, s % 60);
  if (h > 0) return fmt::format("{}h{}m{}s", h, m % 60, s % 60);
  if (m > 0) return fmt::format("{}m{}s", m, s % 60);
  return fmt::format("{}s", s);
}

std::string rtt_text(std::int64_t ns) {
  if (ns > 1000 && ns < 1'000'000) ns -= ns % 1000;
  return base::go_duration(ns);
}

}  // namespace core
