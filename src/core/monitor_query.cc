#include "src/core/monitor_query.h"

#include <fmt/format.h>

namespace core {

http_reply json_reply(const nlohmann::ordered_json& j) { return {200, "application/json", j.dump(2)}; }
http_reply bad_request(std::string text) { return {400, "text/plain; charset=utf-8", std::move(text)}; }

std::optional<bool> go_bool(const std::string& v) {
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"})
    if (v == t) return true;
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"})
    if (v == f) return false;
  return std::nullopt;
}

bool truthy(const http_query& q, const char* key) {
  auto it = q.find(key);
  return it != q.end() && (it->second == "detail" || go_bool(it->second).value_or(false));
}

bool bool_args_ok(const http_query& q, std::initializer_list<const char*> keys, http_reply& err,
                  const char* also_allowed) {
  for (const char* k : keys) {
    auto it = q.find(k);
    if (it == q.end() || it->second.empty() || go_bool(it->second)) continue;
    if (also_allowed && it->second == also_allowed) continue;
    err = bad_request(fmt::format("Error decoding boolean for '{}': strconv.ParseBool: parsing \"{}\": invalid syntax",
                                  k, it->second));
    return false;
  }
  return true;
}

bool int_arg(const http_query& q, const char* key, std::int64_t& out, http_reply& err) {
  auto it = q.find(key);
  if (it == q.end() || it->second.empty()) return true;
  try {
    std::size_t used = 0;
    out = std::stoll(it->second, &used);
    if (used == it->second.size()) return true;
  } catch (...) {
  }
  err = bad_request(fmt::format("Error decoding int for '{}': strconv.Atoi: parsing \"{}\": invalid syntax", key,
                                it->second));
  return false;
}

}  // namespace core
