#include "src/base/go_text.h"

#include <ctime>

#include <fmt/format.h>

namespace base {
namespace {
constexpr std::int64_t kNsPerSec = 1'000'000'000;
}  // namespace

std::string rfc3339_nano(std::int64_t unix_ns) {
  if (unix_ns == 0) return "0001-01-01T00:00:00Z";
  std::int64_t secs = unix_ns / kNsPerSec;
  std::int64_t frac = unix_ns % kNsPerSec;
  if (frac < 0) {
    frac += kNsPerSec;
    --secs;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1,
                                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (frac != 0) {
    std::string f = fmt::format("{:09}", frac);
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += '.';
    out += f;
  }
  out += 'Z';
  return out;
}

std::string go_duration(std::int64_t d) {
  if (d == 0) return "0s";
  std::string sign = d < 0 ? "-" : "";
  std::uint64_t u = d < 0 ? std::uint64_t(0) - std::uint64_t(d) : std::uint64_t(d);
  // Integer part plus a fraction of `prec` digits with trailing zeros dropped.
  auto frac = [](std::uint64_t v, std::uint64_t unit, int prec) {
    std::string s = std::to_string(v / unit);
    std::uint64_t f = v % unit;
    if (f != 0) {
      std::string fs = std::to_string(f);
      fs.insert(0, std::size_t(prec) - fs.size(), '0');
      while (!fs.empty() && fs.back() == '0') fs.pop_back();
      s += "." + fs;
    }
    return s;
  };
  if (u < 1000) return sign + std::to_string(u) + "ns";
  if (u < 1'000'000) return sign + frac(u, 1000, 3) + "\xc2\xb5s";
  if (u < 1'000'000'000) return sign + frac(u, 1'000'000, 6) + "ms";
  std::uint64_t secs_ns = u % 60'000'000'000ULL;
  std::uint64_t mins = u / 60'000'000'000ULL;
  std::string out = sign;
  if (mins >= 60) out += std::to_string(mins / 60) + "h";
  if (mins > 0) out += std::to_string(mins % 60) + "m";
  out += frac(secs_ns, 1'000'000'000, 9) + "s";
  return out;
}

}  // namespace base
