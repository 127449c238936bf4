#pragma once
// One replica of a replicated consumer (issue 11): the consumer's durable state (delivered
// pair, ack floor, pending deliveries, redelivery counts) kept identical on every peer of
// the consumer's Raft group by applying its consumer ops in order, as nats-server
// replicates a consumer's store. Pure: entries, pulls, acks and `now` in, actions out.
//
// - The leader runs the existing consumer_state_machine (consumer.h) for the live work:
//   pull requests, deliveries, ack-wait redelivery, max_deliver. It is built afresh on each
//   election, once the consumer_leader_start entry it proposed is applied, from the
//   replicated state (consumer_state_machine::restore): nothing committed is forgotten,
//   pending deliveries are redelivered after their ack wait (from the replicated delivery
//   time), and delivery resumes after the replicated delivered stream sequence. It is built
//   only once this server's replica of the stream holds everything the consumer delivered
//   (on_stream_advanced): on a lagging stream replica a pending message would look deleted.
// - Each delivery goes out at once and is recorded as consumer_delivered (at-least-once, as
//   nats-server): if that entry is lost with its leader, a later leader delivers the message
//   again. A delivery the log refuses is withheld and the machine rebuilt at the next
//   election.
// - An ack is applied by the leader's machine at once (no redelivery while it commits) and
//   recorded as consumer_acked; it is confirmed (the ack-sync reply) only when applied. Only
//   an ack of a message the machine holds pending is recorded, so an applied ack always
//   follows the applied delivery it acknowledges (same leader, same term, earlier position).
// - Deliveries and acks collect in an outbox until the owner's flush() (once per turn): one
//   entry (consumer_updates, in the order they were made) for all of them.
// - Followers apply entries only; they neither deliver nor take acks (not_leader).
// Replicated ack floor: the delivered pair when nothing is pending, else just below the
// oldest pending delivery; it never moves back. An ack of an ack-all (or flow-control)
// consumer acknowledges every pending delivery up to it, on every replica as on the leader's
// machine; under ack none a delivery is never pending (the floor follows it).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/js/consumer.h"
#include "src/js/repl_entries.h"
#include "src/repl/replicated_log.h"

namespace js {

struct consumer_ack_confirm {
  std::uint64_t token = 0;  // the caller's handle of the ack (its reply subject)
  std::uint64_t stream_seq = 0;
};

enum class consumer_submit : std::uint8_t {
  done,        // taken (an ack: proposed, its confirmation follows on apply)
  ignored,     // an ack of nothing pending: not proposed, never confirmed
  not_leader,  // a follower: say nothing
  not_ready,   // leads, but its consumer_leader_start is not applied yet
};

class consumer_replica {
 public:
  consumer_replica(consumer_params params, message_source& src, repl::replicated_log& log,
                   std::string self);

  // After every event of the group: proposes consumer_leader_start on winning an election,
  // drops the machine on losing it.
  void on_role(base::nanos now);
  // The answer to queued proposals (deliveries and acks): tickets [first_ticket, +count)
  // have indexes from first_index on, or were refused (first_index 0). A refused delivery was
  // sent and a refused ack taken but neither is replicated: the machine is rebuilt from the
  // replicated state at the next leader_start (delivered again; the ack sync times out).
  void on_proposed(std::uint64_t first_ticket, std::uint64_t count, std::uint64_t first_index);

  consumer_submit pull(std::string reply, const pull_request& req, base::nanos now,
                       actions& out);
  consumer_submit ack(const ack_subject& subj, const ack_body& body, std::uint64_t token,
                      base::nanos now, actions& out);
  // The stream's local store now ends at last_seq; then the machine's timers.
  void on_stream_advanced(std::uint64_t last_seq, base::nanos now, actions& out);
  void tick(base::nanos now, actions& out);
  // Proposes the outbox (this turn's deliveries and acks) as one entry. The owner calls it
  // once per turn, before it hands the turn's proposals to the replication thread.
  void flush();
  bool has_unflushed() const { return !_outbox.empty(); }
  // The leader's: earliest instant tick() has work (consumer_state_machine::kNever if none).
  base::nanos next_deadline() const;
  // Push (the leader's): interest on the deliver subject, flow-control replies. Neither is
  // replicated; deliveries they start are, as every delivery.
  void set_push_interest(bool active, base::nanos now, actions& out);
  void on_flow_control_reply(const std::string& subject, base::nanos now, actions& out);
  // The consumer is deleted: the leader's waiting requests hear 409 Consumer Deleted.
  void on_delete(actions& out);
  // The leader's live numbers (waiting requests counted live); nullopt on a follower.
  std::optional<consumer_numbers> numbers(base::nanos now);

  // A new config (meta entry consumer_update) on every replica: the machine a leader builds
  // from now on uses `p` (its start_seq kept), the leader's live machine takes the updatable
  // fields, a new deliver subject and a changed pause (its advisory) at once. The caller
  // changes the message_source's filters first.
  void update(consumer_params p, base::nanos pause_until, base::nanos now, actions& out);
  // CONSUMER.RESET on the leader: proposes consumer_reset{floor} and restarts its machine
  // after `floor`; `token` is confirmed (like an ack) once the entry is applied.
  consumer_submit reset(std::uint64_t floor, std::uint64_t token, base::nanos now, actions& out);
  // UNPIN on the leader (pins are not replicated): false when `group` is not the pinned one.
  bool unpin(const std::string& group, base::nanos now, actions& out);
  base::nanos pause_until() const { return _pause_until; }

  // Every ack it took is applied (a scale waits for it; a delivery still in flight may be
  // made again by the next group: at-least-once).
  bool settled() const;
  // The state a scale carried into this new group (before any entry is applied).
  void seed(const repl_entries::consumer_seed& s);

  // A committed entry of the group, in index order; a snapshot entry restores one (log
  // compaction: installed from the leader, or this server's own at a restart).
  void apply(const repl::committed_entry& e, base::nanos now,
             std::vector<consumer_ack_confirm>& confirmed);
  // The replicated state at applied_index() (repl_entries::consumer_snapshot), and about how
  // many items it holds (pending deliveries and redelivery counts).
  std::vector<std::uint8_t> snapshot() const;
  std::size_t tracked() const { return _pending.size() + _redelivered.size(); }

  // Stream sequences the entries applied since the last call released (acknowledged, or
  // delivered under ack none): interest and work-queue retention may drop them. The caller
  // takes them after each apply.
  std::vector<std::uint64_t> take_released() { return std::exchange(_released, {}); }
  // Whether the replicated state still needs `seq` (a message it matches): not delivered yet
  // (and at or past where it starts), or delivered and not acknowledged.
  bool needs(std::uint64_t seq) const;

  // The replicated state (identical on every replica after the same entries).
  consumer_snapshot state() const;
  const sequence_pair& ack_floor() const { return _floor; }
  bool ready() const { return _machine != nullptr; }
  bool failed() const { return !_error.empty(); }
  const std::string& error() const { return _error; }
  std::uint64_t applied_index() const { return _applied_index; }
  const consumer_state_machine* machine() const { return _machine.get(); }  // the leader's

 private:
  struct pending_ack {
    std::uint64_t index = 0;  // 0 while queued (its ticket's index not known yet)
    std::uint64_t term = 0;
    std::uint64_t token = 0;
    std::uint64_t sseq = 0;
    std::uint64_t ticket = 0;
  };

  // Proposes the deliveries out[from..] added; withholds them if the log refuses.
  void replicate_deliveries(actions& out, std::size_t from, base::nanos now);
  void apply_delivered(const repl_entries::consumer_delivered& d);
  void apply_acked(const repl_entries::consumer_acked& a);  // then raise_floor()
  void raise_floor();  // from the pending deliveries (never back)
  void apply_reset(const repl_entries::consumer_reset& r);
  void lose_leadership();
  void restore(const repl::committed_entry& e);
  void maybe_resume(base::nanos now);
  void fail(std::string what);

  consumer_params _params;
  message_source& _src;
  repl::replicated_log& _log;
  std::string _self;

  bool _leading = false;
  bool _resume = false;             // leader_start applied, machine not built yet
  std::uint64_t _stream_last = 0;   // this server's stream replica's last sequence
  std::uint64_t _lead_term = 0;
  std::unique_ptr<consumer_state_machine> _machine;  // the leader's, once ready
  std::vector<pending_ack> _acks;                     // proposed, not yet applied
  std::vector<repl_entries::consumer_updates::update> _outbox;  // not proposed yet (flush)
  std::vector<std::pair<std::uint64_t, std::uint64_t>> _outbox_acks;  // their (token, sseq)

  std::uint64_t _applied_index = 0;
  sequence_pair _delivered;
  sequence_pair _floor;
  std::map<std::uint64_t, pending_entry> _pending;      // by stream seq
  std::map<std::uint64_t, std::uint64_t> _redelivered;  // stream seq -> redeliveries
  std::vector<std::uint64_t> _released;                 // see take_released
  bool _was_reset = false;  // a reset to floor 0: the machine restores it, not start_seq
  base::nanos _pause_until = 0;  // the config's (0: not paused)
  std::string _error;
};

}  // namespace js
