#include "src/cli/cli_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace peregrine::cli {

std::string comma(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string ibytes(uint64_t v) {
  if (v < 10) return std::to_string(v) + " B";
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const int e = std::min(6, static_cast<int>(std::floor(std::log(static_cast<double>(v)) / std::log(1024.0))));
  const double val = std::floor(static_cast<double>(v) / std::pow(1024.0, e) * 10 + 0.5) / 10;
  char buf[48];
  std::snprintf(buf, sizeof buf, val < 10 ? "%.1f %s" : "%.0f %s", val, units[e]);
  return buf;
}

std::string human_duration(int64_t ns) {
  if (ns == INT64_MAX) return "never";
  const int64_t secs = ns / 1'000'000'000, mins = secs / 60, hrs = mins / 60, days = hrs / 24, yrs = days / 365;
  char buf[96];
  if (yrs > 0)
    std::snprintf(buf, sizeof buf, "%lldy%lldd%lldh%lldm%llds", (long long)yrs, (long long)(days % 365),
                  (long long)(hrs % 24), (long long)(mins % 60), (long long)(secs % 60));
  else if (days > 0)
    std::snprintf(buf, sizeof buf, "%lldd%lldh%lldm%llds", (long long)days, (long long)(hrs % 24), (long long)(mins % 60),
                  (long long)(secs % 60));
  else if (hrs > 0)
    std::snprintf(buf, sizeof buf, "%lldh%lldm%llds", (long long)hrs, (long long)(mins % 60), (long long)(secs % 60));
  else if (mins > 0)
    std::snprintf(buf, sizeof buf, "%lldm%llds", (long long)mins, (long long)(secs % 60));
  else
    std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(ns) / 1e9);
  return buf;
}

namespace {

// Go's fmtFrac/fmtInt: v as an integer part and a fraction of `prec` digits, trailing zeros cut.
std::string with_fraction(uint64_t v, int prec) {
  std::string frac;
  bool print = false;
  for (int i = 0; i < prec; ++i) {
    const int digit = static_cast<int>(v % 10);
    print = print || digit != 0;
    if (print) frac.insert(frac.begin(), static_cast<char>('0' + digit));
    v /= 10;
  }
  return std::to_string(v) + (print ? "." + frac : "");
}

}  // namespace

std::string go_duration(int64_t ns) {
  if (ns == 0) return "0s";
  const bool neg = ns < 0;
  const uint64_t u = neg ? -static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::string out;
  if (u < 1'000'000'000) {
    if (u < 1000) out = std::to_string(u) + "ns";
    else if (u < 1'000'000) out = with_fraction(u, 3) + "µs";
    else out = with_fraction(u, 6) + "ms";
  } else {
    const uint64_t secs = u / 1'000'000'000, frac = u % 1'000'000'000;
    const uint64_t h = secs / 3600, m = secs / 60 % 60, s = secs % 60;
    out = with_fraction(s * 1'000'000'000 + frac, 9) + "s";
    if (h > 0 || m > 0) out = std::to_string(m) + "m" + out;
    if (h > 0) out = std::to_string(h) + "h" + out;
  }
  return neg ? "-" + out : out;
}

std::optional<int64_t> parse_duration(const std::string& s) {
  if (s.empty()) return std::nullopt;
  if (s == "0") return 0;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-' || s[0] == '+') neg = s[i++] == '-';
  // A bare number means seconds.
  if (s.find_first_not_of("0123456789.", i) == std::string::npos) {
    try {
      return static_cast<int64_t>(std::stod(s.substr(i)) * 1e9) * (neg ? -1 : 1);
    } catch (...) {
      return std::nullopt;
    }
  }
  long double total = 0;
  while (i < s.size()) {
    const size_t num_start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == num_start) return std::nullopt;
    const std::string num = s.substr(num_start, i - num_start);
    if (std::count(num.begin(), num.end(), '.') > 1) return std::nullopt;
    const size_t unit_start = i;
    while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i])) && s[i] != '.') ++i;
    const std::string unit = s.substr(unit_start, i - unit_start);
    long double mult;
    if (unit == "ns") mult = 1;
    else if (unit == "us" || unit == "µs") mult = 1e3;
    else if (unit == "ms") mult = 1e6;
    else if (unit == "s") mult = 1e9;
    else if (unit == "m") mult = 60e9;
    else if (unit == "h") mult = 3600e9;
    else if (unit == "d") mult = 86400e9;
    else if (unit == "w") mult = 7 * 86400e9;
    else if (unit == "M") mult = 30 * 86400e9;
    else if (unit == "y") mult = 365 * 86400e9;
    else return std::nullopt;
    total += std::stold(num) * mult;
  }
  if (total > static_cast<long double>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(total) * (neg ? -1 : 1);
}

std::optional<int64_t> parse_bytes(const std::string& s) {
  if (s == "-1") return -1;
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  std::string unit = s.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  long double mult;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") mult = 1024.0L;
  else if (unit == "M" || unit == "MB" || unit == "MIB") mult = 1024.0L * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") mult = 1024.0L * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") mult = 1024.0L * 1024 * 1024 * 1024;
  else return std::nullopt;
  try {
    const long double v = std::stold(s.substr(0, i)) * mult;
    if (v > static_cast<long double>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(v);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<int64_t> parse_rfc3339(const std::string& s) {
  int y, mo, d, h, mi, sec;
  int n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6) return std::nullopt;
  size_t i = static_cast<size_t>(n);
  int64_t frac_ns = 0;
  if (i < s.size() && s[i] == '.') {
    int64_t scale = 100'000'000;
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, scale /= 10)
      if (scale > 0) frac_ns += (s[i] - '0') * scale;
  }
  int64_t offset_s = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om;
    if (std::sscanf(s.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offset_s = (s[i] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
  } else if (i >= s.size() || s[i] != 'Z') {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d, tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = sec;
  const int64_t t = static_cast<int64_t>(timegm(&tm)) - offset_s;
  return t * 1'000'000'000 + frac_ns;
}

namespace {

std::tm utc_tm(int64_t unix_ns) {
  const time_t t = static_cast<time_t>(unix_ns >= 0 ? unix_ns / 1'000'000'000 : (unix_ns - 999'999'999) / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return tm;
}

}  // namespace

std::string short_time(int64_t unix_ns) {
  const std::tm tm = utc_tm(unix_ns);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string rfc3339(int64_t unix_ns) {
  const std::tm tm = utc_tm(unix_ns);
  char buf[48];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  int64_t frac = unix_ns % 1'000'000'000;
  if (frac < 0) frac += 1'000'000'000;
  if (frac != 0) {
    char f[16];
    std::snprintf(f, sizeof f, ".%09lld", static_cast<long long>(frac));
    std::string fs = f;
    while (fs.back() == '0') fs.pop_back();
    out += fs;
  }
  return out + "Z";
}

std::optional<std::string> base64_decode(const std::string& in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string render_lines(const std::vector<info_line>& lines) {
  size_t width = 0;
  for (const auto& l : lines) width = std::max(width, l.label.size());
  std::string out;
  for (const auto& l : lines) {
    if (l.label.empty()) {
      out += "\n" + l.value + "\n\n";
      continue;
    }
    out += std::string(width - l.label.size() + 2, ' ') + l.label + ": " + l.value + "\n";
  }
  return out;
}

}  // namespace peregrine::cli
