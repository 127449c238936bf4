#pragma once
// One replica of a replicated stream (num_replicas > 1): the pure state machine between a
// stream's Raft group and its store (issue 11: a PubAck only once a majority holds the
// message). No threads, clocks or sockets: publishes and committed entries come in with
// `now`, replies go out.
//
// - Only the leader takes writes, and only once the leader_start entry it proposed on
//   election is applied: everything committed before it is then in the store, so the
//   sequences it assigns continue the applied state (no duplicate, no gap).
// - The leader checks a publish (Nats-Msg-Id window, Expected-* headers, max_msg_size,
//   discard-new limits) against the applied state plus its proposed-but-uncommitted entries,
//   assigns sequence and timestamp, proposes, and answers only when the entry comes back
//   committed (a majority holds it durably) and is applied to its own store.
// - Followers refuse writes (not_leader: they are not subscribed, the caller says nothing).
// - Proposals may be asynchronous (replicated_log::propose_async `queued`: the group runs on
//   the replication thread): the entry's index comes later through on_proposed, always before
//   the entry itself is applied. Meanwhile the leader goes on proposing from its shadow state
//   (sequences, Msg-Ids, limits), so many publishes are in flight at once. A refused proposal
//   means this server no longer leads in that term: it and every later one of the term are
//   dropped without a reply (as a proposal lost with its leader), and the replica stops
//   taking writes until it leads again. `busy` (the hand-over queue is full) changes
//   nothing: the publish is offered again by the caller.
// - Every replica applies committed entries in index order with the leader's sequence and
//   timestamp; discard-old limits are applied after each append, the same everywhere.
// - A proposal whose index comes back with another term was lost with its leader: no reply
//   (the client times out and retries; a Msg-Id makes the retry a duplicate if the first
//   one did commit).
// - Expiry (max_age, Nats-TTL) is the leader's call: tick() proposes an expire entry with
//   its own time once the store says something is due, and every replica removes what has
//   expired at that time when it applies it. A follower never expires by its own clock, so
//   replicas with the same applied index hold the same messages.
// - Counters (allow_msg_counter): the leader computes each Nats-Incr's new total from the
//   subject's last value (its own pending proposals first), and every replica stores that
//   total; the PubAck carries it as "val". A purge or delete still in flight is not seen by
//   an increment proposed meanwhile (it counts on from the value before it).
// - Catch-up is the Raft log, compacted by snapshots (snapshot(): the store's messages, the
//   Msg-Id window and the applied config at the applied index; stream_replica_snapshot.cc):
//   a replica behind the leader's compacted log, or restarting, restores the snapshot in
//   place of the entries it covers, then applies the log after it.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/js/api_errors.h"
#include "src/js/atomic_batch.h"
#include "src/js/repl_entries.h"
#include "src/js/republish.h"
#include "src/js/stream_config.h"
#include "src/repl/replicated_log.h"
#include "storage/store.h"

namespace js {

struct replica_reply {
  // staged: a message of an atomic batch was taken, its commit is still to come (the
  // client hears a zero-byte ack).
  enum class kind : std::uint8_t { pub_ack, error, purged, deleted, staged };
  std::uint64_t token = 0;  // the caller's handle of the request (its reply subject)
  kind what = kind::pub_ack;
  std::uint64_t seq = 0;    // pub_ack: the message's (a batch's last) sequence; purged: count
  bool duplicate = false;
  std::optional<api_error> error;
  std::string batch;        // pub_ack of an atomic batch: its Nats-Batch-Id and message count
  std::uint64_t count = 0;
  std::string val;          // pub_ack on a counter stream: the subject's new total
};

enum class submit_status : std::uint8_t {
  proposed,    // a reply follows once the entry is applied (or never, if it is lost)
  answered,    // replied at once (an error, or a duplicate of an applied message)
  not_leader,  // a follower: say nothing
  not_ready,   // leads, but its leader_start is not applied yet (as during an election)
  busy,        // the log cannot take a proposal now: nothing done, offer it again later
};

// A RePublish copy of a message the leader applied (the caller sends it as a core publish).
struct republished_msg {
  std::string subject;
  std::string headers;
  std::string payload;  // empty when headers_only
};

// One message of an atomic batch as the replica proposes it (the standalone stream's staging
// type is atomic_batch.h's batch_msg).
struct replica_batch_msg {
  std::string subject;
  std::string headers;
  std::string payload;
};

class stream_replica {
 public:
  // await_leader_start off only in the simulation's test that shows why it is needed (a new
  // leader then numbers from whatever it has applied so far).
  stream_replica(stream_config cfg, storage::stream_store& store, repl::replicated_log& log,
                 std::string self, bool await_leader_start = true);

  // After every event of the group: proposes leader_start on winning an election, forgets
  // readiness on losing it.
  void on_role(std::int64_t now_ns);

  // `sourced`: a copy a source link brought (a counter stream aggregates it, below).
  submit_status publish(std::int64_t now_ns, std::string_view subject, std::string_view headers,
                        std::string_view payload, std::uint64_t token,
                        std::vector<replica_reply>& out, bool sourced = false);
  // A message carrying Nats-Batch-Id (publish() hands it here): staged until its batch's
  // commit, which is checked as a whole (the batch rules of stream_batch.cc) and proposed
  // as one entry, answered by one PubAck with "batch" and "count". Staging is the leader's
  // alone: a batch open when it loses the lead is gone (its commit fails on the next one).
  submit_status publish_atomic(std::int64_t now_ns, std::string_view subject, std::string_view headers,
                               std::string_view payload, std::uint64_t token, std::vector<replica_reply>& out);
  // An atomic batch: checked as a whole, one entry, one PubAck for its last sequence.
  submit_status publish_batch(std::int64_t now_ns, const std::vector<replica_batch_msg>& msgs,
                              std::uint64_t token, std::vector<replica_reply>& out, std::string batch_id = {});
  // A mirror's copy of its origin's message `m` (the origin's sequence and timestamp, no
  // reply): proposed unless a message at or after m.seq is taken already (answered). Every
  // replica stores it at m.seq; origin sequences skipped before it become a gap there too.
  submit_status copy_mirrored(repl_entries::msg m);
  // The last sequence this leader proposed (applied ones included).
  std::uint64_t taken_seq() const { return _next_seq - 1; }
  submit_status purge(const storage::purge_request& req, std::uint64_t token,
                      std::vector<replica_reply>& out);
  submit_status remove(std::uint64_t seq, bool erase, std::uint64_t token,
                       std::vector<replica_reply>& out);

  // The leader's clock: proposes an expire entry when something is due and no expiry is in
  // flight. Followers do nothing. Returns true when it proposed.
  bool tick(std::int64_t now_ns);
  // When tick() has work next (unix ns), 0 if nothing expires.
  std::int64_t next_expiry() const;

  // The answer to queued proposals: tickets [first_ticket, first_ticket + count) have log
  // indexes from first_index on, or were refused (first_index 0), all proposed in `term`.
  void on_proposed(std::uint64_t first_ticket, std::uint64_t count, std::uint64_t first_index,
                   std::uint64_t term);

  // A committed entry of the group, in index order (barrier and change entries included:
  // they only advance the applied index); a snapshot entry restores one.
  void apply(const repl::committed_entry& e, std::vector<replica_reply>& out);
  // The replicated state at applied_index() (repl_entries::stream_snapshot).
  std::vector<std::uint8_t> snapshot() const;
  // The same in two steps, so the owner's thread only copies: snapshot_source() takes the
  // small fields and a clone of the store (cheap: chunk copies, no per-message work), and
  // encode_snapshot() reads the messages from the clone and encodes, on any thread. A store
  // that cannot clone itself leaves `store` null: encode with snapshot() instead.
  struct snapshot_parts {
    repl_entries::stream_snapshot head;  // everything but the messages
    std::unique_ptr<storage::stream_store> store;
  };
  snapshot_parts snapshot_source() const;
  static std::vector<std::uint8_t> encode_snapshot(repl_entries::stream_snapshot head, storage::stream_store& store);

 private:
  repl_entries::stream_snapshot snapshot_head() const;

 public:

  // A group seeded by `origin` (a change of num_replicas, repl_entries::seed_done): no writes
  // until its seed_done is applied. The origin passes the messages it seeds with (sequence
  // order; `last_seq` the stream's last sequence, deleted ones included); when it leads it
  // proposes them after its leader_start. Any other leader before the seed asks to step down.
  void await_seed(std::string origin, std::vector<repl_entries::msg> msgs, std::uint64_t last_seq);
  bool seeded() const { return _seeded; }
  // True once after this leader found the group unseeded and cannot seed it.
  bool take_stepdown_wish() { return std::exchange(_stepdown_wish, false); }

  // Interest retention: whether a consumer of the stream matches `subject` (or this server
  // cannot tell); the leader stores nothing for a publish none matches (a no_interest entry).
  void set_interest_check(std::function<bool(std::string_view subject)> f) { _interest = std::move(f); }

  // The config the group was created (or scaled) with, from the meta entry at `meta_index`.
  void start_config(std::string config_json, std::uint64_t meta_index);
  // A STREAM.UPDATE applied from the meta group (entry `meta_index`; the storage type never
  // changes): it takes effect when its repl_entries::config_change entry is applied, which
  // the leader proposes (now, or once it is ready; a later leader proposes it if this one
  // could not). Later publishes are checked against it, discard-old limits trim at once.
  void want_config(std::string config_json, std::uint64_t meta_index);
  std::uint64_t config_index() const { return _config_index; }
  const std::string& config_json() const { return _config_json; }

  bool ready() const { return _ready; }
  bool failed() const { return !_error.empty(); }
  const std::string& error() const { return _error; }
  std::uint64_t applied_index() const { return _applied_index; }
  std::size_t pending() const { return _pending.size(); }  // proposed, not yet applied
  std::uint64_t pending_bytes() const { return _pending_bytes; }
  std::uint64_t lost_proposals() const { return _lost; }
  const stream_config& config() const { return _cfg; }
  // The RePublish copies of what this server applied while it led, in sequence order (as
  // nats-server, only the leader republishes; at most once, a plain core publish).
  std::vector<republished_msg> take_republished() { return std::exchange(_republished, {}); }
  // The leader's atomic batches given up since the last call: (batch id, advisory reason).
  std::vector<std::pair<std::string, std::string>> take_abandoned() { return std::exchange(_abandoned, {}); }

 private:
  struct pending_entry {
    std::uint64_t id = 0;      // this replica's handle of the proposal
    std::uint64_t ticket = 0;  // a queued proposal's, until its index is known
    std::uint64_t index = 0;   // 0 while unknown (queued)
    std::uint64_t term = 0;
    std::uint64_t token = 0;
    std::uint64_t msgs = 0;    // messages it adds
    std::uint64_t bytes = 0;   // their accounted size
    std::vector<std::string> subjects;
    std::vector<std::string> msg_ids;     // "" for a message without one
    std::string batch_id;                 // an atomic batch's, for its PubAck
    std::string val;                      // a counter's new total, for its PubAck
    std::vector<std::pair<std::uint64_t, std::uint64_t>> dup_tokens;  // (token, position): retries
                                                                     // of a Msg-Id in flight
  };
  struct dedup_entry {
    std::uint64_t seq;
    std::int64_t ts;
  };

  std::optional<api_error> check_batch_rules(std::int64_t now_ns, const std::vector<batch_msg>& msgs) const;
  std::optional<api_error> check_msg(std::int64_t now_ns, std::string_view subject,
                                     std::string_view headers, std::string_view payload,
                                     std::uint64_t extra_msgs, std::uint64_t extra_bytes,
                                     std::uint64_t& size, std::int64_t& ttl);
  std::uint64_t shadow_last_seq() const { return _next_seq - 1; }
  std::uint64_t shadow_subject_last(std::string_view filter);
  std::uint64_t pending_on_subject(std::string_view subject) const;
  submit_status propose(repl_entries::stream_op op, pending_entry p,
                        std::vector<replica_reply>& out, std::uint64_t token);
  void resolve_pending(std::uint64_t index, std::uint64_t term, std::uint64_t first_seq,
                       std::uint64_t last_seq, std::vector<replica_reply>& out,
                       replica_reply::kind what, std::uint64_t value,
                       std::optional<api_error> error);
  bool apply_msg(const repl_entries::msg& m);
  // An expire entry at the leader's `now` (stream_replica_expire.cc), with subject delete
  // markers when the config has them.
  void apply_expire(std::int64_t now);
  // Markers: while an expiry is in flight the leader proposes no message (the markers take
  // the next sequences when it applies).
  // A config change not applied yet may turn markers on before the expiry applies: held too.
  bool markers_pending() const {
    return _expire_index != 0 && (_cfg.subject_delete_marker_ttl > 0 || _want_index > _config_index);
  }
  void restore(const repl::committed_entry& e);
  void record_msg_id(std::string_view id, std::uint64_t seq, std::int64_t ts);
  void fail(std::string what);
  void resume_from_applied();
  void set_store_limits();
  void propose_seed();
  void set_config(stream_config cfg);
  void propose_config();
  // Counters (allow_msg_counter): the subject's last stored value as this leader will have it
  // (its own proposals first, then the store); false when there is none.
  bool counter_last(std::string_view subject, std::string& payload, std::string& headers);

  stream_config _cfg;
  storage::stream_store& _store;
  repl::replicated_log& _log;
  std::string _self;
  storage::byte_accounting _acct;

  bool _await_leader_start = true;
  bool _leading = false;
  bool _ready = false;
  std::uint64_t _lead_term = 0;
  std::uint64_t _next_seq = 1;      // leader: the sequence the next proposal takes
  std::int64_t _last_ts = 0;        // leader: timestamps never go backwards
  std::string _shadow_last_msg_id;  // leader: Nats-Msg-Id of the newest proposed message
  std::uint64_t _expire_index = 0;  // leader: its expire entry in flight, 0 if none
  std::uint64_t _expire_ticket = 0; // leader: that entry's ticket while its index is unknown
  std::uint64_t _refused_term = 0;  // a proposal of this term was refused: it is lost
  std::uint64_t _next_pending_id = 1;
  std::uint64_t _pending_msgs = 0;
  std::uint64_t _pending_bytes = 0;
  std::deque<pending_entry> _pending;
  std::unordered_map<std::string, std::uint64_t> _pending_ids;  // Msg-Id -> pending_entry id

  // Replicated state (identical on every replica after the same entries).
  std::uint64_t _applied_index = 0;
  std::unordered_map<std::string, dedup_entry> _dedup;
  std::deque<std::pair<std::int64_t, std::string>> _dedup_order;
  std::string _last_msg_id;
  std::uint64_t _lost = 0;
  std::string _error;

  bool _seeded = true;              // replicated: false until the group's seed_done applies
  std::string _seed_origin;
  std::vector<repl_entries::msg> _seed;  // on the origin only
  std::uint64_t _seed_last = 0;
  bool _stepdown_wish = false;

  atomic_batch_table _batches;      // leader: atomic batches staged until their commit
  std::vector<std::pair<std::string, std::string>> _abandoned;  // for take_abandoned()
  subject_rewrites _rewrites;       // the config's subject_transform and republish
  std::function<bool(std::string_view)> _interest;  // set_interest_check
  // leader: the last counter value it proposed per subject (its sequence, payload, headers),
  // valid while that sequence is not applied yet
  struct counter_value {
    std::uint64_t seq = 0;
    std::string payload, headers;
  };
  std::unordered_map<std::string, counter_value> _counters;
  std::vector<republished_msg> _republished;

  // The applied config's meta entry and JSON (replicated state), and the newest one the meta
  // group gave this server (to propose when leading).
  std::uint64_t _config_index = 0;
  std::string _config_json;
  std::uint64_t _want_index = 0;
  std::string _want_json;
  std::uint64_t _config_proposed_term = 0;  // leader: the term in which _want_index was proposed
  std::uint64_t _config_proposed_index = 0;
};

}  // namespace js
