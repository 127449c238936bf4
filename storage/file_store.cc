#include "storage/file_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/sync_backend.h"
#include "src/base/log.h"
#include "src/base/rng.h"
#include "storage/record.h"

namespace storage {
namespace {

constexpr int kOffBits = 40;
constexpr std::uint64_t kEraseToken = 1ull << 62;  // never a segment token
constexpr std::uint64_t kReadAhead = 1 << 20;       // read-ahead window on a cache miss
std::uint64_t make_loc(std::uint32_t block, std::uint64_t off) {
  return (std::uint64_t(block) << kOffBits) | off;
}
std::uint32_t loc_block(std::uint64_t loc) { return std::uint32_t(loc >> kOffBits); }
std::uint64_t loc_off(std::uint64_t loc) { return loc & ((1ull << kOffBits) - 1); }

stored_msg to_msg(const record_view& r) {
  stored_msg m;
  m.seq = r.seq;
  m.ts = r.ts;
  m.ttl = r.ttl;
  m.subject.assign(r.subject);
  m.headers.assign(r.headers);
  m.payload.assign(r.payload);
  return m;
}

}  // namespace

file_store::file_store(const file_store_config& cfg, std::unique_ptr<io::backend> be)
    : indexed_store(cfg.acct), _cfg(cfg), _be(std::move(be)),
      _fds(cfg.fds ? cfg.fds : &io::fd_cache::shared()) {}

file_store::~file_store() {
  if (_first_sync.joinable()) _first_sync.join();
  if (!_closed) {
    drain();  // a dropped store loses what was never submitted, like a crash would
    for (auto& b : _blocks) _fds->drop(b.fd_key);
  }
}

std::string file_store::block_path(std::uint32_t id) const {
  char name[32];
  std::snprintf(name, sizeof name, "/%08u.blk", id);
  return _cfg.dir + name;
}

file_store::block_file* file_store::block_by_id(std::uint32_t id) {
  if (_blocks.empty()) return nullptr;
  std::uint32_t first = _blocks.front().id;
  if (id >= first && id - first < _blocks.size() && _blocks[id - first].id == id)
    return &_blocks[id - first];
  for (auto& b : _blocks)
    if (b.id == id) return &b;
  return nullptr;
}

base::result<io::fd_pin> file_store::pin_block(const block_file& b) {
  return _fds->pin(b.fd_key, [this, id = b.id] { return _be->open(block_path(id), false); });
}

bool file_store::block_busy(std::uint32_t id) const {
  for (const auto& s : _queue)
    if (s.block == id) return true;
  return false;
}

base::status file_store::prezero(int fh, std::uint64_t size, bool sync) {
  // Plain pwrite on the fd: the backend's completion queue may hold our in-flight batch.
  static const io::aligned_buf zeros = [] {
    io::aligned_buf z(1 << 20);
    z.resize(1 << 20);
    return z;
  }();
  for (std::uint64_t off = 0; off < size; off += zeros.size()) {
    std::size_t n = std::size_t(std::min<std::uint64_t>(zeros.size(), size - off));
    if (::pwrite(fh, zeros.data(), n, off_t(off)) != ssize_t(n)) return io::sys_error(errno);
  }
  if (sync && ::fdatasync(fh) != 0) return io::sys_error(errno);
  return {};
}

std::uint64_t file_store::next_block_size(std::uint64_t need) const {
  const std::uint64_t cap = _cfg.block_size;
  std::uint64_t s = std::clamp<std::uint64_t>(io::align_up(_cfg.first_block_size), io::kDioAlign, cap);
  if (!_blocks.empty()) s = std::clamp<std::uint64_t>(_blocks.back().size * 2, s, cap);
  // The opening skip record plus the record that did not fit, so it never grows a file past
  // its zeroed preallocation (only a record larger than block_size still does).
  while (s < need + kRecHeader + _meta_bytes && s < cap) s *= 2;
  return std::min(s, cap);
}

base::status file_store::new_block(std::uint64_t need) {
  std::uint32_t id = _blocks.empty() ? 1 : _blocks.back().id + 1;
  std::string path = block_path(id);
  const std::uint64_t size = next_block_size(need);
  if (_spare.started() && _spare.size() != size) _spare.discard();  // sized for another record
  if (_spare.started()) {
    // Prepared off-thread while the previous block filled: only a rename is left.
    if (auto st = _spare.take(path); st) {
      // allocate() again is a no-op for the disk (the extent exists) but lets the backend
      // account the space, so space limits (and fault injection) see every block.
      auto fh = _be->open(path, false);
      if (fh) {
        auto st2 = _be->allocate(*fh, size);
        if (st2) return install_block(id, *fh, size);
        _be->close(*fh);
        ::unlink(path.c_str());
        return st2;
      }
      ::unlink(path.c_str());
    } else {
      PG_WARN("storage: spare block failed ({}), creating {} inline", base::errc_name(st.code()), path);
    }
  }
  auto fh = _be->open(path, true);
  if (!fh) return fh.err();
  if (auto st = _be->allocate(*fh, size); !st) {
    _be->close(*fh);
    ::unlink(path.c_str());
    return st;
  }
  // A new store's first block: its syncs go to a helper thread (see _first_sync).
  const bool deferred = _blocks.empty() && !_first_sync.joinable() && _cfg.prezero_blocks;
  if (_cfg.prezero_blocks) {
    if (auto st = prezero(*fh, size, !deferred); !st) {
      _be->close(*fh);
      ::unlink(path.c_str());
      return st;
    }
  }
  if (deferred) {
    int fd = ::dup(*fh);  // prezero writes through the handle too: it is the fd
    std::string dir = _cfg.dir;
    _first_sync = std::thread([this, fd, dir] {
      int err = fd < 0 || ::fdatasync(fd) != 0 ? errno : 0;
      if (fd >= 0) ::close(fd);
      int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) {
        if (::fsync(dfd) != 0 && !err) err = errno;
        ::close(dfd);
      }
      _first_sync_err = err;
      _first_sync_done.store(true, std::memory_order_release);
      // Wake the owner's loop: acks may be waiting for this, not for an I/O completion.
      if (int efd = _wake_efd; efd >= 0) {
        std::uint64_t one = 1;
        (void)!::write(efd, &one, sizeof one);
      }
    });
  }
  return install_block(id, *fh, size, !deferred);
}

bool file_store::first_block_synced() {
  if (!_first_sync.joinable()) return true;
  if (!_first_sync_done.load(std::memory_order_acquire)) return false;
  _first_sync.join();
  if (_first_sync_err) fail(io::sys_error(_first_sync_err));
  return true;
}

base::status file_store::install_block(std::uint32_t id, int fh, std::uint64_t size, bool sync_dir) {
  if (sync_dir) {
    // The new file's directory entry must survive an OS crash too (both durability points).
    int dfd = ::open(_cfg.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  cut();  // seal the old block's pending bytes before switching files
  block_file b;
  b.id = id;
  b.fd_key = _fds->add(fh);
  b.size = size;
  _blocks.push_back(b);
  _pend.clear();
  _pend_off = 0;
  _pend_head = 0;
  return write_opening();
}

base::status file_store::write_opening() {
  // Every block opens with the current last_seq and metadata, so dropping older blocks
  // never loses them, once these records are written (see opening_written()).
  _opening_token = _next_token;  // the next cut() carries them: no segment of this block is queued
  std::uint64_t loc;
  if (auto st = append_record(rec_kind::skip, last_seq(), _last_ts, 0, {}, {}, {}, &loc); !st) return st;
  for (const auto& [key, value] : _meta)
    if (auto st = append_record(rec_kind::meta, last_seq(), _last_ts, 0, key, {}, value, &loc); !st) return st;
  return {};
}

bool file_store::opening_written() const {
  return _opening_token < _next_token && (_queue.empty() || _queue.front().token > _opening_token);
}

base::status file_store::set_meta(const std::string& key, std::string value) {
  if (auto st = check_writable(); !st) return st;
  if (key.empty() || key.size() > 0xffff) return base::errc::invalid_argument;
  std::uint64_t loc;
  if (auto st = append_record(rec_kind::meta, last_seq(), _last_ts, 0, key, {}, value, &loc); !st) return st;
  if (auto it = _meta.find(key); it != _meta.end()) {
    _meta_bytes -= record_size(key.size(), 0, it->second.size());
    _meta.erase(it);
  }
  if (!value.empty()) {
    _meta_bytes += record_size(key.size(), 0, value.size());
    _meta.emplace(key, std::move(value));
  }
  return {};
}

base::status file_store::append_record(rec_kind kind, std::uint64_t seq, std::int64_t ts,
                                       std::int64_t ttl, std::string_view subj,
                                       std::string_view hdr, std::string_view payload,
                                       std::uint64_t* loc) {
  std::size_t r = record_size(subj.size(), hdr.size(), payload.size());
  if (r > kRecMaxLen) return base::errc::invalid_argument;
  std::uint64_t pos = _pend_off + _pend.size();
  // Roll over when the record does not fit, except into a fresh full-size block (one holding
  // only its opening skip and meta records): a record larger than block_size then grows it.
  const bool fresh = !_blocks.empty() && pos <= kRecHeader * 2 + _meta_bytes &&
                     _blocks.back().size >= _cfg.block_size;
  if (_blocks.empty() || (pos + r > _blocks.back().size && !fresh)) {
    if (auto st = new_block(r); !st) return st;
    pos = _pend_off + _pend.size();
  } else if (pos > _blocks.back().size / 2 && !_spare.started()) {
    _spare.start(_cfg.dir + "/next" + spare_block::kSuffix, next_block_size(0), _cfg.prezero_blocks);
  }
  std::size_t at = _pend.size();
  _pend.resize_uninit(at + r);  // encode_record writes every byte, padding too
  encode_record(_pend.data() + at, kind, seq, ts, ttl, subj, hdr, payload);
  ++_pend_records;
  *loc = make_loc(_blocks.back().id, pos);
  return {};
}

base::status file_store::check_writable() const {
  if (_failed.code != base::errc::ok) return _failed;
  if (_closed) return base::errc::closed;
  return {};
}

base::status file_store::persist_msg(std::uint64_t seq, msg_entry& e, std::string_view subject,
                                     std::string_view headers, std::string_view payload) {
  std::uint64_t loc;
  if (auto st = append_record(rec_kind::msg, seq, e.ts, e.ttl, subject, headers, payload, &loc);
      !st)
    return st;
  e.loc = loc;
  e.rec_len = std::uint32_t(record_size(subject.size(), headers.size(), payload.size()));
  block_by_id(loc_block(loc))->live++;
  std::string rec(e.rec_len, '\0');
  std::memcpy(rec.data(), _pend.data() + (loc_off(loc) - _pend_off), e.rec_len);
  _cache_bytes += rec.size();
  _cache.push_back({seq, std::move(rec)});
  trim_cache();
  return {};
}

void file_store::log_control(rec_kind kind, std::uint64_t seq) {
  if (_failed.code != base::errc::ok) return;
  std::uint64_t loc;
  if (auto st = append_record(kind, seq, _last_ts, 0, {}, {}, {}, &loc); !st) fail(st.err());
}

void file_store::persist_remove(std::uint64_t seq, const msg_entry& e, bool erase) {
  log_control(rec_kind::tomb, seq);
  if (erase && _failed.code == base::errc::ok) erase_record(seq, e);
}

void file_store::erase_record(std::uint64_t seq, const msg_entry& e) {
  // Overwrite the record in place with an `erased` record of the same length and random
  // contents, wherever its bytes live: queued buffers, the pending buffer, the cache, disk.
  drain();  // no buffer may be in flight while we patch it
  _win_block = 0;  // nor may a read-ahead copy keep the old bytes
  if (_failed.code != base::errc::ok) return;
  block_file* b = block_by_id(loc_block(e.loc));
  if (!b) return;
  const std::uint64_t off = loc_off(e.loc), len = e.rec_len;
  base::rng r(seq * 0x9e3779b97f4a7c15ULL ^ std::uint64_t(e.ts));
  std::size_t subj = subject_name(e.subj).size();
  std::string junk(subj + e.hdr_len + e.payload_len, '\0');
  for (auto& c : junk) c = char(r.next());
  std::string rec(len, '\0');
  encode_record(reinterpret_cast<std::uint8_t*>(rec.data()), rec_kind::erased, seq, e.ts, e.ttl,
                std::string_view(junk).substr(0, subj),
                std::string_view(junk).substr(subj, e.hdr_len),
                std::string_view(junk).substr(subj + e.hdr_len));
  auto patch = [&](std::uint8_t* base, std::uint64_t base_off, std::uint64_t base_len) {
    std::uint64_t lo = std::max(off, base_off), hi = std::min(off + len, base_off + base_len);
    if (lo < hi) std::memcpy(base + (lo - base_off), rec.data() + (lo - off), hi - lo);
  };
  std::uint64_t frontier = _blocks.back().id == b->id ? _pend_off + _pend_head : b->size;
  for (auto& sg : _queue) {
    if (sg.block != b->id) continue;
    patch(sg.buf.data(), sg.off, sg.buf.size());
    frontier = std::min(frontier, sg.off);
  }
  if (_blocks.back().id == b->id) patch(_pend.data(), _pend_off, _pend.size());
  for (auto& c : _cache)
    if (c.seq == seq) c.rec = rec;
  // On disk, only below the written frontier: patching ahead of unwritten bytes would put a
  // valid record after a hole.
  std::uint64_t hi = std::min(off + len, frontier);
  if (hi <= off) return;
  std::uint64_t p0 = io::align_down(off), p1 = io::align_up(hi);
  io::aligned_buf page;
  page.resize_uninit(p1 - p0);
  auto fd = pin_block(*b);
  if (!fd) return fail(fd.err());
  auto n = _be->read_at(fd->fd(), p0, page.data(), p1 - p0);
  if (!n || *n != p1 - p0) return fail(n ? base::error{base::errc::short_write, 0} : n.err());
  patch(page.data(), p0, hi - p0);
  if (auto st = _be->submit_write(fd->fd(), p0, page.data(), page.size(), true, kEraseToken); !st)
    return fail(st.err());
  io::completion c{};
  while (_be->reap(&c, 1, true) == 0) {
  }
  if (c.res != std::int32_t(page.size())) fail(io::sys_error(c.res < 0 ? -c.res : EIO));
}

void file_store::persist_purge(std::uint64_t first_keep) { log_control(rec_kind::purge, first_keep); }

void file_store::persist_skip(std::uint64_t new_last) { log_control(rec_kind::skip, new_last); }

void file_store::dropped(std::uint64_t, const msg_entry& e) {
  if (block_file* b = block_by_id(loc_block(e.loc)); b && b->live > 0) --b->live;
  release_front_blocks();
}

void file_store::release_front_blocks() {
  _win_block = 0;
  // Only a fully dead front block may go: tombstones only ever point backwards, so no
  // later block depends on it. The active block stays. And none goes before the active
  // block's own copy of last_seq and the metadata is on disk: a crash in between would
  // leave no copy (a stream's config lost).
  if (!opening_written()) return;
  while (_blocks.size() > 1 && _blocks.front().live == 0) {
    const block_file& b = _blocks.front();
    if (block_busy(b.id)) break;
    _fds->drop(b.fd_key);
    ::unlink(block_path(b.id).c_str());
    _blocks.pop_front();
  }
}

void file_store::trim_cache() {
  while (!_cache.empty() && _cache_bytes > _cfg.cache_bytes && _cache.front().seq <= _durable) {
    _cache_bytes -= _cache.front().rec.size();
    _cache.pop_front();
  }
}

base::result<stored_msg> file_store::fetch(std::uint64_t seq, const msg_entry& e) {
  record_view r;
  if (!_cache.empty() && seq >= _cache.front().seq) {
    auto it = std::lower_bound(_cache.begin(), _cache.end(), seq,
                               [](const cached& c, std::uint64_t s) { return c.seq < s; });
    if (it != _cache.end() && it->seq == seq) {
      ++_stats.cache_hits;
      auto* p = reinterpret_cast<const std::uint8_t*>(it->rec.data());
      if (decode_record(p, it->rec.size(), &r) != decode_result::ok) return base::errc::corrupt;
      return to_msg(r);
    }
  }
  block_file* b = block_by_id(loc_block(e.loc));
  if (!b) return base::errc::internal;
  std::uint64_t off = loc_off(e.loc);
  auto from_window = [&]() -> bool {
    if (_win_block != b->id || off < _win_off || off + e.rec_len > _win_off + _win_len) return false;
    return decode_record(_win.data() + (off - _win_off), _win_len - std::size_t(off - _win_off), &r) ==
               decode_result::ok &&
           r.kind == rec_kind::msg && r.seq == seq;
  };
  if (from_window()) {
    ++_stats.readahead_hits;
    return to_msg(r);
  }
  if (e.rec_len < kReadAhead / 4) {
    const std::uint64_t wstart = io::align_down(off);
    const std::uint64_t wend = std::min(b->size, std::max(wstart + kReadAhead, io::align_up(off + e.rec_len)));
    _win.resize_uninit(std::size_t(wend - wstart));
    auto fd = pin_block(*b);
    if (!fd) return fd.err();
    auto n = _be->read_at(fd->fd(), wstart, _win.data(), std::size_t(wend - wstart));
    if (!n) return n.err();
    ++_stats.disk_reads;
    _win_block = b->id;
    _win_off = wstart;
    _win_len = *n;
    if (from_window()) return to_msg(r);
    _win_block = 0;  // the window did not hold it (bytes not on disk yet?): read it alone
  }
  std::uint64_t start = io::align_down(off), end = io::align_up(off + e.rec_len);
  _read_buf.resize_uninit(end - start);
  auto fd = pin_block(*b);
  if (!fd) return fd.err();
  auto n = _be->read_at(fd->fd(), start, _read_buf.data(), end - start);
  if (!n) return n.err();
  ++_stats.disk_reads;
  if (decode_record(_read_buf.data() + (off - start), *n - (off - start), &r) != decode_result::ok ||
      r.kind != rec_kind::msg || r.seq != seq)
    return base::errc::corrupt;  // never serve bytes that fail their checksum
  return to_msg(r);
}

void file_store::cut() {
  if (_pend.size() == _pend_head || _blocks.empty()) return;
  auto fd = pin_block(_blocks.back());
  if (!fd) return fail(fd.err());
  segment s;
  s.token = _next_token++;
  s.block = _blocks.back().id;
  s.fd = std::move(*fd);
  s.off = _pend_off;
  s.last_seq = last_seq();
  s.records = _pend_records;
  std::size_t size = _pend.size();
  s.buf = std::move(_pend);
  s.len = s.buf.padded_size();
  std::size_t tail = io::align_down(size);
  _pend = io::aligned_buf(std::max<std::size_t>(s.buf.capacity(), io::kDioAlign));
  _pend.append(s.buf.data() + tail, size - tail);  // the tail page, rewritten next time
  _pend_off += tail;
  _pend_head = _pend.size();
  _pend_records = 0;
  _queue.push_back(std::move(s));
}

void file_store::submit_front() {
  if (_inflight || _queue.empty() || _failed.code != base::errc::ok) return;
  segment& s = _queue.front();
  auto st = _be->submit_write(s.fd.fd(), s.off + s.done, s.buf.data() + s.done, s.len - s.done,
                              _cfg.dur == durability::sync, s.token);
  if (!st) {
    fail(st.err());
    return;
  }
  _inflight = true;
}

void file_store::fail(base::error e) {
  if (_failed.code != base::errc::ok) return;
  _failed = e;
  PG_ERROR("storage: {} write failed ({}, errno {}); sequences {}..{} not durable", _cfg.dir,
           base::errc_name(e.code), e.sys_errno, _durable + 1, last_seq());
  if (_on_error && last_seq() > _durable) _on_error(e, _durable + 1, last_seq());
}

int file_store::reap(bool wait) {
  // Nothing of ours in flight (synchronous ops reap their own): an idle store, polled on the
  // 1 ms sweep beside thousands of others, takes neither the shared ring's lock nor a look.
  if (!_inflight) return 0;
  io::completion cs[16];
  int n = _be->reap(cs, 16, wait);
  for (int i = 0; i < n; ++i) {
    const io::completion& c = cs[i];
    if (_queue.empty() || c.token != _queue.front().token) continue;
    segment& s = _queue.front();
    _inflight = false;
    if (c.res < 0) {
      fail(io::sys_error(-c.res));
      continue;
    }
    s.done += std::size_t(c.res);
    if (s.done < s.len) {
      ++_stats.short_writes;
      if (c.res == 0) {
        fail({base::errc::short_write, 0});
        continue;
      }
      s.done = io::align_down(s.done);  // resume at a page boundary
      submit_front();
      continue;
    }
    ++_stats.writes;
    _stats.records += s.records;
    _stats.bytes += s.len;
    _durable = std::max(_durable, s.last_seq);
    _queue.pop_front();
  }
  if (n > 0) {
    trim_cache();
    release_front_blocks();
  }
  return n;
}

std::uint64_t file_store::backlog_bytes() const {
  std::uint64_t n = _pend.size() - _pend_head;
  for (const auto& sg : _queue) n += sg.len - sg.done;
  return n;
}

int file_store::poll() {
  int work = reap(false);
  if (_failed.code == base::errc::ok && !_inflight) {
    if (_queue.empty()) cut();
    if (!_queue.empty()) {
      submit_front();
      ++work;
    }
  }
  if (_durable > _reported && first_block_synced()) {
    _reported = _durable;
    if (_on_durable) _on_durable(_durable);
  }
  return work;
}

base::status file_store::flush() {
  auto st = write_through();
  if (_first_sync.joinable()) {
    _first_sync.join();
    (void)first_block_synced();
    poll();  // report what the sync made durable
  }
  if (_failed.code != base::errc::ok) return _failed;
  return st;
}

base::status file_store::write_through() {
  while (_failed.code == base::errc::ok) {
    poll();
    if (!_inflight && _queue.empty() && _pend.size() == _pend_head) break;
    if (_inflight) reap(true);
  }
  poll();
  if (_failed.code != base::errc::ok) return _failed;
  return {};
}

void file_store::drain() {
  while (_inflight) reap(true);
}

base::status file_store::close() {
  if (_closed) return {};
  auto st = flush();
  drain();
  _queue.clear();  // unpins the blocks
  for (auto& b : _blocks) _fds->drop(b.fd_key);
  _spare.discard();
  _closed = true;
  return st;
}

}  // namespace storage
