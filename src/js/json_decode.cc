#include "src/js/json_decode.h"

#include <utility>

#include "src/js/json_util.h"

namespace js::jdec {

namespace {

// Literal text of the fractional / out-of-range numbers of the body being decoded: nlohmann
// keeps only the double, Go's error quotes what the client wrote. Parse and decode run on one
// thread, one request at a time.
thread_local std::vector<std::pair<double, std::string>> float_literals;

class literal_keeping_parser : public nlohmann::detail::json_sax_dom_parser<json> {
 public:
  explicit literal_keeping_parser(json& root) : json_sax_dom_parser(root, false) {}
  bool number_float(double v, const std::string& literal) {
    float_literals.emplace_back(v, literal);
    return json_sax_dom_parser::number_float(v, literal);
  }
};

std::string float_literal(const json& v) {
  const double d = v.get<double>();
  for (const auto& [value, text] : float_literals)
    if (value == d) return text;
  return v.dump();
}

// Go's %q for the few characters a JSON literal can hold that need it.
std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::optional<json> parse(std::string_view body) {
  float_literals.clear();
  json root;
  literal_keeping_parser sax(root);
  if (!json::sax_parse(body.begin(), body.end(), &sax) || sax.is_errored()) return std::nullopt;
  return root;
}

std::string go_value(const json& v, bool numeric_field) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "bool";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (!numeric_field) return "number";
  return "number " + (v.is_number_float() ? float_literal(v) : v.dump());
}

void type_error(const json& v, const char* go_type, bool numeric_field) {
  throw json_decode_error{go_value(v, numeric_field), go_type, {}};
}

std::int64_t get_int(const json& v, const char* go_type, std::int64_t lo, std::int64_t hi) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(hi)) return static_cast<std::int64_t>(u);
  } else if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i >= lo && i <= hi) return i;
  }
  type_error(v, go_type, true);
}

std::uint64_t get_u64(const json& v, const char* go_type) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::uint64_t>();
  type_error(v, go_type, true);
}

bool get_bool(const json& v) {
  if (!v.is_boolean()) type_error(v, "bool", false);
  return v.get<bool>();
}

std::string get_str(const json& v) {
  if (!v.is_string()) type_error(v, "string", false);
  return v.get<std::string>();
}

std::vector<std::string> get_strs(const json& v) {
  if (!v.is_array()) type_error(v, "[]string", false);
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(get_str(e));
  return out;
}

json get_obj(const json& v, const char* go_type) {
  if (!v.is_object()) type_error(v, go_type, false);
  return v;
}

void enum_error(const json& v) { throw json_decode_error{{}, {}, "can not unmarshal " + go_quote(v.dump())}; }

std::string get_enum(const json& v) {
  if (!v.is_string()) enum_error(v);
  return v.get<std::string>();
}

std::map<std::string, std::string> get_string_map(const json& v) {
  if (!v.is_object()) type_error(v, "map[string]string", false);
  std::map<std::string, std::string> out;
  for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = get_str(it.value());
  return out;
}

api_error to_api_error(const json_decode_error& e, std::string_view go_struct, std::string_view path) {
  if (!e.text.empty()) return make_error(10025, ": " + e.text);
  if (e.what.empty()) return make_error(10025);
  return make_error(10025, ": json: cannot unmarshal " + e.what + " into Go struct field " + std::string(go_struct) +
                               "." + std::string(path) + " of type " + e.go_type);
}

std::optional<api_error> decode_request(std::string_view body, std::string_view go_struct,
                                        std::initializer_list<request_field> fields, json& out) {
  out = json::object();
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!body.empty() && blank(body.front())) body.remove_prefix(1);
  while (!body.empty() && blank(body.back())) body.remove_suffix(1);
  if (body.empty()) return std::nullopt;
  auto j = parse(body);
  if (!j) return make_error(10025);
  if (!j->is_object()) {
    if (j->is_null()) return std::nullopt;  // Go: null into a struct leaves it alone
    return make_error(10025, ": json: cannot unmarshal " + go_value(*j, false) + " into Go value of type server." +
                                 std::string(go_struct));
  }
  auto e = decode_object(*j, go_struct, "", true, [&](const std::string& key, const json& v) {
    for (const auto& f : fields) {
      if (f.key != key) continue;
      switch (f.kind) {
        case field_kind::u64: get_u64(v); break;
        case field_kind::int_: get_int(v, "int"); break;
        case field_kind::boolean: get_bool(v); break;
        case field_kind::string: get_str(v); break;
        case field_kind::strings: get_strs(v); break;
        case field_kind::time:  // time.Time's own UnmarshalJSON (Go 1.20+ text)
          if (!v.is_string()) throw json_decode_error{{}, {}, "Time.UnmarshalJSON: input is not a JSON string", {}};
          if (!parse_time(v.get<std::string>())) throw json_decode_error{};
          break;
      }
      return true;
    }
    return false;
  });
  if (e) return e;
  out = std::move(*j);
  return std::nullopt;
}

}  // namespace js::jdec
