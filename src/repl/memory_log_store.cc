#include "src/repl/memory_log_store.h"

#include <algorithm>

#include "src/repl/log_record.h"

namespace repl {

loaded_log memory_log_store::load() {
  _view = loaded_log{};
  // A torn or corrupt tail is cut off, as a file store truncates its last segment.
  _durable.resize(replay_records(_durable, _view));
  return _view;
}

void memory_log_store::save_hard_state(const hard_state& hs) {
  append_hard_state_record(_pending, hs);
  _view.hard = hs;
  sync_all();  // one journal: syncing the vote also syncs the entries written before it
}

void memory_log_store::bootstrap(const hard_state& hs, const entry& configuration) {
  append_hard_state_record(_pending, hs);
  append_entries_record(_pending, 1, {&configuration, 1});
  _view.hard = hs;
  _view.start_index = 1;
  _view.entries.assign(1, configuration);
  sync_all();
}

std::uint64_t memory_log_store::append(std::uint64_t first_index,
                                       std::span<const entry> entries) {
  append_entries_record(_pending, first_index, entries);
  const std::uint64_t seq = _next_seq++;
  _writes.push_back({seq, _pending.size()});
  first_index = std::clamp(first_index, _view.start_index,
                           _view.start_index + _view.entries.size());
  _view.entries.resize(first_index - _view.start_index);
  _view.entries.insert(_view.entries.end(), entries.begin(), entries.end());
  return seq;
}

void memory_log_store::save_snapshot(const stored_snapshot& s, std::uint64_t keep_from) {
  append_snapshot_record(_pending, s, keep_from);
  apply_snapshot(_view, s, keep_from);
  sync_all();
}

const entry* memory_log_store::entry_at(std::uint64_t index) const {
  if (index < _view.start_index || index - _view.start_index >= _view.entries.size())
    return nullptr;
  return &_view.entries[index - _view.start_index];
}

void memory_log_store::sync_through(std::uint64_t seq) {
  std::size_t end = 0;
  while (!_writes.empty() && _writes.front().seq <= seq) {
    end = _writes.front().end;
    _durable_seq = _writes.front().seq;
    _writes.pop_front();
  }
  if (end == 0) return;
  _durable.insert(_durable.end(), _pending.begin(), _pending.begin() + std::ptrdiff_t(end));
  _pending.erase(_pending.begin(), _pending.begin() + std::ptrdiff_t(end));
  for (auto& w : _writes) w.end -= end;
}

void memory_log_store::sync_all() {
  _durable.insert(_durable.end(), _pending.begin(), _pending.end());
  _pending.clear();
  if (!_writes.empty()) _durable_seq = _writes.back().seq;
  _writes.clear();
}

void memory_log_store::crash(std::size_t keep_pending) {
  keep_pending = std::min(keep_pending, _pending.size());
  _durable.insert(_durable.end(), _pending.begin(),
                  _pending.begin() + std::ptrdiff_t(keep_pending));
  _pending.clear();
  _writes.clear();
  _durable_seq = _next_seq - 1;  // nothing is in flight any more
  _view = loaded_log{};
}

void memory_log_store::corrupt_durable_byte(std::size_t offset) {
  if (offset < _durable.size()) _durable[offset] ^= 0x5A;
}

}  // namespace repl
