#pragma once
// ConsumerConfig and the create request: strict decoding,
// nats-server's defaults, validation against the parent stream, the update rules and the
// JSON the server echoes.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/js/api_errors.h"
#include "src/js/consumer.h"
#include "src/js/stream_config.h"

namespace js {

enum class deliver_policy : std::uint8_t { all, last, new_, by_start_sequence, by_start_time, last_per_subject };
enum class replay_policy : std::uint8_t { instant, original };

constexpr std::int64_t kDefaultAckWait = 30 * base::kSecond;
constexpr std::int64_t kDefaultMaxWaiting = 512;
constexpr std::int64_t kDefaultMaxAckPending = 1000;
constexpr std::int64_t kEphemeralInactive = 5 * base::kSecond;
constexpr std::int64_t kDefaultPinnedTtl = 120 * base::kSecond;
// The heartbeat of sourcing consumers, and the only one the flow_control ack policy allows.
constexpr std::int64_t kSourceHeartbeat = base::kSecond;

struct consumer_config {
  std::string durable_name;
  std::string name;
  std::string description;
  deliver_policy deliver = deliver_policy::all;
  std::uint64_t opt_start_seq = 0;
  std::optional<std::int64_t> opt_start_time;  // unix ns
  ack_policy ack = ack_policy::none;
  std::int64_t ack_wait = 0;
  std::int64_t max_deliver = 0;
  std::vector<std::int64_t> backoff;
  std::string filter_subject;
  std::vector<std::string> filter_subjects;
  replay_policy replay = replay_policy::instant;
  std::uint64_t rate_limit_bps = 0;
  std::string sample_freq;
  std::int64_t max_waiting = 0;
  std::int64_t max_ack_pending = 0;
  bool flow_control = false;
  bool headers_only = false;
  std::int64_t max_batch = 0;
  std::int64_t max_expires = 0;
  std::int64_t max_bytes = 0;
  std::string deliver_subject;
  std::string deliver_group;
  std::int64_t idle_heartbeat = 0;
  std::int64_t inactive_threshold = 0;
  std::int64_t num_replicas = 0;
  bool mem_storage = false;
  bool direct = false;
  std::map<std::string, std::string> metadata;  // without the server's _nats.ver/_nats.level
  std::optional<std::int64_t> pause_until;      // unix ns
  std::vector<std::string> priority_groups;
  priority_policy priority = priority_policy::none;
  std::int64_t priority_timeout = 0;

  bool push() const { return !deliver_subject.empty(); }
  bool durable() const { return !durable_name.empty(); }
  // Filters as one list (empty = everything).
  std::vector<std::string> filters() const;
  // The same to match subjects against: a lone ">" is no filter (empty: every subject).
  std::vector<std::string> match_filters() const;
};

enum class create_action : std::uint8_t { create_or_update, create, update };

struct create_request {
  std::string stream_name;
  consumer_config config;
  create_action action = create_action::create_or_update;
  bool pedantic = false;
};

// Strict decode of a CONSUMER.CREATE / DURABLE.CREATE body (unknown field -> 10025).
std::optional<api_error> parse_create_request(std::string_view body, create_request& out);
// The request subject against its body (CREATE.<s>[.<name>[.<filter>]] or DURABLE.CREATE.<s>.<name>):
// the stream, durable and filter checks in nats-server's order; sets config.name from the
// subject when it has one.
std::optional<api_error> check_create_subject(create_request& req, std::string_view stream_name, std::string_view name,
                                              std::string_view filter, bool durable_api, bool subject_has_name);
// Lenient decode of a stored config (consumer meta file).
std::optional<consumer_config> consumer_config_from_json(const ojson& j);

// JSApiConsumerPauseRequest {"pause_until": RFC 3339}: `until` is empty to resume (no body, no
// field, or the zero time). 10025 as nats-server's decoder judges the body.
std::optional<api_error> parse_pause_request(std::string_view body, std::optional<std::int64_t>& until);
// JSApiConsumerUnpinRequest {"group": "..."}: 10025 for a bad body or a missing group.
std::optional<api_error> parse_unpin_request(std::string_view body, std::string& group);

// JSApiConsumerResetRequest {"seq": N} (consumer_reset.cc): `seq` empty for the ack floor.
std::optional<api_error> parse_reset_request(std::string_view body, std::optional<std::uint64_t>& seq);
// Where a RESET to `seq` (empty: the ack floor) restarts delivery: after stream sequence
// `floor`; 10204 where the deliver policy does not allow that sequence.
std::optional<api_error> reset_floor(const consumer_config& cfg, std::optional<std::uint64_t> seq,
                                     std::uint64_t ack_floor, message_source& src, std::uint64_t& floor);
// A priority group name (UNPIN): up to 16 of [A-Za-z0-9-_/=], else 10162.
std::optional<api_error> check_priority_group_name(std::string_view group);

// nats-server's defaults (setConsumerConfigDefaults), given the parent stream (consumer_limits). pedantic: a value that
// would be changed is an error (10157) instead.
// account_max_ack_pending: the account's jetstream `max_ack_pending` (> 0: a ceiling and the
// default's cap; nats-server's JetStreamAccountLimits.MaxAckPending).
std::optional<api_error> normalise(consumer_config& c, const stream_config& s, bool pedantic,
                                   std::int64_t account_max_ack_pending = -1);
// nats-server's checks against the parent stream (checkConsumerCfg); call after normalise.
std::optional<api_error> validate(const consumer_config& c, const stream_config& s,
                                  std::int64_t account_max_ack_pending = -1);
// May `old` become `next` (both normalised; nats-server's checkNewConsumerConfig)? push_bound: a subscriber is bound now.
std::optional<api_error> check_update(const consumer_config& old, const consumer_config& next, bool push_bound);
// Work-queue rules for consumer `c` of stream `s` beside the stream's `others` (every other
// consumer; 10099 / 10100 / 10101 / 10098); nothing on other retention policies.
std::optional<api_error> check_workqueue(const stream_config& s, const consumer_config& c,
                                         const std::vector<const consumer_config*>& others);
// Valid consumer name (durable or name) or the error.
std::optional<api_error> check_consumer_name(std::string_view name);

// JSON as nats-server writes it; with_server_meta adds _nats.ver/_nats.level.
ojson to_json(const consumer_config& c, bool with_server_meta);
// Identity for action "create" (server-managed metadata ignored).
bool same_config(const consumer_config& a, const consumer_config& b);

std::string_view to_string(deliver_policy d);
std::string_view to_string(ack_policy a);
std::string_view to_string(replay_policy r);
std::string_view to_string(priority_policy p);

// The state machine's parameters (start_seq resolved by the caller).
consumer_params to_params(const consumer_config& c, const stream_config& s, std::string_view stream_name,
                          std::string_view consumer_name);

}  // namespace js
