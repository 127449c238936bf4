#include "src/repl/disk_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <cstring>
#include <string>

#include "src/base/log.h"
#include "src/repl/log_record.h"
#include "src/repl/snapshot_files.h"

namespace repl {
namespace {

constexpr std::size_t kHeader = 16;
constexpr std::uint32_t kMaxBody = (1u << 30) + (1u << 20);  // a snapshot record (log_record.cc) fits
// `write` mode: zeroes are written (durable) 1 MiB at a time while fewer than 4 MiB of them
// lie ahead of the end; a zero write's token (record writes use their seq, far below).
constexpr std::uint64_t kZeroChunk = 1u << 20;
constexpr std::uint64_t kZeroAhead = 4u << 20;
constexpr std::uint64_t kZeroToken = 1ull << 62;

const io::aligned_buf& zero_chunk() {
  static const io::aligned_buf zeros = [] {
    io::aligned_buf z(kZeroChunk);
    z.resize(kZeroChunk);
    return z;
  }();
  return zeros;
}

// A new journal's directory entry, so the file itself survives an OS crash.
void sync_parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

void put_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(std::uint8_t(v >> (8 * i)));
}
std::uint64_t get_le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t(p[i]) << (8 * i);
  return v;
}

bool decode_group_definition(std::span<const std::uint8_t> b, group_definition& out) {
  if (b.size() < 10) return false;
  group_definition d;
  d.group = get_le(b.data(), 8);
  const std::size_t n = get_le(b.data() + 8, 2);
  std::size_t at = 10;
  for (std::size_t i = 0; i < n; ++i) {
    if (at >= b.size()) return false;
    const std::size_t len = b[at++];
    if (b.size() - at < len) return false;
    d.members.emplace_back(reinterpret_cast<const char*>(b.data() + at), len);
    at += len;
  }
  if (at != b.size() || d.group == 0) return false;
  out = std::move(d);
  return true;
}

}  // namespace

void append_journal_record(std::vector<std::uint8_t>& out, std::uint64_t group,
                           std::span<const std::uint8_t> body) {
  const std::size_t start = out.size();
  put_le(out, 0, 4);
  put_le(out, body.size(), 4);
  put_le(out, group, 8);
  out.insert(out.end(), body.begin(), body.end());
  const std::uint32_t c = record_crc({out.data() + start + 4, out.size() - start - 4});
  for (int i = 0; i < 4; ++i) out[start + std::size_t(i)] = std::uint8_t(c >> (8 * i));
}

std::vector<std::uint8_t> encode_group_definition(const group_definition& def) {
  std::vector<std::uint8_t> out;
  put_le(out, def.group, 8);
  put_le(out, def.members.size(), 2);
  for (const std::string& m : def.members) {
    out.push_back(std::uint8_t(m.size()));
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

base::result<std::unique_ptr<disk_journal>> disk_journal::open(const std::string& path,
                                                               std::unique_ptr<io::backend> b,
                                                               bool sync_writes) {
  auto fh = b->open(path, true);
  if (!fh) return fh.err();
  std::unique_ptr<disk_journal> j(new disk_journal(std::move(b), *fh, sync_writes, path));
  const auto slash = path.find_last_of('/');
  j->_snapshot_dir = (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/snapshots";
  if (auto st = j->recover(); !st) return st.err();
  if (j->_end == 0) sync_parent_dir(path);
  return j;
}

disk_journal::~disk_journal() {
  if (_writer.joinable()) _writer.join();
  if (_rewriting) ::unlink((_path + ".new").c_str());  // never renamed: the old file stands
  while (_in_flight || _zero_in_flight) reap_one(true);
  if (_fh >= 0) _io->close(_fh);
}

base::status disk_journal::recover() {
  auto size = _io->file_size(_fh);
  if (!size) return size.err();
  io::aligned_buf data;
  data.resize(io::align_up(*size));
  if (*size > 0) {
    auto got = _io->read_at(_fh, 0, data.data(), data.size());
    if (!got) return got.err();
  }
  const std::uint8_t* p = data.data();
  std::uint64_t at = 0;
  while (*size - at >= kHeader) {
    const std::uint32_t crc = std::uint32_t(get_le(p + at, 4));
    const std::uint64_t len = get_le(p + at + 4, 4);
    const std::uint64_t group = get_le(p + at + 8, 8);
    if (len > kMaxBody || *size - at - kHeader < len) break;
    if (!record_crc_matches({p + at + 4, std::size_t(kHeader - 4 + len)}, crc)) break;
    std::span<const std::uint8_t> body(p + at + kHeader, std::size_t(len));
    if (group == 0) {
      group_definition d;
      if (!decode_group_definition(body, d)) break;
      if (d.members.empty()) _recovered.erase(d.group);  // removed
      else _recovered[d.group].def = d;
    } else {
      // A record for a group never defined is kept aside: it cannot happen unless the
      // definition record was lost, and then the group is not restarted.
      if (replay_records(body, _recovered[group].log) != body.size()) break;
    }
    at += kHeader + len;
  }
  std::erase_if(_recovered, [](const auto& kv) { return kv.second.def.group == 0; });
  load_snapshot_files();
  _end = at;
  // Every write is zero-padded to a block: only non-zero bytes past the end are a torn tail.
  std::uint64_t last = *size;
  while (last > at && p[last - 1] == 0) --last;
  _dropped_tail = last - at;
  if (_dropped_tail > 0) {
    PG_WARN("replication journal: dropped {} bytes of torn tail after {} bytes", _dropped_tail, at);
    // Whole blocks past the new end are zeroed, so a stale record there can never follow
    // later appends; the partial block is rewritten (zero-padded) by the next write.
    if (*size > io::align_up(at))
      if (auto st = _io->zero_range(_fh, io::align_up(at), *size - io::align_up(at)); !st) return st;
  }
  _tail.assign(p + io::align_down(at), p + at);
  // Written by the last process at its durability point, metadata included, as far as the
  // file reaches (a torn write may end it inside a block); past it the zeroes are written
  // again (zero_range above leaves unwritten extents).
  _safe_to = std::min(io::align_up(at), io::align_down(*size));
  return {};
}

// Each group's newest snapshot data from its file; files no group names any more go.
void disk_journal::load_snapshot_files() {
  std::error_code ec;
  std::filesystem::create_directories(_snapshot_dir, ec);
  std::set<std::string> named;
  for (auto& [id, rec] : _recovered) {
    auto& snap = rec.log.snapshot;
    if (!snap || snap->data || snap->file.empty()) continue;
    auto data = read_snapshot_file(_snapshot_dir, snap->file, snap->size, snap->crc);
    if (data) {
      snap->data = std::move(*data);
      named.insert(snap->file);
      continue;
    }
    // The state before the log is gone: the group starts empty and the leader sends it all.
    PG_ERROR("replication journal: group {}'s snapshot {} is missing or corrupt; it restarts empty", id,
             snap->file);
    rec.log.snapshot.reset();
    rec.log.entries.clear();
    rec.log.start_index = 1;
  }
  for (const std::string& f : list_snapshot_files(_snapshot_dir))
    if (!named.count(f)) remove_snapshot_file(_snapshot_dir, f);
}

std::uint64_t disk_journal::append(std::uint64_t group, std::span<const std::uint8_t> body) {
  if (_rewriting) append_journal_record(_since, group, body);
  append_journal_record(_pending, group, body);
  _pending_seq = _next_seq++;
  return _pending_seq;
}

std::uint64_t disk_journal::define_group(const group_definition& def) {
  const auto body = encode_group_definition(def);
  return append(0, body);
}

std::uint64_t disk_journal::remove_group(std::uint64_t group) {
  return define_group({group, {}});
}

namespace {

bool write_all(int fd, const std::uint8_t* p, std::size_t n, std::uint64_t off) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, off_t(off));
    if (w <= 0) return false;
    p += w;
    n -= std::size_t(w);
    off += std::uint64_t(w);
  }
  return true;
}

}  // namespace

bool disk_journal::begin_rewrite(std::vector<std::uint8_t> image) {
  if (_rewriting || _failed) return false;
  _rewriting = true;
  _since.clear();
  _image_bytes = image.size();
  _writer_state = 0;
  _writer = std::thread([this, image = std::move(image)] {
    const std::string tmp = _path + ".new";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const bool ok = fd >= 0 && write_all(fd, image.data(), image.size(), 0) && ::fdatasync(fd) == 0;
    if (fd >= 0) ::close(fd);
    _writer_state = ok ? 1 : -1;
  });
  return true;
}

bool disk_journal::poll_rewrite() {
  if (!_rewriting || _writer_state.load() == 0) return false;
  _writer.join();
  const bool ok = _writer_state.load() == 1 && finish_rewrite();
  _rewriting = false;
  _since.clear();
  _since.shrink_to_fit();
  if (!ok) ::unlink((_path + ".new").c_str());
  return ok;
}

bool disk_journal::finish_rewrite() {
  // Everything appended meanwhile is durable in the old file first: its seqs are reported
  // from there, and the new file gets the same records.
  if (!sync()) return false;
  while (_zero_in_flight) reap_one(true);
  const std::string tmp = _path + ".new";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::uint64_t end = _image_bytes + _since.size();
  std::vector<std::uint8_t> pad(io::align_up(end) - end, 0);
  const bool ok = write_all(fd, _since.data(), _since.size(), _image_bytes) &&
                  write_all(fd, pad.data(), pad.size(), end) && ::fdatasync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), _path.c_str()) != 0) return false;
  sync_parent_dir(_path);
  // The old file is gone from the directory: continue in the new one.
  auto fh = _io->open(_path, false);
  if (!fh) {
    PG_ERROR("replication journal: cannot reopen {} after a rewrite ({}); replication stops", _path,
             fh.err().sys_errno);
    _failed = true;
    return false;
  }
  _io->close(_fh);
  _fh = *fh;
  const std::uint64_t before = _end;
  _end = end;
  std::vector<std::uint8_t> tail;
  const std::uint64_t from = io::align_down(end);
  if (from < _image_bytes) {
    // The last block starts in the image: read it back (it is durable now).
    io::aligned_buf b;
    b.resize(io::kDioAlign);
    auto got = _io->read_at(_fh, from, b.data(), io::kDioAlign);
    if (!got) {
      _failed = true;
      return false;
    }
    tail.assign(b.data(), b.data() + (end - from));
  } else {
    tail.assign(_since.end() - std::ptrdiff_t(end - from), _since.end());
  }
  _tail = std::move(tail);
  _safe_to = io::align_up(end);  // written, padded and synced with its size
  _zero_done_start = _zero_done_end = 0;
  PG_INFO("Replication journal rewritten: {} bytes (was {})", _end, before);
  return true;
}

void disk_journal::flush() {
  if (_in_flight || _pending.empty() || _failed) return prepare_ahead();
  const std::uint64_t off = io::align_down(_end);
  const std::uint64_t end = off + io::align_up(_tail.size() + _pending.size());
  const bool inside = end <= _safe_to;
  if (_zero_in_flight && end > _zero_start) return;  // its zeroes would land on ours: after it
  _buf.clear();
  _buf.append(_tail.data(), _tail.size());
  _buf.append(_pending.data(), _pending.size());
  const std::size_t len = _buf.padded_size();
  _flight_bytes = _pending.size();
  _flight_seq = _pending_seq;
  _flight_end = end;
  _flight_durable = _sync || !inside;
  _pending.clear();
  if (auto st = _io->submit_write(_fh, off, _buf.data(), len, _flight_durable, _flight_seq); !st) {
    PG_ERROR("replication journal: write failed to start ({}); replication stops", st.err().sys_errno);
    _failed = true;
    return;
  }
  _in_flight = true;
  prepare_ahead();
}

void disk_journal::prepare_ahead() {
  if (_sync || _failed || _zero_in_flight) return;
  // Past a write in flight that grows the file (its own sync makes it safe), never over it.
  const std::uint64_t start = _in_flight ? std::max(_safe_to, _flight_end) : _safe_to;
  if (start >= io::align_down(_end) + kZeroAhead || _zero_done_end > 0) return;
  if (auto st = _io->submit_write(_fh, start, zero_chunk().data(), kZeroChunk, true, kZeroToken); !st) {
    PG_WARN("replication journal: cannot zero ahead ({}); every write is synced from now", st.err().sys_errno);
    _sync = true;
    return;
  }
  _zero_start = start;
  _zero_end = start + kZeroChunk;
  _zero_in_flight = true;
}

// A zero write that finished past a gap (a durable record write still in flight) joins the
// safe region once that write has.
void disk_journal::merge_zeroed() {
  if (_zero_done_end > 0 && _zero_done_start <= _safe_to) {
    _safe_to = std::max(_safe_to, _zero_done_end);
    _zero_done_start = _zero_done_end = 0;
  }
}

void disk_journal::complete(std::int32_t res) {
  _in_flight = false;
  const std::uint64_t start = io::align_down(_end);
  if (res < 0 || std::uint64_t(res) < _tail.size() + _flight_bytes) {
    PG_ERROR("replication journal: write failed ({}); replication stops", res);
    _failed = true;
    return;
  }
  _end += _flight_bytes;
  const std::uint64_t from = io::align_down(_end) - start;
  _tail.assign(_buf.data() + from, _buf.data() + (_end - start));
  _durable_seq = _flight_seq;
  if (_flight_durable) _safe_to = std::max(_safe_to, _flight_end);
  merge_zeroed();
}

bool disk_journal::reap_one(bool wait) {
  io::completion c;
  if (_io->reap(&c, 1, wait) == 0) return false;
  if (c.token != kZeroToken) {
    complete(c.res);
    return true;
  }
  _zero_in_flight = false;
  if (c.res == std::int32_t(kZeroChunk)) {
    _zero_done_start = _zero_start;
    _zero_done_end = _zero_end;
    merge_zeroed();
  } else {
    PG_WARN("replication journal: zeroing ahead failed ({}); every write is synced from now", c.res);
    _sync = true;
  }
  return true;
}

bool disk_journal::poll() {
  const std::uint64_t before = _durable_seq;
  while ((_in_flight || _zero_in_flight) && reap_one(false)) {
  }
  return _durable_seq != before && !_failed;
}

base::status disk_journal::sync() {
  while (!_failed && (_in_flight || !_pending.empty())) {
    if (!_in_flight) flush();  // may wait behind a zero write
    if (!_in_flight && !_zero_in_flight) break;
    reap_one(true);
  }
  if (_failed || !_pending.empty()) return base::error{base::errc::io_error, 5};
  return {};
}

}  // namespace repl
