#pragma once
// Small pieces every JetStream API handler uses: the typed response envelope, reading a field
// the request decoder has already type-checked, and trimming a request body.
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace js {

inline std::string_view trim_space(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// {"type":"io.nats.jetstream.api.v1.<type>"} followed by body's fields in order. Moved, not
// copied: a stream info may carry 100,000 subjects.
inline nlohmann::ordered_json typed_response(std::string_view type, nlohmann::ordered_json body) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  for (auto it = body.begin(); it != body.end(); ++it) j[it.key()] = std::move(it.value());
  return j;
}

// Reads `key` into `out` when present and not null; false if it has another JSON type than T
// (callers answer 10025). Absent leaves `out` as it was.
template <typename T>
bool get_field(const nlohmann::ordered_json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return true;
  try {
    if constexpr (std::is_same_v<T, std::uint64_t>) {
      if (!it->is_number_unsigned()) return false;
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
      if (!it->is_number_integer()) return false;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!it->is_boolean()) return false;
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!it->is_string()) return false;
    }
    out = it->get<T>();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace js
