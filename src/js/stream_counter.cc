#include "src/js/stream_counter.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "src/js/json_util.h"

namespace js {

namespace {

constexpr std::string_view kCounterSources = "Nats-Counter-Sources";

int compare_magnitude(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
}

std::string strip_zeros(std::string s) {
  const auto nz = s.find_first_not_of('0');
  return nz == std::string::npos ? "0" : s.substr(nz);
}

// |a| + |b|, schoolbook from the least significant digit.
std::string add_magnitude(std::string_view a, std::string_view b) {
  std::string out;
  out.reserve(std::max(a.size(), b.size()) + 1);
  int carry = 0;
  for (std::size_t i = 0; i < a.size() || i < b.size() || carry; ++i) {
    int d = carry;
    if (i < a.size()) d += a[a.size() - 1 - i] - '0';
    if (i < b.size()) d += b[b.size() - 1 - i] - '0';
    out.push_back(static_cast<char>('0' + d % 10));
    carry = d / 10;
  }
  std::reverse(out.begin(), out.end());
  return strip_zeros(std::move(out));
}

// |a| - |b| where |a| >= |b|.
std::string sub_magnitude(std::string_view a, std::string_view b) {
  std::string out;
  out.reserve(a.size());
  int borrow = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    int d = (a[a.size() - 1 - i] - '0') - borrow - (i < b.size() ? b[b.size() - 1 - i] - '0' : 0);
    borrow = d < 0;
    out.push_back(static_cast<char>('0' + (d + 10) % 10));
  }
  std::reverse(out.begin(), out.end());
  return strip_zeros(std::move(out));
}


counter_result broken() { return {std::nullopt, make_error(err::counter_broken)}; }

// The object's member `key` as Go's encoding/json finds it for a struct field: exact name
// first, else a case-insensitive match.
const nlohmann::json* find_member(const nlohmann::json& obj, std::string_view key) {
  if (auto it = obj.find(std::string(key)); it != obj.end()) return &*it;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() == key.size() && std::equal(k.begin(), k.end(), key.begin(), [](char x, char y) {
          return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
        }))
      return &*it;
  }
  return nullptr;
}

using counter_sources = std::map<std::string, std::map<std::string, std::string>>;

std::optional<counter_sources> parse_sources(std::string_view v) {
  auto j = nlohmann::json::parse(v, nullptr, false);
  if (j.is_discarded() || !(j.is_object() || j.is_null())) return std::nullopt;
  counter_sources out;
  if (j.is_null()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!(it->is_object() || it->is_null())) return std::nullopt;
    auto& per = out[it.key()];
    if (it->is_null()) continue;
    for (auto s = it->begin(); s != it->end(); ++s) {
      if (!s->is_string()) return std::nullopt;
      per[s.key()] = s->get<std::string>();
    }
  }
  return out;
}

}  // namespace

std::optional<big_int> parse_big_int(std::string_view s) {
  big_int v;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    v.negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  v.digits = strip_zeros(std::string(s));
  if (v.digits == "0") v.negative = false;
  return v;
}

big_int negate(big_int v) {
  if (v.digits != "0") v.negative = !v.negative;
  return v;
}

big_int add(const big_int& a, const big_int& b) {
  big_int r;
  if (a.negative == b.negative) {
    r.digits = add_magnitude(a.digits, b.digits);
    r.negative = a.negative;
  } else if (compare_magnitude(a.digits, b.digits) >= 0) {
    r.digits = sub_magnitude(a.digits, b.digits);
    r.negative = a.negative;
  } else {
    r.digits = sub_magnitude(b.digits, a.digits);
    r.negative = b.negative;
  }
  if (r.digits == "0") r.negative = false;
  return r;
}

std::optional<big_int> parse_counter_payload(std::string_view payload) {
  auto j = nlohmann::json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const nlohmann::json* val = find_member(j, "val");
  if (!val) return big_int{};  // Go leaves the field empty: the total counts from zero
  if (!val->is_string()) return std::nullopt;
  return parse_big_int(val->get_ref<const std::string&>());
}

std::string counter_payload(const big_int& v) { return "{\"val\":\"" + v.str() + "\"}"; }

std::optional<api_error> check_incr_headers(const js_headers& h, bool counter_stream, std::size_t payload_size,
                                            bool sourced) {
  if (!h.incr || h.incr->empty()) return std::nullopt;  // an empty value counts as absent, as in Go
  if (!parse_big_int(*h.incr)) return make_error(err::counter_incr_invalid);
  if (sourced) return std::nullopt;
  if (!counter_stream) return make_error(err::counters_disabled);
  if (payload_size > 0) return make_error(err::counter_has_payload);
  // A counter's value is the sum of its increments: nothing may condition or roll it up.
  if (h.rollup || h.expected_stream || h.expected_last_msg_id || h.expected_last_subj_seq_subject ||
      h.expected_last_seq || h.expected_last_subj_seq)
    return make_error(err::counter_incr_invalid);
  return std::nullopt;
}

counter_result apply_increment(std::string_view subject, std::string_view hdr, const js_headers& h,
                               std::string_view payload, std::optional<std::string_view> last_payload,
                               std::string_view last_hdr, std::optional<std::string_view> source_header) {
  if (!h.incr || h.incr->empty()) return {std::nullopt, make_error(err::counter_incr_missing)};
  auto incr = parse_big_int(*h.incr);
  if (!incr) return {std::nullopt, make_error(err::counter_incr_invalid)};
  big_int total;
  counter_sources sources;
  if (last_payload) {
    auto last = parse_counter_payload(*last_payload);
    if (!last) return broken();
    total = *last;
    if (auto v = find_header(last_hdr, kCounterSources); v && !v->empty()) {
      auto s = parse_sources(*v);
      if (!s) return broken();
      sources = std::move(*s);
    }
  }
  counter_update u;
  u.headers = std::string(hdr);
  if (source_header && !source_header->empty()) {
    // The copy carries the origin's total: count only what changed since its previous copy.
    std::string_view fields = *source_header;
    std::vector<std::string_view> f;
    for (std::size_t pos = 0;;) {
      auto sp = fields.find(' ', pos);
      f.push_back(fields.substr(pos, sp == std::string_view::npos ? std::string_view::npos : sp - pos));
      if (sp == std::string_view::npos) break;
      pos = sp + 1;
    }
    const std::string origin(f[0]);
    const std::string origin_subject(f.size() >= 5 ? f[4] : subject);
    auto sourced = parse_counter_payload(payload);
    if (!sourced) return broken();
    std::string& prev_text = sources[origin][origin_subject];
    const big_int previous = parse_big_int(prev_text).value_or(big_int{});
    incr = add(*sourced, negate(previous));
    prev_text = sourced->str();
    u.headers = append_header(remove_header(u.headers, "Nats-Incr"), "Nats-Incr", incr->str());
  }
  total = add(total, *incr);
  if (!sources.empty()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [stream, per] : sources) j[stream] = per;
    u.headers = append_header(remove_header(u.headers, kCounterSources), kCounterSources, j.dump());
  }
  u.total = total.str();
  u.payload = counter_payload(total);
  return {std::move(u), {}};
}

}  // namespace js
