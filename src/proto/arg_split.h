// Pieces of a protocol control line shared by the client parser (parser.cc) and the route
// parser (src/core/route_parser.cc): argument splitting and the decimal size fields.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>

namespace proto {

constexpr bool is_arg_space(char c) { return c == ' ' || c == '\t'; }

// Splits on runs of spaces/tabs; returns the count (capped at N+1 so callers detect excess).
template <std::size_t N>
std::size_t split_args(std::string_view s, std::array<std::string_view, N>& out) {
  std::size_t n = 0, i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_arg_space(s[i])) ++i;
    if (i >= s.size()) break;
    std::size_t j = i;
    while (j < s.size() && !is_arg_space(s[j])) ++j;
    if (n == N) return N + 1;
    out[n++] = s.substr(i, j - i);
    i = j;
  }
  return n;
}

// A size or count field: ASCII digits only, at most 18 of them (no sign, no overflow).
inline bool parse_size(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return std::from_chars(s.data(), s.data() + s.size(), out).ec == std::errc{};
}

}  // namespace proto
