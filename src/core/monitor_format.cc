#include "src/core/monitor_format.h"

#include <ctime>

#include <fmt/format.h>

namespace core {

std::string rfc3339(std::int64_t wall_ns) {
  const time_t secs = time_t(wall_ns / 1'000'000'000);
  long frac = long(wall_ns % 1'000'000'000);
  tm t{};
  gmtime_r(&secs, &t);
  std::string s = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                              t.tm_hour, t.tm_min, t.tm_sec);
  if (frac > 0) {
    std::string f = fmt::format("{:09}", frac);
    while (!f.empty() && f.back() == '0') f.pop_back();
    s += "." + f;
  }
  return s + "Z";
}

std::string uptime_text(std::int64_t ns) {
  const std::int64_t s = std::max<std::int64_t>(0, ns / 1'000'000'000);
  const std::int64_t m = s / 60, h = m / 60, d = h / 24, y = d / 365;
  if (y > 0) return fmt::format("{}y{}d{}h{}m{}s", y, d % 365, h % 24, m % 60, s % 60);
  if (d > 0) return fmt::format("{}d{}h{}m{}s", d, h % 24, m % 60, s % 60);
  if (h > 0) return fmt::format("{}h{}m{}s", h, m % 60, s % 60);
  if (m > 0) return fmt::format("{}m{}s", m, s % 60);
  return fmt::format("{}s", s);
}

std::string go_duration(std::int64_t ns) {
  if (ns < 1000) return fmt::format("{}ns", ns);
  auto frac = [](std::int64_t whole, std::int64_t part, int digits) {
    std::string f = fmt::format("{:0{}}", part, digits);
    while (!f.empty() && f.back() == '0') f.pop_back();
    return f.empty() ? std::to_string(whole) : fmt::format("{}.{}", whole, f);
  };
  if (ns < 1'000'000) return fmt::format("{}\u00b5s", ns / 1000);
  if (ns < 1'000'000'000) return frac(ns / 1'000'000, ns % 1'000'000, 6) + "ms";
  const std::int64_t m = ns / 60'000'000'000, rest = ns % 60'000'000'000;
  const std::string secs = frac(rest / 1'000'000'000, rest % 1'000'000'000, 9) + "s";
  if (m == 0) return secs;
  if (m < 60) return fmt::format("{}m{}", m, secs);
  return fmt::format("{}h{}m{}", m / 60, m % 60, secs);
}

}  // namespace core
