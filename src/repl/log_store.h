#pragma once
// Durable state of one Raft group: the hard state (term, vote) and the log entries.
//
// raft_group reads entries back through this interface (to fill AppendEntries and to apply
// committed entries) and stages new ones with append(). Durability is asynchronous: append()
// returns a write sequence number, the store makes writes durable strictly in that order, and
// whoever drives the store (the simulation, later the io_uring loop) reports "durable through
// seq S" to raft_group::on_persisted(). The hard state is written synchronously: Raft must not
// send a message before a new term or vote is on disk.
//
// The O_DIRECT store will back this the way storage/ backs streams: one append-only journal
// per server shared by all groups (records tagged with the group), written in aligned blocks;
// every append() of every group that arrives within one loop turn goes out in the same write
// and fsync (group commit), and its completion acknowledges every seq it covered. Records are
// log_record's format, so recovery is the same parse that memory_log_store uses: stop at the
// first record whose checksum fails (a torn tail), newest hard-state record wins.
#include <cstdint>
#include <span>
#include <vector>

namespace repl {

// Mirrors raft_entry_type (raft.h); kept here so users of the interface need no raft.h.
enum class entry_type : std::uint8_t { command = 1, barrier = 2, change = 3 };

struct entry {
  std::uint64_t term = 0;
  entry_type type = entry_type::command;
  std::vector<std::uint8_t> data;
  bool operator==(const entry&) const = default;
};

struct hard_state {
  std::uint64_t term = 0;
  std::uint64_t voted_for = 0;
  // Bumped at every start; frames carry it so a peer can tell this run's frames from late
  // ones of an earlier run (see raft_codec.h).
  std::uint64_t incarnation = 0;
  bool operator==(const hard_state&) const = default;
};

// What a store holds after recovery. Entries are contiguous from start_index (1 until
// snapshots exist).
struct loaded_log {
  hard_state hard;
  std::uint64_t start_index = 1;
  std::vector<entry> entries;
};

class log_store {
 public:
  virtual ~log_store() = default;

  // State as recovered from durable storage. Called once, before anything else.
  virtual loaded_log load() = 0;

  // Durable when it returns.
  virtual void save_hard_state(const hard_state& hs) = 0;

  // First start of a new group: term 1 and the configuration entry at index 1, durable when
  // it returns (every replica writes the identical entry, so logs agree from index 1).
  virtual void bootstrap(const hard_state& hs, const entry& configuration) = 0;

  // Replaces everything from first_index on with `entries` (first_index <= last_index() + 1).
  // Visible to entry_at() at once; durable later, in seq order. Returns the write's seq (> 0,
  // increasing).
  virtual std::uint64_t append(std::uint64_t first_index, std::span<const entry> entries) = 0;

  // nullptr when index is outside [first_index(), last_index()].
  virtual const entry* entry_at(std::uint64_t index) const = 0;
  virtual std::uint64_t first_index() const = 0;
  virtual std::uint64_t last_index() const = 0;  // first_index() - 1 when empty
};

}  // namespace repl
