#pragma once
// file_store: a stream as a directory of preallocated block files holding checksummed
// records (storage/record.h). Appends encode into an in-memory, page-aligned pending
// buffer; poll() cuts it into one write per turn (group commit) with at most one write in
// flight, so the disk always holds a prefix of the log plus at most one torn batch. The
// partially filled tail page is carried into the next buffer and rewritten. Recent
// records are served from a cache; older ones are read back and re-verified.
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <atomic>

#include "io/aligned_buf.h"
#include "io/backend.h"
#include "io/fd_cache.h"
#include "storage/index.h"
#include "storage/record.h"
#include "storage/spare_block.h"

namespace storage {

struct file_store_config {
  std::string dir;
  durability dur = durability::write;
  std::uint64_t block_size = 64ull << 20;
  // A new store's first block is this small and each next block doubles, up to block_size,
  // so disk use follows the data (thousands of small streams, every KV bucket is one) while
  // a busy store still ends up with full-size blocks. A record that would not fit gets a
  // block large enough for it (up to block_size). Clamped to [4 KiB, block_size].
  std::uint64_t first_block_size = 16ull << 10;
  std::uint64_t cache_bytes = 8ull << 20;
  byte_accounting acct = byte_accounting::file;
  io::backend_kind backend = io::backend_kind::automatic;
  // Write zeros over a new block (then fdatasync) instead of leaving fallocate's unwritten
  // extents: a later O_DIRECT write then needs no journaled metadata change, so `write`
  // also survives an OS crash. Costs one sequential block write per rollover.
  bool prezero_blocks = true;
  // Where block file descriptors are kept open (nullptr: io::fd_cache::shared()). Idle
  // blocks are closed by the cache and reopened when read or written again.
  io::fd_cache* fds = nullptr;
};

// What recovery found and dropped. lost_seqs are message sequences whose records were
// corrupt (exact when the damaged record is bracketed by intact ones; otherwise the gap
// between the intact neighbours).
struct recovery_report {
  std::uint64_t blocks = 0;
  std::uint64_t records = 0;
  std::uint64_t corrupt_records = 0;
  std::vector<std::uint64_t> lost_seqs;
  std::uint64_t lost_bytes = 0;       // bytes of records dropped inside the log
  std::uint64_t truncated_bytes = 0;  // non-zero bytes cut from a torn tail
  std::vector<std::string> notes;     // one line per event, for the log
  std::int64_t elapsed_ns = 0;
  bool clean() const { return corrupt_records == 0 && truncated_bytes == 0; }
};

struct io_stats {
  std::uint64_t writes = 0;          // write submissions (batches)
  std::uint64_t records = 0;         // records written
  std::uint64_t bytes = 0;           // bytes written (padded)
  std::uint64_t short_writes = 0;
  std::uint64_t disk_reads = 0;
  std::uint64_t cache_hits = 0;
  std::uint64_t readahead_hits = 0;  // served from the read-ahead window
};

class file_store final : public indexed_store {
 public:
  // Opens (creating dir if needed) and recovers. be overrides the backend (tests inject
  // io::fault_backend through it).
  static base::result<std::unique_ptr<file_store>> open(const file_store_config& cfg,
                                                        std::unique_ptr<io::backend> be = nullptr);
  ~file_store() override;

  int poll() override;
  std::uint64_t durable_seq() const override { return _durable; }
  std::uint64_t backlog_bytes() const override;
  void on_durable(durable_fn fn) override { _on_durable = std::move(fn); }
  void on_error(error_fn fn) override { _on_error = std::move(fn); }
  base::status flush() override;
  base::status close() override;

  // Rewrites sealed blocks whose live bytes are at most max_live_ratio of their used bytes
  // (storage/compact.cc). Blocks the owner thread for the rewrite; returns bytes reclaimed.
  base::result<std::uint64_t> compact(double max_live_ratio = 0.5);

  // Owner metadata kept in the log itself (meta records; every new block repeats all of it,
  // so releasing old blocks never loses it): writing a config is one record through the
  // normal group-commit write, durable at the store's durability point once flush() (or
  // on_durable for a later append) says so, instead of a file + fsync + rename + dir fsync.
  // An empty value removes the key. Recovered by open().
  base::status set_meta(const std::string& key, std::string value);
  const std::map<std::string, std::string>& meta() const { return _meta; }

  const recovery_report& recovery() const { return _report; }
  const io_stats& stats() const { return _stats; }
  std::string_view backend_name() const { return _be->name(); }
  // Readable when I/O completed and poll() has work (io/backend.h); -1 if never needed.
  int completion_fd() { return _be->completion_fd(); }
  bool signal_completions_to(int efd) override {
    _wake_efd = efd;
    return _be->signal_completions_to(efd);
  }
  // flush() without waiting for a new store's first block to be synced (see _first_sync):
  // the bytes are written (they survive a process crash), for metadata such as a stream's
  // config, whose create answer must not wait for two journal commits.
  base::status write_through();
  std::size_t block_count() const { return _blocks.size(); }
  base::error failure() const { return _failed; }

 protected:
  base::status persist_msg(std::uint64_t seq, msg_entry& e, std::string_view subject,
                           std::string_view headers, std::string_view payload) override;
  base::result<stored_msg> fetch(std::uint64_t seq, const msg_entry& e) override;
  void persist_remove(std::uint64_t seq, const msg_entry& e, bool erase) override;
  void persist_purge(std::uint64_t first_keep) override;
  void persist_skip(std::uint64_t new_last) override;
  void dropped(std::uint64_t seq, const msg_entry& e) override;
  base::status check_writable() const override;

 private:
  struct block_file {
    std::uint32_t id = 0;
    std::uint64_t fd_key = 0;  // in _fds
    std::uint64_t size = 0;  // allocated bytes
    std::uint64_t live = 0;  // live messages in this block
  };
  struct segment {
    std::uint64_t token = 0;
    std::uint32_t block = 0;
    io::fd_pin fd;  // the block stays open while its bytes are queued or in flight
    std::uint64_t off = 0;  // file offset of buf[0], page aligned
    io::aligned_buf buf;
    std::size_t len = 0;   // padded length to write
    std::size_t done = 0;  // bytes confirmed (short-write resume)
    std::uint64_t last_seq = 0;
    std::uint32_t records = 0;
  };
  struct cached {
    std::uint64_t seq;
    std::string rec;
  };

  file_store(const file_store_config& cfg, std::unique_ptr<io::backend> be);
  base::status recover();  // storage/recovery.cc
  base::status scan_block(block_file& b, io::aligned_buf& data, std::uint64_t& end,
                          std::uint64_t& prev_seq);
  std::string block_path(std::uint32_t id) const;
  std::uint64_t next_block_size(std::uint64_t need) const;
  base::status new_block(std::uint64_t need);
  base::status install_block(std::uint32_t id, int fh, std::uint64_t size, bool sync_dir = true);
  base::status prezero(int fh, std::uint64_t size, bool sync = true);
  block_file* block_by_id(std::uint32_t id);
  // The block's descriptor, reopened if the cache closed it; open while the pin lives.
  base::result<io::fd_pin> pin_block(const block_file& b);
  bool block_busy(std::uint32_t id) const;  // bytes of it queued or in flight
  base::status append_record(rec_kind kind, std::uint64_t seq, std::int64_t ts, std::int64_t ttl,
                             std::string_view subj, std::string_view hdr, std::string_view payload,
                             std::uint64_t* loc);
  void log_control(rec_kind kind, std::uint64_t seq);
  void erase_record(std::uint64_t seq, const msg_entry& e);
  void cut();
  void submit_front();
  int reap(bool wait);
  void fail(base::error e);
  void trim_cache();
  void release_front_blocks();
  base::status write_opening();
  bool opening_written() const;
  void drain();
  bool first_block_synced();

  file_store_config _cfg;
  std::unique_ptr<io::backend> _be;
  io::fd_cache* _fds;
  std::deque<block_file> _blocks;
  io::aligned_buf _pend;
  std::uint64_t _pend_off = 0;   // file offset of _pend[0] in the active block
  std::size_t _pend_head = 0;    // carried-over bytes already handed to a segment
  std::uint32_t _pend_records = 0;
  std::deque<segment> _queue;    // sealed segments; the front may be in flight
  bool _inflight = false;
  std::uint64_t _next_token = 1;
  std::uint64_t _durable = 0;
  std::uint64_t _reported = 0;
  std::deque<cached> _cache;
  std::uint64_t _cache_bytes = 0;
  io::aligned_buf _read_buf;
  // Read-ahead window over one block: readers (consumers, direct get batches) move forward, so
  // one large read serves the records after the one asked for. Validated per record (checksum
  // and seq), so a stale window only costs a re-read.
  io::aligned_buf _win;
  std::uint32_t _win_block = 0;  // 0 = empty
  std::uint64_t _win_off = 0;
  std::size_t _win_len = 0;
  base::error _failed{base::errc::ok, 0};
  bool _closed = false;
  recovery_report _report;
  std::map<std::string, std::string> _meta;
  std::uint64_t _meta_bytes = 0;  // record bytes to repeat them all at a block's start
  // Token of the segment carrying the active block's opening records (skip + every meta);
  // older blocks hold the only other copy, so none is deleted before that segment is written.
  // Max while recovering (nothing is released before recovery checks the last block).
  std::uint64_t _opening_token = ~std::uint64_t(0);
  // Scan of the latest block: did it hold a skip record, which meta keys did it hold.
  bool _scan_has_skip = false;
  std::map<std::string, bool> _scan_keys;
  spare_block _spare;
  // A new store's first block is zeroed inline but its fdatasync and the directory fsync run
  // here, off the create path; nothing is reported durable (on_durable, flush) before it ends.
  std::thread _first_sync;
  std::atomic<bool> _first_sync_done{false};
  int _first_sync_err = 0;
  std::atomic<int> _wake_efd{-1};
  io_stats _stats;
  durable_fn _on_durable;
  error_fn _on_error;
};

}  // namespace storage
