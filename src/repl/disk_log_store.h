#pragma once
// One Raft group's log_store on the server's shared disk_journal. The group's log is kept in
// memory (as recovered, plus what was appended since) for entry_at(); appends become journal
// records that the driver (repl_host) writes with every other group's at the end of its turn.
// Seqs are the journal's: increasing per group too, so "durable through S" means the same.
#include <cstdint>

#include "src/repl/disk_journal.h"
#include "src/repl/log_store.h"

namespace repl {

// One group's journal records standing for `log`: hard state, snapshot, entries (in records of
// at most a few MiB each).
void append_group_image(std::vector<std::uint8_t>& out, std::uint64_t group, const loaded_log& log);
// About how many bytes append_group_image writes for a log whose entries' data take
// `entry_bytes` (within a few hundred bytes: record headers are estimated, data is exact).
std::uint64_t group_image_bytes(const loaded_log& log, std::uint64_t entry_bytes);
std::uint64_t entry_data_bytes(std::span<const entry> entries);

class disk_log_store final : public log_store {
 public:
  // `recovered` is what the journal held for this group (nullptr for a new group).
  disk_log_store(disk_journal& j, std::uint64_t group, const recovered_group* recovered);

  loaded_log load() override;
  void save_hard_state(const hard_state& hs) override;
  void bootstrap(const hard_state& hs, const entry& configuration) override;
  std::uint64_t append(std::uint64_t first_index, std::span<const entry> entries) override;
  void save_snapshot(const stored_snapshot& s, std::uint64_t keep_from) override;
  const stored_snapshot* snapshot() const override { return _view.snapshot ? &*_view.snapshot : nullptr; }
  const entry* entry_at(std::uint64_t index) const override;
  std::uint64_t first_index() const override { return _view.start_index; }
  std::uint64_t last_index() const override {
    return _view.start_index + _view.entries.size() - 1;
  }
  // The group's records for a journal rewrite (disk_journal::begin_rewrite).
  void write_image(std::vector<std::uint8_t>& out) const { append_group_image(out, _group, _view); }
  // What write_image would write, without writing it (kept as entries come and go).
  std::uint64_t image_bytes() const { return group_image_bytes(_view, _entry_bytes); }
  // A durable write failed: raft_group must stop (it cannot tell the store failed otherwise).
  bool failed() const { return _journal.failed(); }

 private:
  disk_journal& _journal;
  std::uint64_t _group;
  loaded_log _view;
  std::uint64_t _entry_bytes = 0;  // the data of _view.entries
};

}  // namespace repl
