#include "src/js/pull_request.h"

#include <charconv>

#include <nlohmann/json.hpp>

namespace js {
namespace {

std::string_view trim(std::string_view s) {
  auto sp = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && sp(s.front())) s.remove_prefix(1);
  while (!s.empty() && sp(s.back())) s.remove_suffix(1);
  return s;
}

template <typename T>
void get_if(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) out = it->get<T>();  // type mismatch throws -> 400
}

}  // namespace

std::variant<pull_request, pull_parse_error> parse_pull_request(std::string_view body) {
  pull_request r;
  body = trim(body);
  if (body.empty()) {
    r.priority = 9;  // non-JSON requests rank last under the prioritized policy
    return r;
  }
  if (body.front() != '{') {
    r.priority = 9;
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), n);
    if (ec == std::errc() && p == body.data() + body.size()) r.batch = n > 0 ? n : 1;
    return r;
  }
  try {
    auto j = nlohmann::json::parse(body);
    if (!j.is_object()) return pull_parse_error{"Bad Request - request must be a JSON object"};
    r.batch = 0;
    get_if(j, "batch", r.batch);
    get_if(j, "max_bytes", r.max_bytes);
    get_if(j, "expires", r.expires);
    get_if(j, "no_wait", r.no_wait);
    get_if(j, "idle_heartbeat", r.idle_heartbeat);
    get_if(j, "group", r.group);
    get_if(j, "min_pending", r.min_pending);
    get_if(j, "min_ack_pending", r.min_ack_pending);
    get_if(j, "id", r.id);
    get_if(j, "priority", r.priority);
  } catch (const nlohmann::json::exception& e) {
    return pull_parse_error{std::string("Bad Request - ") + e.what()};
  }
  if (r.batch <= 0) r.batch = 1;
  if (r.expires < 0) r.expires = 0;
  if (r.max_bytes < 0) r.max_bytes = 0;
  if (r.idle_heartbeat > 0 && r.idle_heartbeat * 2 > r.expires)
    return pull_parse_error{"Bad Request - heartbeat value too large"};
  if (r.priority < 0 || r.priority > 9)
    return pull_parse_error{"Bad Request - Priority must be between 0 and 9"};
  return r;
}

}  // namespace js
