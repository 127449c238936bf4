#pragma once
// What the core sees of replication (src/repl's repl_host implements it; the core cannot
// include src/repl). Shard 0 reports route peers so the replication thread knows where to
// dial each server (`pg_repl_port` in the route INFO: its cluster port, which takes
// replication connections too); the route listener hands over the sockets that start with
// "PGREPL" (adopt_connection); monitoring and the
// JetStream API read the meta group's state and ask it to step down. Every call is
// thread-safe and returns at once.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace core {

struct meta_peer_status {
  std::string name;
  bool current = false;
  bool offline = false;
  std::int64_t active_ns = 0;  // since a frame last came from it
  std::uint64_t lag = 0;
};

struct meta_status {
  bool running = false;  // this server is in a meta group
  std::string cluster;
  std::string leader;    // server name, empty when none is known
  bool self_leader = false;
  std::size_t cluster_size = 0;
  std::vector<meta_peer_status> replicas;  // the other members (filled on the leader)
  std::vector<std::string> unreachable;    // members this server has no replication link to (every server)
};

// Replicated groups other than the meta group (a stream's), as JetStream drives them from its
// owner thread: events come out of the replication thread through a sink that must only
// enqueue (false: full, offered again later, in order).
struct group_event {
  // proposed: the answer to propose_async for the owner's tickets [ticket, ticket + count):
  // their log indexes from `index` on, or index 0 when they were refused (this server does
  // not lead the group in their term: it never will again, so every later proposal of that
  // term is refused too). It comes before the apply of any of those entries.
  enum class kind : std::uint8_t { apply, role, proposed };
  kind what = kind::apply;
  std::uint64_t group = 0;
  std::uint64_t index = 0;  // apply: the committed entry's index, term and type
  std::uint64_t term = 0;   // apply: the entry's term; role: the group's current term
  std::uint8_t type = 1;    // repl::entry_type (1 command, 2 barrier, 3 change)
  std::vector<std::uint8_t> data;
  bool leader = false;      // role: this server leads the group
  std::string leader_name;  // role: the known leader ("" while none)
  std::uint64_t ticket = 0;  // proposed: the first ticket answered
  std::uint64_t count = 0;   // proposed: how many consecutive tickets
};

// A stream group's proposal as its owner thread hands it over (propose_async). `ticket`
// numbers the owner's proposals to that group, ascending by one; `term` is the term the owner
// believes it leads in (the proposal is refused in any other).
struct group_proposal {
  std::uint64_t group = 0;
  std::uint64_t term = 0;
  std::uint64_t ticket = 0;
  std::vector<std::uint8_t> data;
};

struct group_propose_result {
  enum class status : std::uint8_t { ok, not_leader, failed };
  status st = status::failed;
  std::uint64_t index = 0;
};

struct group_progress {
  bool running = false;
  std::string leader;
  std::uint64_t commit = 0;
  struct peer {
    std::string name;
    bool offline = false;
    std::uint64_t match = 0;          // on the leader: the log index it is known to hold
    std::int64_t since_rx_ms = -1;    // since a frame last came from its server, -1 never
  };
  std::vector<peer> peers;  // every member, this server included
};

class cluster_replication {
 public:
  virtual ~cluster_replication() = default;
  // Every group's events, the meta group's applies included (set once, before the host runs).
  // `turn_end` runs on the replication thread after each turn that delivered events, so the
  // owner is woken once per turn, not once per event.
  virtual void set_group_events(std::function<bool(group_event&)> sink, std::function<void()> turn_end = {}) {
    (void)sink;
    (void)turn_end;
  }
  // Starts (or, after a restart, resumes from the journal) group `id` with these members.
  virtual void create_group(std::uint64_t id, std::vector<std::string> members) {
    (void)id;
    (void)members;
  }
  virtual void remove_group(std::uint64_t id) { (void)id; }
  // Proposes `data` if this server still leads `group` in `term`. Waits for the replication
  // thread's next turn (the caller needs the entry's index).
  virtual group_propose_result propose(std::uint64_t group, std::uint64_t term, std::vector<std::uint8_t> data) {
    (void)group;
    (void)term;
    (void)data;
    return {};
  }
  // The publish path: queues `p` on a bounded SPSC ring to the replication thread without
  // waiting (one producer: the thread that owns every stream group, JetStream's hub). False
  // when the ring is full: nothing was queued, offer it again later. Everything queued in one
  // turn of the replication thread is proposed together (per group and term: one log append,
  // one journal write, one AppendEntries per follower); results come back as `proposed`
  // events. The replication thread is woken by flush_proposals().
  virtual bool propose_async(group_proposal& p) {
    (void)p;
    return false;
  }
  // Wakes the replication thread if anything was queued since the last call (once per turn
  // of the owner, not once per publish).
  virtual void flush_proposals() {}
  // The group's progress as its leader sees it (waits for the replication thread's turn).
  virtual group_progress progress(std::uint64_t group) {
    (void)group;
    return {};
  }
  // The owner's state machine state after applying every entry of `group` up to `index`:
  // the group saves it as its snapshot and compacts its log (raft_group::take_snapshot).
  // Without waiting; nothing happens when the group has a newer snapshot or is gone.
  virtual void snapshot_taken(std::uint64_t group, std::uint64_t index,
                              std::shared_ptr<const std::vector<std::uint8_t>> data) {
    (void)group;
    (void)index;
    (void)data;
  }
  // Hands the group's leadership to its most caught-up member (forwarded from a follower).
  virtual bool group_stepdown(std::uint64_t group) {
    (void)group;
    return false;
  }
  virtual void route_peer(const std::string& name, const std::string& host, int repl_port,
                          bool up) = 0;
  virtual meta_status meta() const = 0;
  // An accepted socket on the cluster port whose first line is "PGREPL ..." (nothing read
  // yet). The implementation owns it from now on; the default closes it.
  virtual void adopt_connection(int fd);
  // $JS.API.SERVER.REMOVE applied: the server is never added to the meta group again, and
  // the meta leader takes it out (a meta leader that is removed hands leadership on first).
  virtual void forget_server(const std::string& name) { (void)name; }
  // Hands meta leadership to another member (forwarded to the leader from a follower).
  // False when there is no meta group or no known leader.
  virtual bool meta_stepdown() = 0;
};

// nats-server's node id of a server ("peer"): the first 8 bytes of sha256(name), each as a
// base-62 digit (byte % 62), as its getHash does (checked against nats-server 2.9.10's /jsz).
std::string server_name_hash(const std::string& name);
// nats-server's MetaClusterInfo (/jsz "meta_cluster", /varz "jetstream"."meta").
nlohmann::ordered_json meta_cluster_json(const meta_status& m);

}  // namespace core
