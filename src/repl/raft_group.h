#pragma once
// One Raft group on this server: a thin wrapper over cowsql raft's raft_step() (no I/O of
// its own: raft_init with no raft_io and no raft_fsm). Events go in with the current time in
// milliseconds; what to do comes out as actions: frames to send, log writes started (report
// them back with on_persisted), committed entries to apply in order, and when to call
// on_timeout next. No threads, sockets or clocks: one pinned thread can drive many groups,
// and the simulation drives them all from one seeded loop.
//
// The hard state (term, vote) is saved through the log_store synchronously inside the call,
// before any frame of that call is returned, as Raft requires.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/repl/log_store.h"

struct raft;
struct raft_event;
struct raft_message;

namespace repl {

struct group_config {
  std::uint64_t group_id = 0;
  std::uint64_t self = 0;                // server id, > 0
  std::vector<std::uint64_t> voters;     // every member, self included (join: the known ones)
  // A server joining a formed group: no bootstrap; it starts with an empty log and waits for
  // the leader (which added it, see add_peer) to send the log from index 1. Self need not be
  // in `voters`, which only says whose frames to take until the configuration arrives.
  bool join = false;
  unsigned election_timeout_ms = 1000;   // raft randomizes each timeout in [t, 2t)
  unsigned heartbeat_timeout_ms = 100;
  std::uint32_t seed = 1;                // raft's pseudo-random generator (election jitter)
  bool pre_vote = true;                  // a partitioned server cannot disrupt the leader
  // Drop late and duplicate frames (see raft_codec.h). Off only in the test that shows why.
  bool drop_stale_frames = true;
  // Entries kept before a snapshot taken here, so a follower a little behind gets entries,
  // not the whole snapshot.
  unsigned snapshot_trailing = 512;
  unsigned install_snapshot_timeout_ms = 5000;  // resend an unanswered InstallSnapshot
};

enum class role : std::uint8_t { unavailable, follower, candidate, leader };
const char* role_name(role r);

struct outbound_frame {
  std::uint64_t to = 0;
  std::vector<std::uint8_t> frame;  // raft_codec format, tagged with the group
};

// value.type snapshot: the state machine replaces its state with value.data, the state after
// every entry up to `index` (installed from the leader, or this server's own at a restart).
struct committed_entry {
  std::uint64_t index = 0;
  entry value;  // barrier and change entries too: the state machine skips what it ignores
};

struct actions {
  std::vector<outbound_frame> sends;
  std::vector<committed_entry> applies;    // contiguous, ascending, each index once per start
  std::vector<std::uint64_t> writes;       // log_store seqs started in this call
  std::optional<std::uint64_t> timer_at;   // call on_timeout at this time (ms); replaces any
  void clear() { *this = actions{}; }
};

// queued and busy come only from a replicated_log whose group runs on another thread
// (replicated_log::propose_async): queued = handed over, `index` is the proposal's ticket and
// its log index comes later; busy = the hand-over queue is full, nothing was done.
enum class propose_status : std::uint8_t { ok, not_leader, failed, queued, busy };

struct propose_result {
  propose_status status = propose_status::failed;
  std::uint64_t index = 0;  // the entry's log index when ok (the first one's for a batch)
};

class raft_group {
 public:
  raft_group(group_config config, log_store& log);
  ~raft_group();
  raft_group(const raft_group&) = delete;
  raft_group& operator=(const raft_group&) = delete;

  // Loads the store (bootstrapping a new group: term 1 and the voters as entry 1) and starts
  // as follower. False when the stored state cannot be used; error() says why.
  bool start(std::uint64_t now_ms, actions& out);

  // A frame from a peer (one not met yet becomes known: a member added while this server was
  // away). Frames for another group or server, or malformed ones, are dropped and counted.
  void on_frame(std::uint64_t now_ms, std::span<const std::uint8_t> frame, actions& out);
  void on_timeout(std::uint64_t now_ms, actions& out);
  // The log_store made every write up to `seq` durable.
  void on_persisted(std::uint64_t now_ms, std::uint64_t seq, actions& out);

  propose_result propose(std::uint64_t now_ms, std::span<const std::uint8_t> data,
                         actions& out);
  // Several command entries in one submit: one log append (one journal record, one write)
  // and one AppendEntries per follower. On ok they take consecutive indexes from `index`.
  propose_result propose_batch(std::uint64_t now_ms,
                               std::span<const std::span<const std::uint8_t>> items,
                               actions& out);

  // The state machine's state after applying every entry up to `index` (<= last_applied()):
  // saved durably, then raft forgets the log before it (snapshot_trailing entries kept) and
  // sends it to a follower that needs what is gone. False (nothing done) when `index` is not
  // newer than the last snapshot or not in the log.
  // `file`/`crc`: the data is already in that snapshot file (snapshot_files.h), written off
  // this thread; empty: the store writes it.
  bool take_snapshot(std::uint64_t now_ms, std::uint64_t index,
                     std::shared_ptr<const std::vector<std::uint8_t>> data, actions& out,
                     std::string file = {}, std::uint32_t crc = 0);
  std::uint64_t snapshot_index() const;  // 0 when none

  // Membership (leader only, one change at a time; false when this server does not lead, a
  // change is still uncommitted, or the change makes no sense). add_peer adds `id` as a
  // standby (it gets the log, does not count for quorum); promote_caught_up makes a standby
  // whose log matches the commit index a voter (call it after events; true when it proposed);
  // remove_peer drops a member other than this server (hand leadership on first).
  bool add_peer(std::uint64_t now_ms, std::uint64_t id, actions& out);
  bool promote_caught_up(std::uint64_t now_ms, actions& out);
  bool remove_peer(std::uint64_t now_ms, std::uint64_t id, actions& out);
  struct member {
    std::uint64_t id;
    bool voter;
  };
  // The current (possibly uncommitted) configuration, as raft holds it.
  std::vector<member> members() const;
  bool is_member(std::uint64_t id) const;
  bool change_pending() const;  // a configuration change is not committed yet

  // Leader only: hands leadership to voter `to` (raft sends it TimeoutNow once its log is
  // caught up). False when this server does not lead or `to` is not another voter.
  bool transfer_leadership(std::uint64_t now_ms, std::uint64_t to, actions& out);
  // On the leader: how far `voter`'s log is known to match (0 when unknown).
  std::uint64_t match_index(std::uint64_t voter) const;
  std::uint64_t last_index() const;
  const std::vector<std::uint64_t>& voters() const { return _voters; }  // current voters

  role current_role() const;
  std::uint64_t term() const;
  std::uint64_t commit_index() const;
  std::uint64_t last_applied() const { return _last_applied; }
  std::uint64_t leader_id() const;  // 0 when unknown
  std::uint64_t id() const { return _config.self; }
  std::uint64_t dropped_frames() const { return _dropped; }
  std::uint64_t unencodable_messages() const { return _unencodable; }
  std::uint64_t stale_frames() const { return _stale; }  // late or duplicate, dropped
  // After a fatal raft error (a committed entry conflicting, out of memory) the group stops
  // taking events; error() says what happened.
  bool failed() const { return !_error.empty(); }
  const std::string& error() const { return _error; }
  // One line of internals for failure reports: raft's stored/last index, writes in flight.
  std::string debug_state() const;

 private:
  struct write_in_flight {
    std::uint64_t seq;
    std::uint64_t valid_upto;  // last index of this write that no later write replaced
  };
  int step(raft_event& ev, actions& out);
  void stage_entries(std::uint64_t first_index, const void* raft_entries, unsigned n,
                     actions& out);
  void apply_committed(actions& out);
  void fail(const char* what, int rv);
  int peer_index(std::uint64_t id) const;  // -1 when not a known peer
  void learn_members();  // known peers and voters from raft's configuration
  void add_known(std::uint64_t id);
  void fix_uncommitted_configuration_index();
  // A chunk of an InstallSnapshot from `peer`; or the InstallSnapshot itself, whose data is
  // completed from the chunks (false: pieces are missing, drop it).
  void take_chunk(int peer, std::uint64_t index, std::uint64_t offset, std::vector<std::uint8_t>& bytes);
  bool complete_snapshot(int peer, std::uint64_t offset, ::raft_message& m);
  int submit_entry(std::uint64_t now_ms, int type, std::span<const std::uint8_t> data, actions& out);
  bool submit_configuration(std::uint64_t now_ms, const std::vector<member>& next, actions& out);

  group_config _config;
  log_store& _log;
  std::unique_ptr<::raft> _raft;
  // Every server this group has known (configured, or seen in a configuration), in the order
  // met; never shrinks, so frames of a removed server are still matched (and raft ignores them).
  std::vector<std::uint64_t> _known;
  std::vector<std::uint64_t> _voters;
  std::vector<std::string> _addresses;  // parallel to _known
  struct peer_seq {
    std::uint64_t incarnation = 0;
    std::uint64_t seq = 0;
  };
  std::vector<std::uint64_t> _sent;    // per known peer: sequence of the last frame sent to it
  std::vector<peer_seq> _received;     // per known peer: newest frame taken from it
  std::uint64_t _incarnation = 0;
  std::deque<write_in_flight> _writes;
  std::vector<std::uint64_t> _pending_configurations;  // committed change entries (index > 1)
  struct snapshot_pieces {
    std::uint64_t index = 0;
    std::vector<std::uint8_t> bytes;
  };
  std::vector<snapshot_pieces> _pieces;  // per known peer: the InstallSnapshot being received
  std::uint64_t _last_applied = 0;
  std::uint64_t _dropped = 0;
  std::uint64_t _unencodable = 0;
  std::uint64_t _stale = 0;
  bool _started = false;
  std::string _error;
};

}  // namespace repl
