#pragma once
// Seeded simulation of one Raft group on N servers in one process: a fake network (loss,
// delay, reordering, duplication, symmetric and asymmetric partitions), a fake disk per
// server (memory_log_store: unsynced writes lost on a crash, the last one possibly torn), a
// fake clock, crashes and restarts. Everything random comes from the seed, so a failing seed
// replays exactly.
//
// A run is a chaos phase (faults on, a client proposing), then a liveness phase (faults
// healed, everyone restarted): a leader must commit a new entry on every server within a
// bounded simulated time. Checkers: at most one leader per term; every index applied with
// the same entry everywhere (so applied logs are identical); every entry any server applied
// is in the durable log of a majority at the end; no raft error.
//
// With snapshot_every, the state machine's snapshot is its applied entries, and a restored one
// is checked against what was committed like any applied entry; the durability check reads
// a disk's snapshot for the indexes its log dropped.
//
// With `membership`, one more server starts later in join mode (not in the group) and the
// leader adds it (standby, then voter once caught up, raft_group::promote_caught_up); once it
// votes, server 1 is removed (leadership handed on first if it leads). Convergence then also
// needs the joiner to be a voter and server 1 gone from the committed configuration, and
// every member (server 1 no longer) to apply a post-heal entry; the durability check counts
// the final voters.
#include <cstdint>
#include <string>

namespace repl::sim {

struct sim_options {
  std::uint64_t seed = 1;
  unsigned servers = 3;
  std::uint64_t chaos_ms = 8'000;         // simulated duration of the fault phase
  std::uint64_t liveness_bound_ms = 15'000;  // healed cluster must converge within this
  unsigned election_timeout_ms = 150;
  unsigned heartbeat_timeout_ms = 30;
  bool crashes = true;
  bool partitions = true;
  bool torn_writes = true;
  double loss = 0.05;        // per message, in the chaos phase
  double duplicate = 0.03;
  std::uint64_t max_delay_ms = 20;   // uniform delay 1..max, which reorders
  double long_delay = 0.02;          // chance of a delay up to 10x max (stragglers)
  // Checker self-test: the disk acknowledges writes it never makes durable, so a crash can
  // lose committed entries and the checkers must notice.
  bool disk_lies = false;
  bool drop_stale_frames = true;  // raft_group's order filter (group_config)
  std::uint64_t trace_from_ms = ~0ull;  // print every delivered frame from this time on
  bool membership = false;  // a joining and a removed server (see above)
  // Snapshots: a server whose applied index is this far past its last snapshot takes one
  // (its whole applied history is the state machine), keeping snapshot_trailing entries, so
  // followers behind the leader's compacted log get InstallSnapshot. 0: never.
  unsigned snapshot_every = 0;
  unsigned snapshot_trailing = 4;
};

struct sim_report {
  bool ok = false;
  std::string failure;               // first violated property, with details
  std::uint64_t events = 0;
  std::uint64_t proposals_acked = 0;  // entries applied somewhere during the run
  std::uint64_t crashes = 0;
  std::uint64_t leaders = 0;          // distinct (term, leader) pairs seen
  std::uint64_t recovery_ms = 0;      // liveness phase: heal until every server applied
  std::uint64_t final_index = 0;
  bool joined = false;   // membership: the joiner became a voter
  bool removed = false;  // membership: server 1 left the committed configuration
  std::uint64_t snapshots = 0;  // taken
  std::uint64_t installs = 0;   // restored from a snapshot (installed or at a restart)
};

sim_report run_simulation(const sim_options& options);

}  // namespace repl::sim
