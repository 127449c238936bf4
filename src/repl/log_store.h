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
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace repl {

// Mirrors raft_entry_type (raft.h); kept here so users of the interface need no raft.h.
// `snapshot` is never in a log: a committed_entry of that type hands the state machine a
// snapshot to restore (its data) in place of every entry up to its index.
enum class entry_type : std::uint8_t { command = 1, barrier = 2, change = 3, snapshot = 16 };

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

// A snapshot of a group's state machine at `index`: the state after applying every entry
// up to it, with the configuration committed at that point (raft_configuration_encode bytes,
// committed at conf_index). The data is shared: the store, raft_group's InstallSnapshot
// frames and the owner's restore all read one copy.
struct snapshot_meta {
  std::uint64_t index = 0;
  std::uint64_t term = 0;
  std::uint64_t conf_index = 0;
  std::vector<std::uint8_t> conf;
  bool operator==(const snapshot_meta&) const = default;
};
struct stored_snapshot {
  snapshot_meta meta;
  // The on-disk store keeps the data in a file of its own (disk_log_store): its name in the
  // journal's snapshot directory, with the data's size and CRC-32C to check it on recovery.
  std::string file;
  std::uint64_t size = 0;
  std::uint32_t crc = 0;
  std::shared_ptr<const std::vector<std::uint8_t>> data;
};

// What a store holds after recovery. Entries are contiguous from start_index; with a
// snapshot, start_index may be at or below its index (trailing entries kept for followers
// that are only a little behind).
struct loaded_log {
  hard_state hard;
  std::uint64_t start_index = 1;
  std::vector<entry> entries;
  std::optional<stored_snapshot> snapshot;
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

  // Makes `s` the group's snapshot, durable when it returns. Taken here (keep_from <=
  // s.meta.index): entries before keep_from are dropped, the rest stays. Installed from the
  // leader (keep_from > s.meta.index): every entry is dropped, the log continues after it.
  virtual void save_snapshot(const stored_snapshot& s, std::uint64_t keep_from) = 0;
  // The newest snapshot saved or recovered; nullptr if none.
  virtual const stored_snapshot* snapshot() const = 0;

  // nullptr when index is outside [first_index(), last_index()].
  virtual const entry* entry_at(std::uint64_t index) const = 0;
  virtual std::uint64_t first_index() const = 0;
  virtual std::uint64_t last_index() const = 0;  // first_index() - 1 when empty
};

}  // namespace repl
