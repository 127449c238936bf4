#pragma once
// A log_store whose "disk" is a byte journal in memory (log_record format): the durable part
// survives crash(), the pending (written, not yet synced) tail does not, except for a prefix
// the caller picks (a torn write). load() recovers by replaying the durable bytes, exactly
// what a file-backed store does after a restart. Used by the simulation; the O_DIRECT store
// replaces it (see log_store.h).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "src/repl/log_store.h"

namespace repl {

class memory_log_store final : public log_store {
 public:
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

  // Disk side, for the driver. Makes every write up to and including `seq` durable.
  void sync_through(std::uint64_t seq);
  std::uint64_t durable_seq() const { return _durable_seq; }
  std::uint64_t last_seq() const { return _next_seq - 1; }
  std::size_t pending_bytes() const { return _pending.size(); }
  std::size_t durable_bytes() const { return _durable.size(); }

  // The process dies: the in-memory view is gone, the first `keep_pending` bytes of the
  // unsynced tail reach the disk (possibly ending mid-record), the rest is lost. Call load()
  // before using the store again.
  void crash(std::size_t keep_pending);

  // Flips one byte of the durable journal (a corruption test for recovery).
  void corrupt_durable_byte(std::size_t offset);

 private:
  struct pending_write {
    std::uint64_t seq;
    std::size_t end;  // offset in _pending just past this write
  };
  void sync_all();

  std::vector<std::uint8_t> _durable;
  std::vector<std::uint8_t> _pending;
  std::deque<pending_write> _writes;
  std::uint64_t _next_seq = 1;
  std::uint64_t _durable_seq = 0;
  loaded_log _view;  // what entry_at() serves: durable plus pending
};

}  // namespace repl
