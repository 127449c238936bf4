#include "src/js/direct_get.h"

#include "src/js/json_decode.h"
#include "src/js/json_util.h"

namespace js {

std::optional<std::string> decode_direct_request(std::string_view body, direct_request& r,
                                                 std::vector<std::string>& keys) {
  const std::string malformed = "408 Malformed Request";
  auto j = jdec::parse(body);
  if (!j || !j->is_object()) return malformed;
  auto time_field = [](const jdec::json& v) -> std::optional<std::int64_t> {
    return v.is_string() ? parse_time(v.get<std::string>()) : std::nullopt;
  };
  try {
    for (auto it = j->begin(); it != j->end(); ++it) {
      const auto& k = it.key();
      const auto& v = it.value();
      if (v.is_null()) continue;
      keys.push_back(k);
      if (k == "seq") r.seq = jdec::get_u64(v);
      else if (k == "last_by_subj") r.last_by = jdec::get_str(v);
      else if (k == "next_by_subj") r.next_by = jdec::get_str(v);
      else if (k == "batch") r.batch = jdec::get_int(v, "int");
      else if (k == "max_bytes") r.max_bytes = jdec::get_int(v, "int");
      else if (k == "multi_last") r.multi_last = jdec::get_strs(v);
      else if (k == "up_to_seq") r.up_to_seq = jdec::get_u64(v);
      else if (k == "no_hdr") r.no_hdr = jdec::get_bool(v);
      else if (k == "start_time" || k == "up_to_time") {
        auto t = time_field(v);
        if (!t) return malformed;
        (k == "start_time" ? r.start_time : r.up_to_time) = *t;
      }
    }
  } catch (const json_decode_error&) {
    return malformed;
  }
  return std::nullopt;
}

}  // namespace js
