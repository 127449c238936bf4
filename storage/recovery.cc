// file_store open and recovery: scan every block, verify every checksum, replay records
// into the indexes, drop corrupt records, truncate a torn tail, report what was lost.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>

#include "io/sync_backend.h"
#include "src/base/log.h"
#include "storage/file_store.h"
#include "storage/record.h"

namespace storage {
namespace {

std::uint64_t make_loc(std::uint32_t block, std::uint64_t off) {
  return (std::uint64_t(block) << 40) | off;
}

// Next offset >= from holding an intact message record newer than prev_seq, or 0.
std::uint64_t resync(const std::uint8_t* p, std::uint64_t n, std::uint64_t from,
                     std::uint64_t prev_seq, record_view* out) {
  for (std::uint64_t o = rec_pad(from); o + kRecHeader <= n; o += kRecAlign) {
    std::uint64_t w;
    std::memcpy(&w, p + o, 8);
    if (w == 0) continue;  // preallocated zeros: the common case, skip fast
    auto len = std::uint32_t(w);
    if (len < kRecHeader || len > n - o) continue;
    if (decode_record(p + o, n - o, out) == decode_result::ok &&
        (out->kind == rec_kind::msg || out->kind == rec_kind::erased) && out->seq > prev_seq)
      return o;
  }
  return 0;
}

// Bytes from `from` up to the last non-zero byte before n.
std::uint64_t nonzero_extent(const std::uint8_t* p, std::uint64_t from, std::uint64_t n) {
  std::uint64_t last = n;
  while (last > from && (last - from) % 8) {
    if (p[last - 1]) return last - from;
    --last;
  }
  while (last > from) {
    std::uint64_t w;
    std::memcpy(&w, p + last - 8, 8);
    if (w) break;
    last -= 8;
  }
  while (last > from && p[last - 1] == 0) --last;
  return last - from;
}

bool all_zero(const std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w) return false;
  }
  return true;
}

constexpr std::size_t kReadChunk = 8u << 20;

// Reads a block in chunks, stopping at a chunk of zeros: the preallocated, never-written
// rest. Plain pread, so it can run on a helper thread.
base::status read_block(int fd, std::uint64_t size, io::aligned_buf& data) {
  data.clear();
  std::uint64_t want = io::align_up(size), got = 0;
  data.reserve(std::min<std::uint64_t>(want, 64ull << 20));
  while (got < want) {
    std::size_t chunk = std::size_t(std::min<std::uint64_t>(kReadChunk, want - got));
    data.resize_uninit(got + chunk);
    auto n = io::pread_full(fd, got, data.data() + got, chunk);
    if (!n) return n.err();
    bool zeros = all_zero(data.data() + got, *n);
    got += *n;
    data.resize_uninit(got);
    if (*n < chunk || (zeros && got > chunk)) break;
  }
  return {};
}

}  // namespace

base::result<std::unique_ptr<file_store>> file_store::open(const file_store_config& cfg,
                                                           std::unique_ptr<io::backend> be) {
  if (cfg.block_size < (64u << 10) || !io::is_aligned(cfg.block_size))
    return base::errc::invalid_argument;
  std::error_code ec;
  std::filesystem::create_directories(cfg.dir, ec);
  if (ec) return base::error{base::errc::io_error, ec.value()};
  if (!be) be = io::make_backend(cfg.dir, cfg.backend);
  std::unique_ptr<file_store> fs(new file_store(cfg, std::move(be)));
  if (auto st = fs->recover(); !st) return st.err();
  return fs;
}

base::status file_store::scan_block(block_file& b, io::aligned_buf& data, std::uint64_t& end,
                                    std::uint64_t& prev_seq) {
  const std::uint8_t* p = data.data();
  std::uint64_t n = data.size(), off = 0;
  end = 0;
  _scan_has_skip = false;
  _scan_keys.clear();
  while (off + 4 <= n) {
    record_view r;
    decode_result d = decode_record(p + off, n - off, &r);
    bool stale = d == decode_result::ok &&
                 (r.kind == rec_kind::msg || r.kind == rec_kind::erased) && r.seq <= prev_seq;
    if (d == decode_result::ok && !stale) {
      ++_report.records;
      switch (r.kind) {
        case rec_kind::msg:
          if (r.seq > last_seq()) {
            msg_entry e;
            e.ts = r.ts;
            e.ttl = r.ttl;
            e.loc = make_loc(b.id, off);
            e.hdr_len = std::uint32_t(r.headers.size());
            e.payload_len = std::uint32_t(r.payload.size());
            e.rec_len = std::uint32_t(rec_pad(r.len));
            replay_msg(r.seq, e, r.subject);
            ++b.live;
          }
          prev_seq = r.seq;
          break;
        case rec_kind::erased:
          replay_skip(r.seq, r.ts);
          prev_seq = r.seq;
          break;
        case rec_kind::tomb: replay_remove(r.seq); break;
        case rec_kind::purge: replay_purge(r.seq, r.ts); break;
        case rec_kind::skip:
          replay_skip(r.seq, r.ts);
          _scan_has_skip = true;
          break;
        case rec_kind::meta:
          _scan_keys[std::string(r.subject)] = true;
          // In log order, so the last value wins; an empty one removed the key.
          if (auto it = _meta.find(std::string(r.subject)); it != _meta.end()) {
            _meta_bytes -= record_size(it->first.size(), 0, it->second.size());
            _meta.erase(it);
          }
          if (!r.payload.empty()) {
            _meta_bytes += record_size(r.subject.size(), 0, r.payload.size());
            _meta.emplace(std::string(r.subject), std::string(r.payload));
          }
          break;
      }
      off += rec_pad(r.len);
      continue;
    }
    // Damage or the end of data: is there anything intact further on?
    record_view next;
    std::uint64_t at = resync(p, n, off + kRecAlign, prev_seq, &next);
    if (at == 0) {
      if (d != decode_result::end) {
        _report.truncated_bytes += nonzero_extent(p, off, n);
        ++_report.corrupt_records;
        _report.notes.push_back(fmt::format("block {}: torn tail at offset {}, {} bytes cut", b.id,
                                            off, _report.truncated_bytes));
      }
      end = off;
      return {};
    }
    ++_report.corrupt_records;
    _report.lost_bytes += at - off;
    // The damaged record's own header names its seq when it sits between intact neighbours.
    std::uint64_t hseq = 0;
    if (off + kRecHeader <= n) std::memcpy(&hseq, p + off + 8, 8);
    std::uint64_t lost_from = prev_seq + 1, lost_to = next.seq - 1;
    std::uint32_t hlen = 0;
    if (off + 4 <= n) std::memcpy(&hlen, p + off, 4);
    if (d == decode_result::corrupt && hseq > prev_seq && hseq < next.seq && hlen >= kRecHeader &&
        off + rec_pad(hlen) == at)
      lost_from = lost_to = hseq;
    for (std::uint64_t s = lost_from; s <= lost_to && s - lost_from < 1'000'000; ++s)
      _report.lost_seqs.push_back(s);
    _report.notes.push_back(fmt::format("block {}: {} damaged bytes at offset {}, lost seqs {}..{}",
                                        b.id, at - off, off, lost_from, lost_to));
    off = at;
  }
  end = off;
  return {};
}

base::status file_store::recover() {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::uint32_t> ids;
  std::error_code ec;
  for (const auto& de : std::filesystem::directory_iterator(_cfg.dir, ec)) {
    std::string name = de.path().filename().string();
    if (name.ends_with(".blk.compact") || name.ends_with(spare_block::kSuffix)) {
      // a compaction that never reached its rename, or a spare block never taken
      std::filesystem::remove(de.path(), ec);
      continue;
    }
    if (name.size() == 12 && name.ends_with(".blk") &&
        std::all_of(name.begin(), name.begin() + 8, [](char c) { return c >= '0' && c <= '9'; }))
      ids.push_back(std::uint32_t(std::stoul(name.substr(0, 8))));
  }
  if (ec) return base::error{base::errc::io_error, ec.value()};
  std::sort(ids.begin(), ids.end());
  // Block i+1 is read on a helper thread while block i is scanned (recovery is I/O bound).
  struct opened {
    std::uint32_t id = 0;
    int fh = -1;
    std::uint64_t size = 0;
  };
  auto open_block = [&](std::uint32_t id) -> base::result<opened> {
    auto fh = _be->open(block_path(id), false);
    if (!fh) return fh.err();
    auto size = _be->file_size(*fh);
    if (!size) {
      _be->close(*fh);
      return size.err();
    }
    return opened{id, *fh, *size};
  };
  auto start_read = [](const opened& o, io::aligned_buf* buf) {
    return std::async(std::launch::async, [o, buf] { return read_block(o.fh, o.size, *buf); });
  };
  std::uint64_t prev_seq = 0, end = 0;
  io::aligned_buf bufs[2];
  std::future<base::status> ahead;
  base::result<opened> next = base::errc::not_found;
  if (!ids.empty()) {
    next = open_block(ids[0]);
    if (!next) return next.err();
    ahead = start_read(*next, &bufs[0]);
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    opened cur = *next;
    block_file b;
    b.id = cur.id;
    // The file's own size: blocks grow from first_block_size (a block cut short, e.g. by a
    // crash before its preallocation, is simply rolled over at the next append).
    b.size = io::align_down(cur.size);
    auto read = ahead.get();  // the cache may close the fd once it has it: not before this
    b.fd_key = _fds->add(cur.fh);
    _blocks.push_back(b);
    if (!read) return read;
    if (i + 1 < ids.size()) {
      next = open_block(ids[i + 1]);
      if (!next) return next.err();
      ahead = start_read(*next, &bufs[(i + 1) % 2]);
    }
    if (auto st = scan_block(_blocks.back(), bufs[i % 2], end, prev_seq); !st) return st;
    ++_report.blocks;
  }
  io::aligned_buf& data = bufs[ids.empty() ? 0 : (ids.size() - 1) % 2];
  if (_blocks.empty()) {
    if (auto st = new_block(0); !st) return st;
  } else {
    block_file& b = _blocks.back();
    auto fd = pin_block(b);
    if (!fd) return fd.err();
    const int fh = fd->fd();
    _pend_off = io::align_down(end);
    _pend.clear();
    _pend.append(data.data() + _pend_off, end - _pend_off);
    _pend_head = _pend.size();
    if (nonzero_extent(data.data(), end, data.size()) > 0) {
      // Clear the torn bytes on disk now, so a later crash cannot resurrect them.
      io::aligned_buf page(io::kDioAlign);
      page.append(_pend.data(), _pend.size());
      std::size_t len = page.padded_size();
      if (auto st = _be->zero_range(fh, _pend_off + len, b.size - std::min(b.size, _pend_off + len)); !st)
        PG_WARN("storage: zeroing torn tail failed: {}", base::errc_name(st.code()));
      if (len) {
        if (auto st = _be->submit_write(fh, _pend_off, page.data(), len, true, 1); !st) return st;
        io::completion c;
        while (_be->reap(&c, 1, true) == 0) {
        }
        if (c.res < 0) return base::error{base::errc::io_error, -c.res};
      }
      if (auto st = _be->datasync(fh); !st) return st;
    }
  }
  // A crash between creating a block and writing its opening records leaves a last block
  // without its copy of last_seq and the metadata (only older blocks hold them): write it
  // now, before any older block can be released.
  bool opened = ids.empty() || _scan_has_skip;  // a new store's block was just opened above
  for (const auto& kv : _meta) opened &= _scan_keys.count(kv.first) > 0;
  if (!opened) {
    const block_file& b = _blocks.back();
    const std::uint64_t pos = _pend_off + _pend.size();
    if (pos + kRecHeader + _meta_bytes <= b.size) {
      _report.notes.push_back(fmt::format("block {}: rewriting its opening records (a crash came before them)", b.id));
      if (auto st = write_opening(); !st) return st;
    } else if (auto st = new_block(0); !st) {
      return st;
    }
  } else if (_opening_token == ~std::uint64_t(0)) {
    _opening_token = 0;  // the last block's opening is on disk
  }
  _durable = _reported = last_seq();
  _lost = _report.lost_seqs;
  _lost_bytes = _report.lost_bytes;
  release_front_blocks();
  _report.elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - t0)
                           .count();
  for (const auto& line : _report.notes) PG_WARN("storage: {}: {}", _cfg.dir, line);
  return {};
}

}  // namespace storage
