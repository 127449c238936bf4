#pragma once
// The replication thread (`pg-repl`): drives every Raft group of this server from one loop.
// It owns the replication connections (repl_link, one per peer pair: the server whose name
// sorts lower dials the other's cluster port, and redials with backoff; the route listener
// hands over the accepted ones, see adopt_connection), the shared disk_journal (group
// commit: one durable write per turn for every group's appends), a timer heap for the groups'
// raft timeouts, and the meta group (bootstrap rule in meta_bootstrap.h). Committed entries
// go to a group's apply function on this thread, which must only enqueue them for the
// group's owner (e.g. base::spsc_ring::try_push): nothing here calls into src/js. When the
// owner's queue is full it returns false; the host keeps that entry and the ones after it and
// offers them again every millisecond, in order, so nothing committed is dropped.
//
// Other threads talk to it through commands (a mutex-guarded queue and an eventfd) and read
// the meta group's state from a snapshot refreshed every turn. Stream groups' proposals (the
// publish path) come on a bounded SPSC ring instead, without a wait: each turn takes all of
// them and proposes each group's run of one term as one batch (repl_groups.cc). Idle, the loop blocks in
// poll() until a socket, the journal's completion, a command or the next timer.
#include <atomic>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "net/tls_stream.h"
#include "src/base/result.h"
#include "src/base/spsc_ring.h"
#include "src/core/cluster_replication.h"
#include "src/repl/disk_journal.h"
#include "src/repl/disk_log_store.h"
#include "src/repl/link_codec.h"
#include "src/repl/raft_group.h"
#include "src/repl/repl_link.h"

namespace repl {

inline constexpr std::uint64_t kMetaGroup = 1;
// A connection whose hello (and TLS handshake) is not done by then is closed.
inline constexpr std::uint64_t kLinkHelloTimeoutMs = 5000;

struct repl_host_options {
  std::string server_name;
  std::string cluster_name;
  std::string journal_dir;      // the journal is <journal_dir>/journal
  // The server's durability point (--durability): true `sync` (every journal write
  // RWF_DSYNC), false `write` (O_DIRECT writes into zeroed, synced space: disk_journal.h).
  bool sync_journal = false;
  std::size_t min_meta_size = 2;  // the configured route URLs (meta_bootstrap.h)
  std::uint64_t settle_ms = 1000;
  unsigned election_timeout_ms = 500;  // raft randomizes each in [t, 2t)
  unsigned heartbeat_timeout_ms = 100;
  int cpu = -1;                 // pin the thread here (-1: no pinning)
  // cluster.tls: streams over the routes' contexts, so replication uses the same certificates
  // and verification (accepted links: server side; dialed: client side, verifying the host).
  // Null: plaintext.
  net::tls_stream_factory tls;
};

class repl_host final : public core::cluster_replication {
 public:
  // False: the owner's queue is full, offer this entry again later (`e` as it was). True: the
  // entry is taken; its data may have been moved out (no copy of each message on the way).
  using apply_fn = std::function<bool(std::uint64_t group, committed_entry& e)>;

  explicit repl_host(repl_host_options o);
  ~repl_host() override;
  repl_host(const repl_host&) = delete;
  repl_host& operator=(const repl_host&) = delete;

  // The meta group's committed entries (set before start()).
  void set_meta_apply(apply_fn f) { _meta_apply = std::move(f); }
  void start();
  void stop();

  // core::cluster_replication
  void route_peer(const std::string& name, const std::string& host, int repl_port,
                  bool up) override;
  core::meta_status meta() const override;
  bool meta_stepdown() override;
  void forget_server(const std::string& name) override;
  void adopt_connection(int fd) override;
  // Stream groups (repl_groups.cc).
  void set_group_events(std::function<bool(core::group_event&)> sink, std::function<void()> turn_end = {}) override;
  void create_group(std::uint64_t id, std::vector<std::string> members) override;
  void remove_group(std::uint64_t id) override;
  core::group_propose_result propose(std::uint64_t group, std::uint64_t term,
                                     std::vector<std::uint8_t> data) override;
  bool propose_async(core::group_proposal& p) override;
  void flush_proposals() override;
  core::group_progress progress(std::uint64_t group) override;
  bool group_stepdown(std::uint64_t group) override;
  void snapshot_taken(std::uint64_t group, std::uint64_t index,
                      std::shared_ptr<const std::vector<std::uint8_t>> data) override;

  std::uint64_t meta_applied() const { return _meta_applied.load(); }

  static std::int64_t backoff_ms(int failures);

 private:
  struct peer {
    std::string host;
    int port = 0;
    bool routed = false;
    int failures = 0;
    std::uint64_t due_ms = 0;
  };
  struct group_slot {
    group_definition def;
    std::map<std::uint64_t, std::string> names;  // raft id -> server name
    std::unique_ptr<disk_log_store> store;
    std::unique_ptr<raft_group> raft;
    std::uint64_t timer_at = 0;
    apply_fn apply;
    // Committed entries and proposal results not yet taken by the owner, in the order made.
    struct output {
      committed_entry entry;
      std::optional<core::group_event> result;  // set: a `proposed` event instead of an entry
    };
    std::deque<output> unapplied;
    // Proposals raft refused while this server still leads in their term (a leadership
    // transfer is under way): proposed again each turn until it leads no more.
    std::deque<core::group_proposal> held;
    // The role last reported to the group's owner (stream groups: repl_groups.cc).
    bool reported_leader = false;
    std::uint64_t reported_term = 0;
    std::uint64_t reported_leader_id = ~0ull;
  };
  struct timer {
    std::uint64_t at;
    std::uint64_t group;
    bool operator>(const timer& o) const { return at > o.at; }
  };

  void run();
  void open_journal();
  void post(std::function<void()> fn);
  void run_commands();
  void dial_due(std::uint64_t now);
  void service_link(repl_link& l, short revents, std::uint64_t now);
  bool accept_hello(repl_link& l, const link_hello& h, std::uint64_t now);
  void on_message(repl_link& l, const link_message& m, std::uint64_t now);
  void close_link(repl_link& l, std::uint64_t now);
  void reap_closed();
  void fire_timers(std::uint64_t now);
  void notify_durable(std::uint64_t now);
  void handle(group_slot& g, actions& a, std::uint64_t now);
  void offer_applies(group_slot& g);
  void take_proposals(std::uint64_t now);
  void propose_run(group_slot& g, std::vector<core::group_proposal>& list, std::uint64_t now);
  bool report_role(group_slot& g);  // false: the owner's queue is full, try again
  template <class F>
  auto call_sync(F fn) -> decltype(fn());
  void start_group(const group_definition& def, const recovered_group* rec, std::uint64_t now);
  void stepdown(std::uint64_t group, std::uint64_t now);
  void refresh_view(std::uint64_t now);
  void try_bootstrap(std::uint64_t now);
  // The meta leader adds a linked server outside the group (standby), then promotes it.
  void manage_membership(std::uint64_t now);
  const std::string* name_of(group_slot& g, std::uint64_t id);
  void publish_status(std::uint64_t now);
  // Journal compaction (disk_journal::begin_rewrite): once the file is past twice what the
  // groups still need (and 64 MiB; PEREGRINE_JOURNAL_MIN_BYTES sets another floor).
  void maybe_rewrite_journal(std::uint64_t now);
  // Snapshots taken by the owners: their data files are written by a helper thread, one at a
  // time, then the group saves and compacts (raft_group::take_snapshot with the file).
  void poll_snapshot_writer(std::uint64_t now);
  int poll_timeout_ms(std::uint64_t now) const;
  apply_fn group_apply_fn();  // a stream group's: its entries as events to _group_sink
  void end_event_batch();     // wakes the owner once for the events given since the last call
  bool role_unreported(const group_slot& g) const;

  const repl_host_options _o;
  int _wake_fd = -1;
  std::atomic<bool> _stop{false};
  std::thread _thread;

  mutable std::mutex _cmd_mu;
  std::vector<std::function<void()>> _commands;

  // The publish path's proposals (one producer, see propose_async).
  static constexpr std::size_t kProposalRing = 8192;
  base::spsc_ring<core::group_proposal> _proposals{kProposalRing};
  bool _proposals_unsignalled = false;  // producer side only

  mutable std::mutex _status_mu;
  core::meta_status _status;

  // Owned by the thread.
  std::unique_ptr<disk_journal> _journal;
  std::uint64_t _notified_seq = 0;
  bool _completions_signal = false;  // the journal rings _wake_fd on completions
  std::map<std::string, peer> _peers;
  std::vector<std::unique_ptr<repl_link>> _links;
  std::map<std::string, repl_link*> _up;  // by peer name
  std::set<std::string> _removed;         // SERVER.REMOVE'd: never a meta member again
  std::uint64_t _removed_stepdown_ms = 0;  // this (removed) leader's last handover
  std::map<std::string, membership_view> _views;
  membership_view _view;
  std::uint64_t _view_since_ms = 0;
  std::map<std::uint64_t, group_slot> _groups;
  std::priority_queue<timer, std::vector<timer>, std::greater<timer>> _timers;
  apply_fn _meta_apply;
  std::function<bool(core::group_event&)> _group_sink;  // counts what it takes in _events_taken
  std::function<void()> _group_turn_end;
  bool _events_taken = false;  // this turn gave the sink an event
  std::atomic<std::uint64_t> _meta_applied{0};
  std::uint64_t _rewrite_checked_ms = 0;
  std::uint64_t _stepdowns = 0;  // rotates a stepdown's pick among equally caught-up voters
  std::set<std::uint64_t> _removed_groups;
  struct snapshot_job {
    std::uint64_t group = 0, index = 0;
    std::shared_ptr<const std::vector<std::uint8_t>> data;
    std::string file;
    std::uint32_t crc = 0;
  };
  std::deque<snapshot_job> _snapshot_jobs;  // waiting for the writer
  std::optional<snapshot_job> _snapshot_writing;
  std::thread _snapshot_writer;
  std::atomic<int> _snapshot_written{0};  // 0 writing, 1 done, -1 failed  // removed since the start (not carried by a rewrite)
  std::uint64_t _last_image_bytes = 0;
};

}  // namespace repl
