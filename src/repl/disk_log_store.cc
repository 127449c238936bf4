#include "src/repl/disk_log_store.h"

#include <algorithm>

#include "src/base/log.h"
#include "src/repl/log_record.h"
#include "src/repl/snapshot_files.h"

namespace repl {

void append_group_image(std::vector<std::uint8_t>& out, std::uint64_t group, const loaded_log& log) {
  std::vector<std::uint8_t> body;
  append_hard_state_record(body, log.hard);
  append_journal_record(out, group, body);
  if (log.snapshot) {
    body.clear();
    if (log.snapshot->file.empty()) append_snapshot_record(body, *log.snapshot, log.start_index);
    else append_snapshot_file_record(body, *log.snapshot, log.start_index);
    append_journal_record(out, group, body);
  }
  constexpr std::size_t kRecordBytes = 4u << 20;
  std::size_t i = 0;
  while (i < log.entries.size()) {
    std::size_t j = i, bytes = 0;
    while (j < log.entries.size() && (j == i || bytes + log.entries[j].data.size() <= kRecordBytes))
      bytes += log.entries[j++].data.size() + 16;
    body.clear();
    append_entries_record(body, log.start_index + i,
                          std::span<const entry>(log.entries.data() + i, j - i));
    append_journal_record(out, group, body);
    i = j;
  }
}

std::uint64_t entry_data_bytes(std::span<const entry> entries) {
  std::uint64_t n = 0;
  for (const auto& e : entries) n += e.data.size();
  return n;
}

std::uint64_t group_image_bytes(const loaded_log& log, std::uint64_t entry_bytes) {
  constexpr std::uint64_t kRecord = 16 + 9 + 12;  // journal and log record headers, first/count
  constexpr std::uint64_t kPerEntry = 13;          // term, type, length
  std::uint64_t n = kRecord + 24 + entry_bytes + kPerEntry * log.entries.size();
  n += kRecord * (1 + (entry_bytes + kPerEntry * log.entries.size()) / (4u << 20));
  if (log.snapshot) {
    n += kRecord + 64 + log.snapshot->file.size() + log.snapshot->meta.conf.size();
    if (log.snapshot->file.empty() && log.snapshot->data) n += log.snapshot->data->size();
  }
  return n;
}

disk_log_store::disk_log_store(disk_journal& j, std::uint64_t group,
                               const recovered_group* recovered)
    : _journal(j), _group(group) {
  if (recovered) _view = recovered->log;
  _entry_bytes = entry_data_bytes(_view.entries);
}

loaded_log disk_log_store::load() { return _view; }

void disk_log_store::save_hard_state(const hard_state& hs) {
  std::vector<std::uint8_t> body;
  append_hard_state_record(body, hs);
  _journal.append(_group, body);
  _view.hard = hs;
  (void)_journal.sync();  // a failure marks the journal failed; the host stops the groups
}

void disk_log_store::bootstrap(const hard_state& hs, const entry& configuration) {
  std::vector<std::uint8_t> body;
  append_hard_state_record(body, hs);
  append_entries_record(body, 1, {&configuration, 1});
  _journal.append(_group, body);
  _view.hard = hs;
  _view.start_index = 1;
  _view.entries.assign(1, configuration);
  _entry_bytes = configuration.data.size();
  (void)_journal.sync();
}

std::uint64_t disk_log_store::append(std::uint64_t first_index, std::span<const entry> entries) {
  std::vector<std::uint8_t> body;
  append_entries_record(body, first_index, entries);
  const std::uint64_t seq = _journal.append(_group, body);
  first_index = std::clamp(first_index, _view.start_index,
                           _view.start_index + _view.entries.size());
  const std::size_t keep = first_index - _view.start_index;
  _entry_bytes -= entry_data_bytes(std::span<const entry>(_view.entries).subspan(keep));
  _view.entries.resize(keep);
  _view.entries.insert(_view.entries.end(), entries.begin(), entries.end());
  _entry_bytes += entry_data_bytes(entries);
  return seq;
}

void disk_log_store::save_snapshot(const stored_snapshot& s, std::uint64_t keep_from) {
  stored_snapshot st = s;
  static const std::vector<std::uint8_t> none;
  const std::vector<std::uint8_t>& data = st.data ? *st.data : none;
  if (st.file.empty()) {
    // Installed from the leader: written here, on this thread (a taken one was written by
    // repl_host's snapshot writer, which fills in file and crc).
    st.file = snapshot_file_name(_group, st.meta.index);
    st.crc = snapshot_crc(data);
    if (auto w = write_snapshot_file(_journal.snapshot_dir(), st.file, data); !w) {
      PG_ERROR("replication group {}: snapshot file {} cannot be written ({}); replication stops", _group, st.file,
               w.err().sys_errno);
      _journal.mark_failed();
      return;
    }
  }
  st.size = data.size();
  std::vector<std::uint8_t> body;
  append_snapshot_file_record(body, st, keep_from);
  _journal.append(_group, body);
  const std::string previous = _view.snapshot ? _view.snapshot->file : std::string();
  apply_snapshot(_view, st, keep_from);
  _entry_bytes = entry_data_bytes(_view.entries);
  if (_journal.sync() && !previous.empty() && previous != st.file)
    remove_snapshot_file(_journal.snapshot_dir(), previous);  // the journal names the new one now
}

const entry* disk_log_store::entry_at(std::uint64_t index) const {
  if (index < _view.start_index || index - _view.start_index >= _view.entries.size())
    return nullptr;
  return &_view.entries[index - _view.start_index];
}

}  // namespace repl
