#pragma once
// The JetStream consumer as a pure state machine: events plus `now` in, actions out. No threads, no I/O, no clock.
// The agent around it (consumer thread) supplies time, store reads through
// `message_source`, sends what comes out, and persists `snapshot()`.
//
// Time: every `now`/deadline is in one caller-chosen nanosecond base. Use unix-epoch ns if
// the snapshot is to survive a restart (pending delivery times are stored in it).
//
// Wiring (the agent): feed on_stream_advanced / on_pull / on_ack / set_push_interest /
// on_flow_control_reply, call tick() at next_deadline(), then send the actions in order:
// delivery -> load the message, MSG/HMSG to `to` with reply encode_ack_subject(...) (+
// Nats-Pin-Id, headers_only rewrite); status_reply -> HMSG to `to` with render() and an
// empty payload (reply = `reply`); advisory -> JSON on $JS.EVENT.ADVISORY.CONSUMER.*;
// released -> retention (work queue: delete; interest: delete when no consumer needs() it);
// inactive -> delete the consumer. Persist snapshot() after acks/deliveries as the store
// sees fit.
#include "src/base/histogram.h"
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "src/base/clock.h"
#include "src/js/ack.h"
#include "src/js/pull_request.h"

namespace js {

// flow_control (2.14, durable sourcing): like `all`, but the acks are the receiver's answers
// to flow-control requests (Nats-Last-Stream), and nothing is redelivered by time.
enum class ack_policy : std::uint8_t { none, all, explicit_, flow_control };
enum class priority_policy : std::uint8_t { none, overflow, pinned_client, prioritized };

// Effective (already defaulted and validated) config fields the machine acts on.
struct consumer_params {
  std::string stream_name;    // for ack-subject sizes (pull max_bytes accounting)
  std::string consumer_name;
  ack_policy ack = ack_policy::none;
  base::nanos ack_wait = 30 * base::kSecond;
  std::vector<base::nanos> backoff;  // non-empty: wait for redelivery r is backoff[min(r,n-1)]
  std::int64_t max_deliver = -1;     // -1 unlimited
  std::int64_t max_ack_pending = 1000;  // <= 0 unlimited (ack none ignores it)
  std::int64_t max_waiting = 512;
  std::int64_t max_batch = 0;        // 0 = no limit
  std::int64_t max_bytes = 0;
  base::nanos max_expires = 0;
  bool headers_only = false;
  bool replay_original = false;      // pace new messages by their stored time gaps
  // Push mode (deliver_subject set): deliveries go there while someone is subscribed.
  std::string deliver_subject;
  base::nanos idle_heartbeat = 0;    // push only
  bool flow_control = false;         // push only; needs idle_heartbeat
  std::uint64_t rate_limit_bps = 0;  // push only; 0 = unlimited
  std::uint64_t rate_burst = 0;      // bytes; the stream's max msg size or max_payload
  // Flow-control tokens (4 chars [0-9A-Za-z] in nats-server); injected for determinism.
  std::function<std::string()> new_fc_token;
  // Deliver policy resolved by the caller (all/last/new/by_start_*). last_per_subject: the
  // message_source yields the per-subject last messages first, then new ones.
  std::uint64_t start_seq = 1;
  priority_policy priority = priority_policy::none;
  std::vector<std::string> priority_groups;
  base::nanos priority_timeout = 0;  // pinned_client TTL
  base::nanos inactive_threshold = 0;  // 0 = never expire
  // Pin ids are NUIDs; injected so the machine stays deterministic.
  std::function<std::string()> new_pin_id;
  // Does a pull request's reply subject have a subscriber now? Asked before a delivery, a
  // request heartbeat and a no_wait / max_waiting decision, as nats-server does; a request
  // without interest is dropped silently (its client may come back while it waits, so it
  // is not dropped sooner). Unset = always.
  std::function<bool(const std::string&)> has_interest;
  // sample_freq: this percentage of explicit acks produces an ack metric; the roll (0-99)
  // is injected like the other randomness. Unset roll = never sample below 100 %.
  int sample_pct = 0;
  std::function<int()> sample_roll;
};

// What the store knows about one stored message (sizes in wire bytes).
struct msg_meta {
  std::uint64_t seq = 0;
  std::int64_t timestamp = 0;  // stored time, unix ns (goes into the ack subject)
  std::uint32_t subject_len = 0;
  std::uint32_t hdr_len = 0;   // full "NATS/1.0..." block, 0 if none
  std::uint32_t payload_len = 0;
};

// Store access, filtered by the consumer's filter subject(s). Called synchronously from
// inside the machine's events; count_matching runs once per delivery (the ack subject's
// pending token), so it should be cheap (per-subject counts, not a scan).
class message_source {
 public:
  virtual ~message_source() = default;
  // First message matching the filter with seq >= from; nullopt if none (yet).
  virtual std::optional<msg_meta> next_matching(std::uint64_t from) = 0;
  // One message (for redelivery); nullopt if it was deleted from the stream.
  virtual std::optional<msg_meta> load(std::uint64_t seq) = 0;
  // Number of matching messages with seq >= from (num_pending).
  virtual std::uint64_t count_matching(std::uint64_t from) = 0;
};

struct sequence_pair {
  std::uint64_t consumer_seq = 0;
  std::uint64_t stream_seq = 0;
  bool operator==(const sequence_pair&) const = default;
};

// ---- actions -------------------------------------------------------------------------

// Send stream message `stream_seq` to `to` with the ack subject built from these fields.
struct delivery {
  std::string to;                // pull request reply subject
  std::uint64_t stream_seq = 0;
  std::uint64_t consumer_seq = 0;
  std::uint64_t delivery_count = 0;
  std::uint64_t pending = 0;     // last ack-subject token
  std::int64_t timestamp = 0;
  std::string pin_id;            // add header Nats-Pin-Id when non-empty
  std::uint64_t size = 0;        // bytes charged to the request's max_bytes
};

// An HMSG with an empty payload to `to`; render() gives the header block.
struct status_reply {
  std::string to;
  int code = 0;
  std::string description;
  bool pending_headers = false;  // Nats-Pending-Messages / Nats-Pending-Bytes
  std::int64_t pending_msgs = 0;
  std::int64_t pending_bytes = 0;
  bool last_headers = false;     // 100 Idle Heartbeat: Nats-Last-Consumer / Nats-Last-Stream
  std::uint64_t last_consumer = 0;
  std::uint64_t last_stream = 0;
  std::string stalled;           // push heartbeat: Nats-Consumer-Stalled: <fc subject>
  std::string reply;             // push flow-control request: the $JS.FC... reply subject
  std::string render() const;
};

enum class advisory_kind : std::uint8_t {
  max_deliveries, nak, terminated, pinned, unpinned, pause,
  ack_metric  // $JS.EVENT.METRIC.CONSUMER.ACK (sample_freq)
};

struct advisory {
  advisory_kind kind = advisory_kind::max_deliveries;
  std::uint64_t stream_seq = 0;
  std::uint64_t consumer_seq = 0;
  std::uint64_t deliveries = 0;
  std::string reason;            // terminated: +TERM text; unpinned: "timeout"/"admin"
  std::string group;             // pinned/unpinned
  std::string pin_id;            // pinned
  bool paused = false;           // pause
  base::nanos pause_until = 0;
  base::nanos ack_time = 0;      // ack_metric: from the (last) delivery to the ack
};

// The consumer no longer needs `stream_seq` (acked, termed, or delivered with ack none):
// a work-queue stream deletes it; an interest stream deletes it once no consumer needs it.
struct released {
  std::uint64_t stream_seq = 0;
};

// Ephemeral consumer reached inactive_threshold: the caller deletes it.
struct inactive {};

using action = std::variant<delivery, status_reply, advisory, released, inactive>;
using actions = std::vector<action>;

// A MSG.NEXT body parsed; one that does not parse gets its 400 status to `reply` in `out`
// and nullopt.
std::optional<pull_request> parse_pull_or_400(std::string_view reply, std::string_view body, actions& out);

// ---- state ---------------------------------------------------------------------------

struct pending_entry {
  std::uint64_t consumer_seq = 0;  // of the latest delivery
  base::nanos delivered_at = 0;    // restarted by +WPI; shifted by -NAK with delay
  bool operator==(const pending_entry&) const = default;
};

// Durable part of the state, for the consumer store.
struct consumer_snapshot {
  sequence_pair delivered;   // last handed out
  sequence_pair ack_floor;
  std::vector<std::pair<std::uint64_t, pending_entry>> pending;        // by stream seq
  std::vector<std::pair<std::uint64_t, std::uint64_t>> redelivered;   // sseq -> redeliveries
  bool operator==(const consumer_snapshot&) const = default;
};

struct consumer_numbers {
  sequence_pair delivered;
  sequence_pair ack_floor;
  std::uint64_t num_ack_pending = 0;
  std::uint64_t num_redelivered = 0;
  std::uint64_t num_waiting = 0;
  std::uint64_t num_pending = 0;
  bool paused = false;
  base::nanos pause_remaining = 0;
  bool push_bound = false;
  std::string pinned_id;
  base::nanos pinned_at = 0;
};

struct waiting_request {
  std::uint64_t serial = 0;
  std::string reply;
  std::int64_t n = 0;           // batch left
  std::int64_t b = 0;           // bytes left (max_bytes > 0)
  bool has_bytes = false;
  std::int64_t d = 0;           // delivered so far
  bool no_wait = false;
  base::nanos expires_at = 0;   // 0 = never
  base::nanos hb = 0;
  base::nanos hb_next = 0;
  std::string group;
  std::int64_t min_pending = 0;
  std::int64_t min_ack_pending = 0;
  std::string id;
  int priority = 0;
};

class consumer_state_machine {
 public:
  static constexpr base::nanos kNever = std::numeric_limits<base::nanos>::max();

  consumer_state_machine(consumer_params params, message_source& src, base::nanos now);
  consumer_state_machine(const consumer_state_machine&) = delete;
  consumer_state_machine& operator=(const consumer_state_machine&) = delete;

  // Stream appended messages up to `last_seq`: deliver to waiting requests.
  void on_stream_advanced(std::uint64_t last_seq, base::nanos now, actions& out);
  // A parsed pull request (MSG.NEXT or the body of +NXT) answered on `reply`.
  void on_pull(std::string reply, const pull_request& req, base::nanos now, actions& out);
  // An ack on subject `subj`; returns whether to send the empty ack-sync reply (if the ack
  // had a reply subject). For +NXT the caller then parses next_body and calls on_pull with
  // the ack message's reply subject.
  bool on_ack(const ack_subject& subj, const ack_body& body, base::nanos now, actions& out);
  // Timers: request expiry and heartbeats, redelivery deadlines, pin TTL, pause end,
  // inactivity. Then delivers whatever became possible.
  void tick(base::nanos now, actions& out);
  // Earliest instant at which tick() has work; kNever if none.
  base::nanos next_deadline() const;

  // PAUSE API / pause_until in a new consumer's config; until <= now resumes.
  void set_pause(base::nanos until, base::nanos now, actions& out);
  // UNPIN API; false if `group` is not the pinned group.
  bool unpin(const std::string& group, base::nanos now, actions& out);
  // Updatable config fields (ack_wait, backoff, max_deliver, max_ack_pending, limits...).
  void update(const consumer_params& p, base::nanos now, actions& out);
  // The reply subject lost interest: drop its requests silently.
  void drop_requests(const std::string& reply);
  // Drops every waiting request whose reply subject has no interest (has_interest).
  void drop_uninterested();
  // Consumer being deleted: every waiting request gets 409 Consumer Deleted.
  void on_delete(actions& out);
  // Server stopping: every waiting request gets 409 Server Shutdown with pending headers.
  void on_shutdown(actions& out);
  // Messages removed from the stream (limits, delete): pending ones are terminated.
  void on_removed(std::uint64_t seq, base::nanos now, actions& out);
  // A purge left the stream starting at `first`; `gone` = pending sequences the purge took
  // (all below `first`, plus any a filtered purge removed above it). As nats-server: they
  // leave pending silently, delivery skips to `first`, the ack floor follows, and with
  // nothing pending both floors equal the delivered pair.
  void on_purged(std::uint64_t first, const std::vector<std::uint64_t>& gone, base::nanos now, actions& out);

  // Push: interest on deliver_subject appeared/disappeared (push_bound).
  void set_push_interest(bool active, base::nanos now, actions& out);
  // Push: a (possibly empty) publish to a $JS.FC... subject this consumer issued. `last` =
  // its Nats-Last-Consumer / Nats-Last-Stream headers: with ack_policy flow_control they ack
  // everything up to that stream sequence (from any of this consumer's FC subjects).
  void on_flow_control_reply(const std::string& subject, base::nanos now, actions& out,
                             std::optional<sequence_pair> last = std::nullopt);
  // Push: deliver_subject changed while unbound; everything pending is redelivered.
  void rebind_push(std::string deliver_subject, base::nanos now, actions& out);

  consumer_numbers numbers(base::nanos now) const;
  consumer_snapshot snapshot() const;
  const sequence_pair& ack_floor() const { return _floor; }
  // On a freshly built machine after a restart: replaces the durable state (waiting
  // requests, pins, push interest and flow control are not durable). Pending messages whose
  // deadline passed are redelivered from the next tick().
  void restore(const consumer_snapshot& s, base::nanos now);
  // CONSUMER.RESET (ADR-57): pending, redeliveries and both consumer sequences start over, as
  // a new consumer starting after stream sequence `floor` (the ack floor stays there); then
  // delivers to the waiting requests. Acks of earlier deliveries find nothing pending.
  void reset(std::uint64_t floor, base::nanos now, actions& out);

  // Interest retention: does this consumer still need `seq`? (It matched the filter.)
  bool needs(std::uint64_t seq) const;
  // Nothing below this is needed (the ack floor + 1, or a kept max-delivered message below it).
  std::uint64_t needed_from() const;

  // Introspection for tests and the agent.
  const std::map<std::uint64_t, pending_entry>& pending() const { return _pending; }
  // Delivery (or the last +WPI) -> ack, per acked message (/metrics).
  const base::latency_histogram& ack_latency() const { return _ack_latency; }
  const std::deque<std::uint64_t>& redelivery_queue() const { return _rdq; }
  const std::deque<waiting_request>& waiting() const { return _waiting; }
  std::uint64_t delivery_count(std::uint64_t seq) const;
  const std::string& pin_id() const { return _pin; }
  std::uint64_t next_stream_seq() const { return _sseq; }  // the next to consider for first delivery

 private:
  struct candidate {
    msg_meta meta;
    bool redelivery = false;
  };

  base::nanos wait_for(std::uint64_t redeliveries) const;
  base::nanos deadline_of(std::uint64_t sseq, const pending_entry& e) const;
  void arm(std::uint64_t sseq);
  void disarm(std::uint64_t sseq);
  bool paused(base::nanos now) const { return _pause_until > now; }
  bool ack_pending_full() const;
  std::optional<candidate> next_candidate(base::nanos now, actions& out);
  std::uint64_t msg_size(const msg_meta& m, std::uint64_t dc, std::uint64_t dseq,
                         std::uint64_t pending, const std::string& pin) const;
  std::uint64_t num_pending() const;
  void deliver(base::nanos now, actions& out);
  void commit(const candidate& c, std::uint64_t dc, std::uint64_t pend, std::uint64_t size,
              const std::string& to, base::nanos now, actions& out);
  void deliver_push(base::nanos now, actions& out);
  void push_heartbeat(base::nanos now, actions& out);
  // The 100 "Idle Heartbeat" status to `to`, with the last delivered sequences.
  status_reply idle_heartbeat(std::string to) const;
  void request_flow_control(actions& out);
  bool push() const { return !_p.deliver_subject.empty(); }
  base::nanos inactive_deadline() const;
  bool idle_for_inactivity() const { return push() ? !_push_active : _waiting.empty(); }
  void finish_no_wait(actions& out);
  void remove_pending(std::uint64_t sseq);
  void advance_floor_after(std::uint64_t sseq, std::uint64_t dseq);
  void ack_one(std::uint64_t sseq, base::nanos now, actions& out);
  bool should_sample();
  void ack_all_upto(std::uint64_t sseq, std::uint64_t dseq, base::nanos now, actions& out);
  void expire_to_redelivery(std::uint64_t sseq, base::nanos now, actions& out);
  void terminate(std::uint64_t sseq, const std::string& reason, bool release, actions& out);
  void enqueue(waiting_request w);
  void requeue(waiting_request w);
  void expire_requests(base::nanos now, actions& out);
  bool interested(const waiting_request& w) const { return !_p.has_interest || _p.has_interest(w.reply); }
  void set_pin(const std::string& id, base::nanos now, actions& out);
  void clear_pin(const char* reason, actions& out);
  status_reply status(const waiting_request& w, int code, std::string text, bool pend) const;

  consumer_params _p;
  message_source& _src;

  std::uint64_t _sseq = 1;  // next stream seq to consider for first delivery
  std::uint64_t _dseq = 1;  // next consumer seq
  std::uint64_t _last_stream_seq = 0;
  sequence_pair _floor;
  std::map<std::uint64_t, pending_entry> _pending;
  base::latency_histogram _ack_latency;
  std::map<std::uint64_t, std::uint64_t> _rdc;      // sseq -> redeliveries so far
  std::set<std::uint64_t> _max_delivered;           // kept for DLQ, no longer pending
  std::deque<std::uint64_t> _rdq;                   // redelivery order
  std::set<std::uint64_t> _rdq_set;
  std::set<std::pair<base::nanos, std::uint64_t>> _timers;  // ack-wait deadlines

  std::deque<waiting_request> _waiting;
  std::uint64_t _next_serial = 1;

  std::string _pin;
  base::nanos _pinned_at = 0;
  base::nanos _pin_deadline = kNever;
  std::uint64_t _pin_serial_counter = 0;

  base::nanos _pause_until = 0;
  base::nanos _last_activity = 0;
  bool _inactive_sent = false;
  // replay_policy original: stored time and delivery time of the last new message.
  std::int64_t _replay_prev_ts = 0;
  base::nanos _replay_prev_at = 0;
  base::nanos _replay_due = 0;  // the next new message is held until then (0 = not held)

  // Push state.
  bool _push_active = false;
  base::nanos _push_hb_next = 0;
  std::uint64_t _fc_window = 2u << 20;  // doubles per answered request, up to 32 MiB
  std::uint64_t _fc_outstanding = 0;    // bytes sent and not yet confirmed
  std::uint64_t _fc_bytes_at_request = 0;
  std::string _fc_pending;              // subject of the unanswered request, if any
  std::uint64_t _fc_counter = 0;
  double _rl_tokens = 0;                // rate limit bucket (bytes); may go negative (debt)
  base::nanos _rl_at = 0;
  base::nanos _rl_due = 0;              // delivery held until then (0 = not held)
};

}  // namespace js
