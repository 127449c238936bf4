#pragma once
// One append-only journal per server shared by every Raft group (disk_log_store is one
// group's view of it). Records of all groups that arrive within one loop turn go out in one
// write with one fdatasync (group commit: the write is submitted durable, RWF_DSYNC or
// fdatasync, through io::backend, which is io_uring + O_DIRECT where the filesystem allows).
//   record: u32 crc32c (of the rest, record_crc) | u32 body length | u64 group | body
// The body is a log_record (hard state or entries) for group > 0, or, for group 0, a group
// definition (u64 group, then the member names: u16 count, u8 length + bytes each), written
// once when a group is created so a restart knows which groups exist and who their members are.
// Recovery reads the file, stops at the first record whose checksum or log_record fails (a
// torn tail), zeroes what follows and appends from there.
// Durability point (the server's --durability, as for streams): `sync` submits every write
// durable. `write` (the default) makes a write durable at the completion of its O_DIRECT
// write, without a device cache flush, where that needs no metadata change: the journal keeps
// a few MiB past its end written with zeroes and made durable (RWF_DSYNC) ahead of use, one
// 1 MiB write at a time, so appends there survive a process and an OS crash as a stream's
// `write` records do; a write that reaches past that region (the first after a start) is
// submitted durable.
// Compaction: groups snapshot their state and drop the log before it, but their old records
// stay in the file, so the owner rewrites it now and then (begin_rewrite): a new file holding
// only what the live groups need (snapshots stay in their own files, snapshot_files.h) is
// written and synced by a helper thread while appends go on
// to the old one; poll_rewrite() then syncs the old file, copies what was appended since the
// image was taken to the new one, renames it over the journal and continues there. A crash at
// any point leaves one whole journal. A removed group gets a tombstone (a definition without
// members): recovery forgets it.
#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <span>
#include <string>
#include <vector>

#include "io/aligned_buf.h"
#include "io/backend.h"
#include "src/base/result.h"
#include "src/repl/log_store.h"

namespace repl {

struct group_definition {
  std::uint64_t group = 0;
  std::vector<std::string> members;  // sorted server names
  bool operator==(const group_definition&) const = default;
};

struct recovered_group {
  group_definition def;
  loaded_log log;
};

class disk_journal {
 public:
  // Opens (creating) `path` and recovers it. The backend must belong to the calling thread.
  // sync_writes: the `sync` durability point (every write RWF_DSYNC); false: `write`.
  static base::result<std::unique_ptr<disk_journal>> open(const std::string& path,
                                                          std::unique_ptr<io::backend> b,
                                                          bool sync_writes = true);
  ~disk_journal();

  // What recovery found, by group id (groups with a definition record).
  const std::map<std::uint64_t, recovered_group>& recovered() const { return _recovered; }
  std::uint64_t recovered_bytes() const { return _end; }
  std::uint64_t dropped_tail_bytes() const { return _dropped_tail; }  // torn (not padding)

  // Buffers one record; it is written by the next flush(). Returns its write seq (> 0).
  std::uint64_t append(std::uint64_t group, std::span<const std::uint8_t> body);
  std::uint64_t define_group(const group_definition& def);
  std::uint64_t remove_group(std::uint64_t group);  // the tombstone

  // Rewrite: `image` is whole journal records (group definitions and each group's hard state,
  // snapshot and entries) standing for everything written so far. False when a rewrite is
  // already under way.
  bool begin_rewrite(std::vector<std::uint8_t> image);
  // Finishes a rewrite whose new file is written (waits for this journal's writes). True when
  // the journal switched to the new file.
  bool poll_rewrite();
  bool rewriting() const { return _rewriting; }
  // Where snapshot data files live (snapshot_files.h): <journal's directory>/snapshots.
  const std::string& snapshot_dir() const { return _snapshot_dir; }
  // A write outside the journal failed (a snapshot file): as a failed journal write.
  void mark_failed() { _failed = true; }
  std::uint64_t size() const { return _end + _pending.size(); }  // bytes, written or buffered

  // Starts one durable write of everything buffered, unless one is in flight (then the
  // buffered records wait for the next call). Call it at the end of every loop turn.
  void flush();
  // Reaps a finished write; true when durable_seq() moved.
  bool poll();
  // Writes everything buffered and waits until it is durable (the hard state: Raft sends
  // nothing before its term and vote are on disk).
  base::status sync();

  std::uint64_t durable_seq() const { return _durable_seq; }
  std::uint64_t last_seq() const { return _next_seq - 1; }
  bool idle() const { return !_in_flight && !_zero_in_flight && _pending.empty(); }
  // [0, safe_end()): allocated, written and durable with its metadata (`write` mode).
  std::uint64_t safe_end() const { return _safe_to; }
  bool failed() const { return _failed; }
  int completion_fd() { return _io->completion_fd(); }
  std::string_view backend_name() const { return _io->name(); }

 private:
  disk_journal(std::unique_ptr<io::backend> b, int fh, bool sync_writes, std::string path)
      : _io(std::move(b)), _fh(fh), _sync(sync_writes), _path(std::move(path)) {}
  bool finish_rewrite();
  void load_snapshot_files();
  base::status recover();
  void complete(std::int32_t res);
  bool reap_one(bool wait);  // dispatches one completion (a record write or a zero write)
  void prepare_ahead();      // `write` mode: the next zeroed, durable MiB past the end
  void merge_zeroed();

  std::unique_ptr<io::backend> _io;
  int _fh = -1;
  std::map<std::uint64_t, recovered_group> _recovered;
  std::uint64_t _end = 0;          // durable bytes: the next write continues here
  std::uint64_t _dropped_tail = 0;
  std::vector<std::uint8_t> _tail;  // bytes of [align_down(_end), _end): rewritten by the next write
  std::vector<std::uint8_t> _pending;
  std::uint64_t _pending_seq = 0;   // last seq in _pending
  io::aligned_buf _buf;             // the write in flight
  bool _in_flight = false;
  std::uint64_t _flight_seq = 0;
  std::uint64_t _flight_bytes = 0;  // new bytes (beyond _tail) in the write in flight
  std::uint64_t _next_seq = 1;
  std::uint64_t _durable_seq = 0;
  bool _failed = false;
  bool _sync = true;
  bool _flight_durable = false;
  std::uint64_t _flight_end = 0;    // end (padded) of the write in flight
  std::uint64_t _safe_to = 0;
  bool _zero_in_flight = false;
  std::uint64_t _zero_start = 0, _zero_end = 0;             // the zero write in flight
  std::uint64_t _zero_done_start = 0, _zero_done_end = 0;  // done, not yet joined to _safe_to
  std::string _path;
  std::string _snapshot_dir;
  // A rewrite under way: the helper writing <path>.new, the records appended since its image.
  bool _rewriting = false;
  std::thread _writer;
  std::atomic<int> _writer_state{0};  // 0 writing, 1 written, -1 failed
  std::uint64_t _image_bytes = 0;
  std::vector<std::uint8_t> _since;
};

// Record helpers, shared with the tests.
void append_journal_record(std::vector<std::uint8_t>& out, std::uint64_t group,
                           std::span<const std::uint8_t> body);
std::vector<std::uint8_t> encode_group_definition(const group_definition& def);

}  // namespace repl
