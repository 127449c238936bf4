#pragma once
// Request bodies judged as nats-server's Go decoder (encoding/json) judges them. Bodies are
// parsed in document order (Go reports the first bad field it meets); a field of the wrong
// JSON type, or an integer outside its Go type's range, is Go's UnmarshalTypeError and the
// API answers 10025 "invalid JSON: json: cannot unmarshal <what> into Go struct field
// <Struct>.<path> of type <T>".
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/js/api_errors.h"

namespace js {

// Thrown by the jdec readers. `what` + `go_type` are Go's UnmarshalTypeError parts; `text` is
// a complete error of another kind (an enum's UnmarshalJSON). All empty: plain "invalid JSON".
struct json_decode_error {
  std::string what;
  std::string go_type;
  std::string text;
  std::optional<api_error> nested;  // the first error inside a sub-struct decoded on its own
};

namespace jdec {

using json = nlohmann::ordered_json;

// Parses a request body keeping key order and the literal text of fractional / huge numbers
// (Go quotes the literal). nullopt on a syntax error.
std::optional<json> parse(std::string_view body);

// Go's UnmarshalTypeError Value for `v`: "string", "bool", "object", "array", "number" and,
// into a numeric field, "number <literal>".
std::string go_value(const json& v, bool numeric_field);

[[noreturn]] void type_error(const json& v, const char* go_type, bool numeric_field);

// An integer field of Go type `go_type` with range [lo, hi] (Go parses the literal with
// ParseInt, so 1.0 and 1e3 are refused too).
std::int64_t get_int(const json& v, const char* go_type = "int64",
                     std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                     std::int64_t hi = std::numeric_limits<std::int64_t>::max());
inline std::int64_t get_i64(const json& v) { return get_int(v, "int64"); }
inline std::int64_t get_duration(const json& v) { return get_int(v, "time.Duration"); }
std::uint64_t get_u64(const json& v, const char* go_type = "uint64");
bool get_bool(const json& v);
std::string get_str(const json& v);
std::vector<std::string> get_strs(const json& v);
// A sub-object kept verbatim (placement, republish, ...): non-objects are refused as Go would.
json get_obj(const json& v, const char* go_type);
// What an enum's UnmarshalJSON refuses: nats-server's `can not unmarshal "<raw>"`.
[[noreturn]] void enum_error(const json& v);
// An enum field's string (RetentionPolicy, AckPolicy, ...); anything else is the enum's error.
std::string get_enum(const json& v);
// An enum field that is one of `names` (Go's strings, several for one value where nats-server
// takes them, "" among them where it takes an empty one); else the enum's error.
template <typename E>
E get_enum(const json& v, std::initializer_list<std::pair<std::string_view, E>> names) {
  const std::string s = get_enum(v);
  for (const auto& [name, value] : names)
    if (s == name) return value;
  enum_error(v);
}
// A map[string]string field (metadata).
std::map<std::string, std::string> get_string_map(const json& v);

// The 10025 for `e` met at field `path` of Go struct `go_struct`.
api_error to_api_error(const json_decode_error& e, std::string_view go_struct, std::string_view path);

// Go's decode order for one object: the first type error is remembered and decoding goes on
// (Go's saveError), an enum error or an unknown field (strict) ends it. `read(key, value)`
// returns false for an unknown key. Null values are skipped as Go leaves the field alone.
template <typename Read>
std::optional<api_error> decode_object(const json& obj, std::string_view go_struct, std::string_view path_prefix,
                                       bool strict, Read&& read) {
  if (!obj.is_object()) return make_error(10025);
  std::optional<api_error> first;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string path = std::string(path_prefix) + it.key();
    try {
      if (it.value().is_null()) continue;
      if (!read(it.key(), it.value()) && strict)
        return first ? first : make_error(10025, ": json: unknown field \"" + it.key() + "\"");
    } catch (const json_decode_error& e) {
      if (!e.text.empty()) return to_api_error(e, go_struct, path);
      if (!first) first = e.nested ? *e.nested : to_api_error(e, go_struct, path);
    }
  }
  return first;
}

// The fields of a small request struct (purge, msg get, paging, ...) and their Go types.
enum class field_kind { u64, int_, boolean, string, time, strings };
struct request_field {
  std::string_view key;
  field_kind kind;
};

// Decodes an API request body as Go decodes it into server.<go_struct>: an empty body is {},
// anything else must be a JSON object whose fields have their Go types (unknown -> strict
// 10025). `out` holds the object.
std::optional<api_error> decode_request(std::string_view body, std::string_view go_struct,
                                        std::initializer_list<request_field> fields, json& out);

}  // namespace jdec
}  // namespace js
