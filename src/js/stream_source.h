#pragma once
// Mirrors and sources, the pure part: the StreamSource config (parse and
// validate), the internal consumer's create request, the ack-reply metadata a copier reads,
// the headers it strips or adds, and `source_tracker`, the copy/lag/retry bookkeeping of one
// mirror or source (events plus `now` in, decisions out; no I/O, no clock of its own).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/js/api_errors.h"
#include "src/js/stream_config.h"

namespace js {

struct source_spec {
  std::string name;
  std::uint64_t opt_start_seq = 0;
  std::int64_t opt_start_time = 0;  // unix ns, 0 = unset
  std::string filter_subject;
  std::vector<std::pair<std::string, std::string>> transforms;  // (src, dest); dest "" = keep
  std::string external_api;
  std::string external_deliver;
  // Durable sourcing (2.14, ADR-58): `consumer: {name, deliver_subject}` names a durable push
  // consumer with ack_policy flow_control, pre-created on the origin, used instead of an
  // ephemeral one; it is reset (CONSUMER.RESET), never created or deleted by the copier.
  std::string consumer_name;
  std::string consumer_deliver;
  bool durable() const { return !consumer_name.empty(); }
};

// Decodes one StreamSource object (already a JSON object); lenient about unknown fields.
source_spec parse_source_spec(const ojson& j);
// The mirror/sources rules of a stream config (10031..10154 family); nullopt when fine.
std::optional<api_error> validate_mirror_and_sources(const stream_config& cfg);
// nats-server's cycle check (checkStreamCfg, since 2.9): walks the sources and mirrors of
// `cfg` through the other streams' configs (`find`: nullptr when there is no such stream;
// external origins are not followed). A source naming a stream already visited is a cycle
// when its filter_subject is empty or overlaps the subjects of the stream that lists it; a
// mirror of a visited stream always is. Then 10052 "detected cycle".
using config_lookup = std::function<const stream_config*(std::string_view name)>;
std::optional<api_error> check_source_cycle(const stream_config& cfg, const config_lookup& find);
// The `external` prefixes (nats-server checkStreamCfg): a deliver prefix must be a literal
// subject (10024) and must not capture the subjects of the streams sourced here (10022); an
// api prefix must be a literal subject (10052) not overlapping $JS.API (10021). Then the cycle check.
std::optional<api_error> check_source_origins(const stream_config& cfg, const config_lookup& find);
// The filters the internal consumer uses (filter_subject, or each transform's src).
std::vector<std::string> source_filters(const source_spec& s);
// The subject after the source's transforms, or nullopt when no transform matches.
std::optional<std::string> apply_source_transforms(const source_spec& s, std::string_view subject);

// Durable sourcing: <api>.CONSUMER.RESET.<origin>.<consumer> (empty body: the consumer starts
// again after its ack floor, which the copier's answers moved).
std::string consumer_reset_subject(const source_spec& s);
// The reset response: the origin's error, or 10214 (mirror) / 10217 (source) when the consumer
// does not use ack_policy flow_control; nullopt when the copier may go on.
std::optional<api_error> check_reset_response(const ojson& j, bool mirror);
// The answer to a flow-control request (and to Nats-Consumer-Stalled): what this copier
// stored, which acks it on a flow_control consumer.
std::string flow_control_answer(std::uint64_t last_consumer, std::uint64_t last_stream);

// $JS.API.CONSUMER.CREATE.<origin>[.<name>.<filter>] is not used: the plain create subject
// with a config body works on every server level; `api` is external.api or "$JS.API".
std::string consumer_create_subject(const source_spec& s);
// The create request body: a direct, flow-controlled push consumer without acks starting at
// `start_seq` (0 = the spec's opt_start_* or everything).
std::string consumer_create_body(const source_spec& s, std::string_view deliver_subject,
                                 std::uint64_t start_seq, std::string_view self_stream, bool mirror);

// Metadata in a delivery's reply: $JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>
// (and the 11+ token form with domain and account hash).
struct delivery_meta {
  std::uint64_t delivered = 0;
  std::uint64_t stream_seq = 0;
  std::uint64_t consumer_seq = 0;
  std::int64_t ts = 0;
  std::uint64_t pending = 0;
};
std::optional<delivery_meta> parse_delivery_reply(std::string_view reply);

// The header block without Nats-Expected-* and Nats-Batch-* (and, for sources, without a
// previous hop's Nats-Stream-Source); "" when nothing remains.
std::string strip_copy_headers(std::string_view headers, bool drop_stream_source);
// A mirror's copy keeps Nats-TTL verbatim; a mirror that allows TTLs expires the copy by it
// (storage::ttl_none otherwise).
std::int64_t mirrored_ttl(bool allow_msg_ttl, std::string_view headers);
// 2.10+ Nats-Stream-Source value: "<origin> <seq> <filter|>> <dest|>> <subject>".
std::string stream_source_header(const source_spec& s, std::uint64_t origin_seq, std::string_view subject);
// (origin name, origin seq) from a stored Nats-Stream-Source value (2.9 and 2.10+ forms).
std::optional<std::pair<std::string, std::uint64_t>> parse_stream_source_header(std::string_view v);

// One mirror or source: which origin sequence it has copied, whether its consumer is set up,
// when to retry, and what StreamInfo reports (lag, active, error).
class source_tracker {
 public:
  enum class phase : std::uint8_t { idle, creating, active, backoff };
  enum class verdict : std::uint8_t {
    store,       // store it (a mirror skips `skip` sequences first)
    duplicate,   // already copied
    ignore,      // a redelivery
    recreate,    // a gap in the delivery sequence: set the consumer up again
  };
  struct decision {
    verdict v = verdict::ignore;
    std::uint64_t skip = 0;  // mirror: origin sequences lost between the last copied and this one
  };

  // Retry pacing: at least 2 s between attempts, then 5 s x 2 x failures, at most 2 min.
  static constexpr std::int64_t kMinRetryNs = 2'000'000'000;
  static constexpr std::int64_t kMaxRetryNs = 120'000'000'000;
  // An unanswered create (the request or its answer lost, e.g. sent while this server's API
  // was still starting) is sent again after 10 s, nats-server's source health-check interval.
  static constexpr std::int64_t kCreateTimeoutNs = 10'000'000'000;
  static constexpr std::int64_t kResetTimeoutNs = 5'000'000'000;  // durable sourcing
  // No message or heartbeat for this long (heartbeats come every second): set up again.
  static constexpr std::int64_t kStallNs = 10'000'000'000;

  // `copied` = last origin sequence already stored (0 = none yet).
  source_tracker(bool mirror, std::uint64_t copied, bool durable = false)
      : _mirror(mirror), _durable(durable), _copied(copied), _create_timeout(durable ? kResetTimeoutNs : kCreateTimeoutNs) {}

  // Time to send a create request? Returns the sequence to start at (copied + 1, or 0 for a
  // first setup that uses the spec's opt_start_*); moves to `creating`.
  std::optional<std::uint64_t> due_create(std::int64_t now);
  void create_ok(std::int64_t now);
  void create_failed(api_error e, std::int64_t now);
  // A data message's metadata; the caller stores it and then calls stored().
  decision on_data(const delivery_meta& d, std::int64_t now);
  void stored(std::uint64_t origin_seq) { _copied = std::max(_copied, origin_seq); }
  // Storing failed: start again after the last stored message.
  void store_failed(std::int64_t now) { restart(now); }
  // Idle heartbeat: Nats-Last-Consumer / Nats-Last-Stream. True when a delivery was missed
  // (the consumer is then set up again from copied + 1).
  bool on_heartbeat(std::uint64_t last_consumer, std::uint64_t last_stream, std::int64_t now);
  // Forget the consumer (config change, stop); the next due_create() comes at once.
  void restart(std::int64_t now);

  phase state() const { return _phase; }
  std::uint64_t copied() const { return _copied; }
  // Delivery sequence of the last message seen from the current consumer (0 = none yet).
  std::uint64_t last_delivery() const { return _dseq; }
  std::uint64_t lag() const { return _lag; }
  // ns since the origin was last heard from, -1 if never.
  std::int64_t active(std::int64_t now) const { return _last_heard == 0 ? -1 : now - _last_heard; }
  const std::optional<api_error>& error() const { return _error; }
  std::uint32_t failures() const { return _failures; }
  std::int64_t next_attempt() const { return _next_attempt; }
  // The earliest time due_create() may say yes or a stall is detected.
  std::int64_t next_deadline() const;

 private:
  bool _mirror;
  bool _durable;
  std::uint64_t _copied;
  std::int64_t _create_timeout;
  phase _phase = phase::idle;
  std::uint64_t _dseq = 0;  // last delivery sequence seen from the current consumer
  std::uint64_t _lag = 0;
  std::int64_t _last_heard = 0;
  std::int64_t _created_at = 0;
  std::int64_t _next_attempt = 0;
  std::int64_t _last_attempt = 0;
  bool _ever_created = false;
  std::uint32_t _failures = 0;
  std::optional<api_error> _error;
};

}  // namespace js
