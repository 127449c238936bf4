#pragma once
// The JetStream ApiError catalogue (nats-server's errors.json): HTTP-like code, stable err_code and
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
constexpr std::uint16_t no_suitable_peers = 10005;
constexpr std::uint16_t cluster_unavailable = 10008;
constexpr std::uint16_t stream_offline = 10118;
constexpr std::uint16_t consumer_offline = 10119;
constexpr std::uint16_t clustering_required = 10010;
constexpr std::uint16_t consumer_create = 10012;
constexpr std::uint16_t consumer_name_in_use = 10013;
constexpr std::uint16_t consumer_not_found = 10014;
constexpr std::uint16_t durable_name_not_in_subject = 10016;
constexpr std::uint16_t durable_name_mismatch = 10017;
constexpr std::uint16_t durable_name_not_set = 10018;
constexpr std::uint16_t ephemeral_with_durable_in_subject = 10019;
constexpr std::uint16_t ephemeral_with_durable = 10020;
constexpr std::uint16_t max_consumers = 10026;
constexpr std::uint16_t max_streams = 10027;
constexpr std::uint16_t account_resources_exceeded = 10002;
constexpr std::uint16_t not_enabled_for_account = 10039;
constexpr std::uint16_t peer_not_member = 10040;
constexpr std::uint16_t server_not_member = 10044;
constexpr std::uint16_t peer_remap = 10075;
constexpr std::uint16_t consumer_config_required = 10078;
constexpr std::uint16_t deliver_wildcards = 10079;
constexpr std::uint16_t push_max_waiting = 10080;
constexpr std::uint16_t deliver_cycle = 10081;
constexpr std::uint16_t max_pending_needs_ack = 10082;
constexpr std::uint16_t small_heartbeat = 10083;
constexpr std::uint16_t pull_requires_ack = 10084;
constexpr std::uint16_t pull_with_rate_limit = 10086;
constexpr std::uint16_t max_waiting_negative = 10087;
constexpr std::uint16_t hb_requires_push = 10088;
constexpr std::uint16_t fc_requires_push = 10089;
constexpr std::uint16_t direct_requires_push = 10090;
constexpr std::uint16_t direct_requires_ephemeral = 10091;
constexpr std::uint16_t invalid_policy = 10094;
constexpr std::uint16_t invalid_sampling = 10095;
constexpr std::uint16_t wq_requires_explicit_ack = 10098;
constexpr std::uint16_t wq_multiple_unfiltered = 10099;
constexpr std::uint16_t wq_consumer_not_unique = 10100;
constexpr std::uint16_t wq_consumer_not_deliver_all = 10101;
constexpr std::uint16_t consumer_name_too_long = 10102;
constexpr std::uint16_t bad_durable_name = 10103;
constexpr std::uint16_t consumer_store_failed = 10104;
constexpr std::uint16_t description_too_long = 10107;
constexpr std::uint16_t fc_needs_heartbeats = 10108;
constexpr std::uint16_t invalid_deliver_subject = 10112;
constexpr std::uint16_t max_batch_negative = 10114;
constexpr std::uint16_t max_expires_too_small = 10115;
constexpr std::uint16_t max_deliver_backoff = 10116;
constexpr std::uint16_t max_ack_pending_excess = 10121;
constexpr std::uint16_t max_bytes_required = 10113;
constexpr std::uint16_t max_stream_bytes_exceeded = 10122;
constexpr std::uint16_t replicas_exceed_stream = 10126;
constexpr std::uint16_t consumer_path_separators = 10127;
constexpr std::uint16_t create_filter_mismatch = 10131;
constexpr std::uint16_t durable_name_differs = 10132;
constexpr std::uint16_t metadata_too_large = 10135;
constexpr std::uint16_t duplicate_filters = 10136;
constexpr std::uint16_t multiple_filters_subject_api = 10137;
constexpr std::uint16_t overlapping_filters = 10138;
constexpr std::uint16_t empty_filter = 10139;
constexpr std::uint16_t consumer_exists = 10148;
constexpr std::uint16_t consumer_does_not_exist = 10149;
constexpr std::uint16_t inactive_threshold_excess = 10153;
constexpr std::uint16_t pedantic = 10157;
constexpr std::uint16_t priority_needs_groups = 10159;
constexpr std::uint16_t priority_group_unknown = 10160;
constexpr std::uint16_t priority_group_empty = 10161;
constexpr std::uint16_t priority_group_invalid = 10162;
constexpr std::uint16_t priority_push = 10178;
constexpr std::uint16_t ack_wait_negative = 10183;
constexpr std::uint16_t backoff_negative = 10184;
constexpr std::uint16_t priority_groups_without_policy = 10196;
constexpr std::uint16_t pinned_ttl_without_policy = 10197;
constexpr std::uint16_t invalid_json = 10025;
constexpr std::uint16_t insufficient_resources = 10023;
constexpr std::uint16_t insufficient_memory = 10028;
constexpr std::uint16_t insufficient_storage = 10047;
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
constexpr std::uint16_t snapshot_deliver_subject = 10015;
constexpr std::uint16_t restore_subscribe = 10042;
constexpr std::uint16_t restore_failed = 10062;
constexpr std::uint16_t name_in_use_restore = 10130;
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
constexpr std::uint16_t consumer_replicas_match_stream = 10134;
constexpr std::uint16_t ttl_disabled = 10166;
constexpr std::uint16_t ttl_invalid = 10165;
constexpr std::uint16_t counters_disabled = 10168;
constexpr std::uint16_t counter_incr_missing = 10169;
constexpr std::uint16_t counter_has_payload = 10170;
constexpr std::uint16_t counter_incr_invalid = 10171;
constexpr std::uint16_t counter_broken = 10172;
constexpr std::uint16_t atomic_disabled = 10174;
constexpr std::uint16_t min_api_level = 10185;
constexpr std::uint16_t fast_batch_disabled = 10205;
constexpr std::uint16_t fast_batch_pattern = 10206;
constexpr std::uint16_t fast_batch_id_invalid = 10207;
constexpr std::uint16_t fast_batch_unknown = 10208;
constexpr std::uint16_t fast_batch_inflight = 10211;
constexpr std::uint16_t missing_subject_seq = 10193;
constexpr std::uint16_t schedules_disabled = 10188;
constexpr std::uint16_t schedule_pattern = 10189;
constexpr std::uint16_t schedule_target = 10190;
constexpr std::uint16_t schedule_ttl = 10191;
constexpr std::uint16_t schedule_rollup = 10192;
constexpr std::uint16_t schedule_source = 10203;
constexpr std::uint16_t invalid_reset = 10204;
constexpr std::uint16_t schedule_scheduler = 10212;
constexpr std::uint16_t schedule_time_zone = 10223;
constexpr std::uint16_t mirror_consumer_invalid = 10213;
constexpr std::uint16_t mirror_consumer_needs_ack_fc = 10214;
constexpr std::uint16_t source_consumer_invalid = 10215;
constexpr std::uint16_t source_consumer_duplicate = 10216;
constexpr std::uint16_t source_consumer_needs_ack_fc = 10217;
constexpr std::uint16_t ack_fc_requires_push = 10218;
constexpr std::uint16_t ack_fc_requires_fc = 10219;
constexpr std::uint16_t ack_fc_requires_max_ack_pending = 10220;
constexpr std::uint16_t ack_fc_requires_no_ack_wait = 10221;
constexpr std::uint16_t ack_fc_requires_no_max_deliver = 10222;
}  // namespace err

}  // namespace js
