#pragma once
// StreamConfig: strict decoding of every field nats-server knows, nats-server's default
// normalisation, validation, the update rules and the JSON the server echoes.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/js/api_errors.h"

namespace js {

using ojson = nlohmann::ordered_json;

enum class retention_policy : std::uint8_t { limits, interest, workqueue };
enum class discard_policy : std::uint8_t { old_msgs, new_msgs };
enum class storage_type : std::uint8_t { file, memory };

constexpr std::int64_t kDefaultDuplicateWindow = 120'000'000'000;  // 2 minutes
constexpr std::int64_t kMinAge = 100'000'000;                      // 100 ms
// The API level this server reports ($JS.API.INFO api.level, `_nats.level`, the
// Nats-Required-Api-Level check). 2 = the 2.12.0 set: counters, atomic batches, message
// schedules, persist_mode async; 3 = late 2.12.x: the stream snapshot API with window_size
// (stream_snapshot.cc); 4 = 2.14: fast-ingest batches, consumer reset, ack_policy
// flow_control and durable sourcing, sourced streams without a default duplicate window.
constexpr int kApiLevel = 4;

struct stream_config {
  std::string name;
  std::string description;
  std::vector<std::string> subjects;
  retention_policy retention = retention_policy::limits;
  std::int64_t max_consumers = 0;
  std::int64_t max_msgs = 0;
  std::int64_t max_bytes = 0;
  std::int64_t max_age = 0;
  std::int64_t max_msgs_per_subject = 0;
  std::int64_t max_msg_size = 0;
  discard_policy discard = discard_policy::old_msgs;
  storage_type storage = storage_type::file;
  std::int64_t num_replicas = 0;
  bool no_ack = false;
  std::string template_owner;
  std::int64_t duplicate_window = 0;
  // Features of later issues are kept verbatim so they echo; enabling them is refused.
  ojson placement;
  ojson mirror;
  ojson sources;
  std::string compression = "none";
  std::uint64_t first_seq = 0;
  ojson subject_transform;
  ojson republish;
  bool allow_direct = false;
  bool mirror_direct = false;
  bool discard_new_per_subject = false;
  bool sealed = false;
  bool deny_delete = false;
  bool deny_purge = false;
  bool allow_rollup_hdrs = false;
  ojson consumer_limits = ojson::object();
  bool allow_msg_ttl = false;
  std::int64_t subject_delete_marker_ttl = 0;
  bool allow_msg_counter = false;
  bool allow_atomic = false;
  bool allow_msg_schedules = false;
  std::string persist_mode;
  bool allow_batched = false;
  std::map<std::string, std::string> metadata;
  bool pedantic = false;  // request-only

  bool has_mirror() const { return !mirror.is_null(); }
  bool has_sources() const { return sources.is_array() && !sources.empty(); }
};

// Strict decode of a request body (unknown field -> 10025).
std::optional<api_error> parse_stream_config(std::string_view body, stream_config& out);
// Decode of a stored config (meta file); lenient.
std::optional<stream_config> config_from_json(const ojson& j);

// nats-server's defaults (checkStreamCfg); returns a pedantic-mode error instead of fixing when cfg.pedantic.
std::optional<api_error> normalise(stream_config& cfg);
// nats-server's rules (10052 family and special codes); call after normalise.
std::optional<api_error> validate(const stream_config& cfg);
// nats-server's immutability rules (configUpdateCheck) for an update of `old` to `next` (both normalised).
std::optional<api_error> check_update(const stream_config& old, const stream_config& next);
// What Peregrine's replicated streams (num_replicas > 1) do not carry yet:
// subject delete markers and message schedules. A 10052 naming
// the feature, so a create or update is refused rather than accepted and silently ignored.
std::optional<api_error> check_replicated_features(const stream_config& cfg);
// Sealing forces its companions (deny_delete, deny_purge, no rollups).
void apply_seal(stream_config& cfg);

// A valid stream name (empty string) or the 10052 text.
std::string check_stream_name(std::string_view name);

// The JSON the server writes back; with_server_meta adds _nats.ver/_nats.level.
ojson to_json(const stream_config& cfg, bool with_server_meta);
// Configs equal for idempotent create (metadata version keys ignored).
bool same_config(const stream_config& a, const stream_config& b);

std::string_view to_string(retention_policy r);
std::string_view to_string(discard_policy d);
std::string_view to_string(storage_type s);

// o[key] when it is a string, else "" (sub-objects such as republish / subject_transform).
std::string string_field(const ojson& o, const char* key);

}  // namespace js
