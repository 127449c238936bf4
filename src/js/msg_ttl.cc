#include "src/js/msg_ttl.h"

#include <cctype>
#include <charconv>

#include "src/base/clock.h"
#include "storage/store.h"

namespace js {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return true;
}

}  // namespace

std::optional<double> parse_go_duration_ns(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return 0.0;
  if (s.empty()) return std::nullopt;
  double total = 0;
  while (!s.empty()) {
    std::size_t i = 0;
    double whole = 0, frac = 0, scale = 1;
    bool digits = false;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, digits = true) whole = whole * 10 + (s[i] - '0');
    if (i < s.size() && s[i] == '.') {
      for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, digits = true) {
        scale /= 10;
        frac += (s[i] - '0') * scale;
      }
    }
    if (!digits) return std::nullopt;
    s.remove_prefix(i);
    struct unit {
      std::string_view name;
      double ns;
    };
    static constexpr unit kUnits[] = {{"ns", 1},   {"us", 1e3},  {"\xC2\xB5s", 1e3}, {"\xCE\xBCs", 1e3},
                                      {"ms", 1e6}, {"s", 1e9},   {"m", 60e9},        {"h", 3600e9}};
    const unit* u = nullptr;
    for (const auto& k : kUnits)  // longest match first: "ms" before "m", "ns" before "s"
      if (s.starts_with(k.name) && (!u || k.name.size() > u->name.size())) u = &k;
    if (!u) return std::nullopt;  // a number without a unit is not a duration
    s.remove_prefix(u->name.size());
    total += (whole + frac) * u->ns;
  }
  return neg ? -total : total;
}


std::optional<std::int64_t> parse_msg_ttl(std::string_view v) {
  if (v.empty()) return 0;
  if (iequals(v, "never")) return storage::ttl_never;
  if (auto d = parse_go_duration_ns(v)) {
    if (*d < 1e9) return std::nullopt;  // below one second, zero and negative
    if (*d > 9.2e18) return std::nullopt;
    return static_cast<std::int64_t>(*d / 1e9) * base::kSecond;  // whole seconds
  }
  std::int64_t secs = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
  if (ec != std::errc{} || p != v.data() + v.size() || secs <= 0) return std::nullopt;
  if (secs > INT64_MAX / base::kSecond) return std::nullopt;
  return secs * base::kSecond;
}

}  // namespace js
