#pragma once
// The JetStream ApiError catalogue (streams.md §1.8): HTTP-like code, stable err_code and
// description. Descriptions with a "{...}" detail take it as an argument.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace js {

struct api_error {
  int code = 0;
  std::uint16_t err_code = 0;
  std::string description;
  bool operator==(const api_error&) const = default;
};

// Known err_codes used by the stream side; the detail replaces the "{...}" part of
// templated entries (10025, 10043, 10052, 10057, 10070, 10071, 10077, 10110, 10111, ...).
api_error make_error(std::uint16_t err_code, std::string_view detail = {});

// {"code":..,"err_code":..,"description":..}
nlohmann::ordered_json to_json(const api_error& e);

namespace err {
constexpr std::uint16_t bad_request = 10003;
constexpr std::uint16_t invalid_json = 10025;
constexpr std::uint16_t no_message_found = 10037;
constexpr std::uint16_t not_empty_request = 10038;
constexpr std::uint16_t sequence_not_found = 10043;
constexpr std::uint16_t stream_create = 10049;
constexpr std::uint16_t stream_general = 10051;
constexpr std::uint16_t stream_invalid_config = 10052;
constexpr std::uint16_t message_too_large = 10054;
constexpr std::uint16_t name_mismatch = 10056;
constexpr std::uint16_t msg_delete_failed = 10057;
constexpr std::uint16_t name_in_use = 10058;
constexpr std::uint16_t stream_not_found = 10059;
constexpr std::uint16_t expected_stream = 10060;
constexpr std::uint16_t subjects_overlap = 10065;
constexpr std::uint16_t stream_update = 10069;
constexpr std::uint16_t wrong_last_msg_id = 10070;
constexpr std::uint16_t wrong_last_seq = 10071;
constexpr std::uint16_t replicas_not_supported = 10074;
constexpr std::uint16_t store_failed = 10077;
constexpr std::uint16_t header_too_large = 10097;
constexpr std::uint16_t sealed = 10109;
constexpr std::uint16_t purge_failed = 10110;
constexpr std::uint16_t rollup_failed = 10111;
constexpr std::uint16_t path_separators = 10128;
constexpr std::uint16_t replicas_negative = 10133;
constexpr std::uint16_t ttl_disabled = 10166;
constexpr std::uint16_t counters_disabled = 10168;
constexpr std::uint16_t atomic_disabled = 10174;
constexpr std::uint16_t min_api_level = 10185;
constexpr std::uint16_t missing_subject_seq = 10193;
}  // namespace err

}  // namespace js
