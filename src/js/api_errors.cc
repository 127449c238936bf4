#include "src/js/api_errors.h"

#include <array>

namespace js {

namespace {

struct entry {
  std::uint16_t err_code;
  int code;
  std::string_view text;  // "{}" marks where a detail goes; "" = the detail is the text
};

// Exactly streams.md §1.8 for every code the stream side emits.
constexpr std::array kTable{
    entry{10002, 400, "resource limits exceeded for account"},
    entry{10003, 400, "bad request"},
    entry{10023, 503, "insufficient resources"},
    entry{10025, 400, "invalid JSON{}"},
    entry{10027, 400, "maximum number of streams reached"},
    entry{10031, 400, "stream mirrors can not also contain other sources"},
    entry{10034, 400, "stream mirrors can not contain subjects"},
    entry{10037, 404, "no message found"},
    entry{10038, 400, "expected an empty request payload"},
    entry{10039, 503, "JetStream not enabled for account"},
    entry{10043, 400, "sequence {} not found"},
    entry{10049, 500, ""},
    entry{10050, 500, ""},
    entry{10051, 500, ""},
    entry{10052, 500, ""},
    entry{10053, 500, ""},
    entry{10054, 400, "message size exceeds maximum allowed"},
    entry{10055, 400, "stream mirror configuration can not be updated"},
    entry{10056, 400, "stream name in subject does not match request"},
    entry{10057, 500, ""},
    entry{10058, 400, "stream name already in use with a different configuration"},
    entry{10059, 404, "stream not found"},
    entry{10060, 400, "expected stream does not match"},
    entry{10061, 400, "Replicas configuration can not be updated"},
    entry{10065, 400, "subjects overlap with an existing stream"},
    entry{10069, 500, ""},
    entry{10070, 400, "wrong last msg ID: {}"},
    entry{10071, 400, "wrong last sequence: {}"},
    entry{10074, 500, "replicas > 1 not supported in non-clustered mode"},
    entry{10076, 503, "JetStream not enabled"},
    entry{10077, 503, ""},
    entry{10097, 400, "header size exceeds maximum allowed of 64k"},
    entry{10109, 400, "invalid operation on sealed stream"},
    entry{10110, 500, ""},
    entry{10111, 500, ""},
    entry{10128, 400, "Stream name can not contain path separators"},
    entry{10133, 400, "replicas count cannot be negative"},
    entry{10157, 400, "pedantic mode: {}"},
    entry{10165, 400, "invalid per-message TTL"},
    entry{10166, 400, "per-message TTL is disabled"},
    entry{10168, 400, "message counters is disabled"},
    entry{10174, 400, "atomic publish is disabled"},
    entry{10185, 412, "JetStream minimum api level required"},
    entry{10193, 400, "missing sequence for expected last sequence per subject"},
};

}  // namespace

api_error make_error(std::uint16_t err_code, std::string_view detail) {
  for (const auto& e : kTable) {
    if (e.err_code != err_code) continue;
    api_error out{e.code, e.err_code, {}};
    if (e.text.empty()) {
      out.description = std::string(detail);
    } else if (auto p = e.text.find("{}"); p != std::string_view::npos) {
      out.description = std::string(e.text.substr(0, p));
      out.description += detail;
      out.description += e.text.substr(p + 2);
    } else {
      out.description = std::string(e.text);
    }
    return out;
  }
  return api_error{500, err_code, std::string(detail)};
}

nlohmann::ordered_json to_json(const api_error& e) {
  nlohmann::ordered_json j;
  j["code"] = e.code;
  if (e.err_code != 0) j["err_code"] = e.err_code;
  if (!e.description.empty()) j["description"] = e.description;
  return j;
}

}  // namespace js
