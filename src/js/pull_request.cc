#include "src/js/pull_request.h"

#include <cctype>
#include <charconv>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace js {
namespace {

std::string_view trim(std::string_view s) {
  auto sp = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && sp(s.front())) s.remove_prefix(1);
  while (!s.empty() && sp(s.back())) s.remove_suffix(1);
  return s;
}

// Go's encoding/json texts for what a client most often gets wrong, so the 400 reads as
// nats-server's "Bad Request - <json error>".
std::string go_syntax_error(const nlohmann::json::parse_error& e, std::string_view body) {
  if (e.byte == 0 || e.byte > body.size()) return "unexpected end of JSON input";
  // nlohmann points past the token it rejected; Go names the token's first character.
  std::size_t at = e.byte - 1;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+'; };
  while (at > 0 && word(body[at]) && word(body[at - 1])) --at;
  const std::string what = e.what();
  const char* context = what.find("parsing object key") != std::string::npos ? "looking for beginning of object key string"
                        : what.find("parsing object separator") != std::string::npos ? "after object key"
                        : what.find("parsing object") != std::string::npos         ? "after object key:value pair"
                        : what.find("parsing array") != std::string::npos          ? "after array element"
                                                                                    : "looking for beginning of value";
  return "invalid character '" + std::string(1, body[at]) + "' " + context;
}

const char* go_json_type(const nlohmann::ordered_json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "bool";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  return "number";
}

// Reads one field as Go would decode JSApiConsumerGetNextRequest: a wrong JSON type (or a
// fraction for an integer) is Go's UnmarshalTypeError text.
template <typename T>
std::optional<std::string> read_field(const nlohmann::ordered_json& v, const std::string& key, const char* go_type,
                                      T& out) {
  if (v.is_null()) return std::nullopt;
  bool fits;
  if constexpr (std::is_same_v<T, bool>) {
    fits = v.is_boolean();
  } else if constexpr (std::is_same_v<T, std::string>) {
    fits = v.is_string();
  } else {
    fits = v.is_number_integer();
  }
  if (!fits) {
    std::string shown = go_json_type(v);
    // Go shows the literal only when a number does not fit a numeric field.
    if (v.is_number() && !std::is_same_v<T, bool> && !std::is_same_v<T, std::string>) shown += " " + v.dump();
    return "json: cannot unmarshal " + shown + " into Go struct field JSApiConsumerGetNextRequest." + key +
           " of type " + go_type;
  }
  out = v.get<T>();
  return std::nullopt;
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
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    return pull_parse_error{"Bad Request - " + go_syntax_error(e, body)};
  } catch (const nlohmann::json::exception&) {
    // A number beyond double's range (2e+1077777): valid JSON to Go, a type error for its field.
    return pull_parse_error{"Bad Request - json: cannot unmarshal number into Go value of type int"};
  }
  if (!j.is_object()) return pull_parse_error{"Bad Request - request must be a JSON object"};
  r.batch = 0;
  // Document order, as Go reports the first field that does not decode.
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    std::optional<std::string> bad;
    if (k == "batch") bad = read_field(v, k, "int", r.batch);
    else if (k == "max_bytes") bad = read_field(v, k, "int", r.max_bytes);
    else if (k == "expires") bad = read_field(v, k, "time.Duration", r.expires);
    else if (k == "no_wait") bad = read_field(v, k, "bool", r.no_wait);
    else if (k == "idle_heartbeat") bad = read_field(v, k, "time.Duration", r.idle_heartbeat);
    else if (k == "group") bad = read_field(v, k, "string", r.group);
    else if (k == "min_pending") bad = read_field(v, k, "int64", r.min_pending);
    else if (k == "min_ack_pending") bad = read_field(v, k, "int64", r.min_ack_pending);
    else if (k == "id") bad = read_field(v, k, "string", r.id);
    else if (k == "priority") bad = read_field(v, k, "int", r.priority);
    if (bad) return pull_parse_error{"Bad Request - " + *bad};
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
