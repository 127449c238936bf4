#pragma once
// Strict typed reads of request JSON fields for the config parsers: a wrong type throws
// json_decode_error, which the parser reports as plain "invalid JSON" (10025), as nats-server's
// Go decoder does.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace js {

struct json_decode_error {};

namespace jdec {

using json = nlohmann::json;

inline std::int64_t get_i64(const json& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) {  // 1e9 and 5.0 are integers to Go's decoder
    double d = v.get<double>();
    if (d == static_cast<double>(static_cast<std::int64_t>(d))) return static_cast<std::int64_t>(d);
  }
  throw json_decode_error{};
}
inline std::uint64_t get_u64(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::uint64_t>();
  throw json_decode_error{};
}
inline bool get_bool(const json& v) {
  if (!v.is_boolean()) throw json_decode_error{};
  return v.get<bool>();
}
inline std::string get_str(const json& v) {
  if (!v.is_string()) throw json_decode_error{};
  return v.get<std::string>();
}
inline std::vector<std::string> get_strs(const json& v) {
  if (!v.is_array()) throw json_decode_error{};
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(get_str(e));
  return out;
}

}  // namespace jdec
}  // namespace js
