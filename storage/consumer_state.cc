#include "storage/consumer_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <thread>

#include "io/sync_backend.h"
#include "src/base/crc32c.h"

namespace storage {
namespace {

constexpr std::uint64_t kMagic = 0x5047435331ull;  // "PGCS1"

void put(std::string& o, std::uint64_t v) { o.append(reinterpret_cast<const char*>(&v), 8); }
bool get(std::string_view& in, std::uint64_t& v) {
  if (in.size() < 8) return false;
  std::memcpy(&v, in.data(), 8);
  in.remove_prefix(8);
  return true;
}

}  // namespace

std::string encode_consumer_state(const consumer_state& s) {
  std::string o;
  put(o, kMagic);
  put(o, s.delivered.consumer);
  put(o, s.delivered.stream);
  put(o, s.ack_floor.consumer);
  put(o, s.ack_floor.stream);
  put(o, s.pending.size());
  for (const auto& [sseq, p] : s.pending) {
    put(o, sseq);
    put(o, p.consumer_seq);
    put(o, std::uint64_t(p.ts));
  }
  put(o, s.redelivered.size());
  for (const auto& [sseq, n] : s.redelivered) {
    put(o, sseq);
    put(o, n);
  }
  put(o, base::crc32c(o.data(), o.size()));
  return o;
}

base::result<consumer_state> decode_consumer_state(std::string_view in) {
  if (in.size() < 16) return base::errc::corrupt;
  std::uint64_t crc;
  std::memcpy(&crc, in.data() + in.size() - 8, 8);
  if (crc != base::crc32c(in.data(), in.size() - 8)) return base::errc::corrupt;
  in.remove_suffix(8);
  consumer_state s;
  std::uint64_t magic, n, a, b, c;
  if (!get(in, magic) || magic != kMagic || !get(in, s.delivered.consumer) ||
      !get(in, s.delivered.stream) || !get(in, s.ack_floor.consumer) || !get(in, s.ack_floor.stream))
    return base::errc::corrupt;
  if (!get(in, n) || n > in.size() / 24) return base::errc::corrupt;
  for (std::uint64_t i = 0; i < n; ++i) {
    get(in, a);
    get(in, b);
    get(in, c);
    s.pending[a] = {b, std::int64_t(c)};
  }
  if (!get(in, n) || n > in.size() / 16) return base::errc::corrupt;
  for (std::uint64_t i = 0; i < n; ++i) {
    get(in, a);
    get(in, b);
    s.redelivered[a] = b;
  }
  if (!in.empty()) return base::errc::corrupt;
  return s;
}

base::status memory_consumer_store::update_delivered(std::uint64_t dseq, std::uint64_t sseq,
                                                     std::uint64_t dcount, std::int64_t ts) {
  if (dcount == 0 || sseq == 0) return base::errc::invalid_argument;
  if (dcount == 1) {
    if (dseq > _s.delivered.consumer) _s.delivered.consumer = dseq;
    if (sseq > _s.delivered.stream) _s.delivered.stream = sseq;
    _s.pending[sseq] = {dseq, ts};
  } else {
    auto it = _s.pending.find(sseq);
    if (it == _s.pending.end()) return base::errc::not_found;  // redelivery of an acked msg
    it->second.ts = ts;
    _s.redelivered[sseq] = dcount - 1;
  }
  _dirty = true;
  return {};
}

base::status memory_consumer_store::update_acks(std::uint64_t dseq, std::uint64_t sseq) {
  auto it = _s.pending.find(sseq);
  if (it == _s.pending.end()) return base::errc::not_found;
  (void)dseq;
  _s.pending.erase(it);
  _s.redelivered.erase(sseq);
  if (_s.pending.empty()) {
    _s.ack_floor = _s.delivered;
  } else {
    // Everything before the oldest pending message is acknowledged.
    const auto& [first_sseq, p] = *_s.pending.begin();
    _s.ack_floor = {p.consumer_seq - 1, first_sseq - 1};
  }
  _dirty = true;
  return {};
}

base::status memory_consumer_store::update(const consumer_state& s) {
  _s = s;
  _dirty = true;
  return {};
}

base::result<std::unique_ptr<file_consumer_store>> file_consumer_store::open(
    const std::string& dir, const std::string& name) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return base::error{base::errc::io_error, ec.value()};
  std::unique_ptr<file_consumer_store> s(new file_consumer_store());
  s->_dir = dir;
  s->_path = dir + "/" + name + ".cstate";
  int fd = ::open(s->_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return s;
    return io::sys_error(errno);
  }
  std::string bytes;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) bytes.append(buf, std::size_t(n));
  ::close(fd);
  if (n < 0) return io::sys_error(errno);
  auto st = decode_consumer_state(bytes);
  if (!st) return st.err();
  s->_s = std::move(*st);
  s->_loaded = true;
  return s;
}

base::status file_consumer_store::flush() {
  wait_written();
  if (const int err = take_async_error(); err != 0) _dirty = true;  // rewrite what failed
  if (!_dirty && !_unsynced) return {};
  if (const int err = write_snapshot_file(_dir, _path, encode_consumer_state(_s)); err != 0)
    return io::sys_error(err);
  _dirty = false;
  _unsynced = false;
  return {};
}

bool file_consumer_store::flush_async(bool sync) {
  if (!_dirty && !(sync && _unsynced)) return true;
  if (writing()) return false;
  state_writer::instance().submit(_ticket, ++_gen, _dir, _path, encode_consumer_state(_s), sync);
  _dirty = false;
  _unsynced = !sync;
  return true;
}

void file_consumer_store::stage(std::vector<snapshot_file>& batch) {
  wait_written();
  if (const int err = take_async_error(); err != 0) _dirty = true;  // rewrite what failed
  _staged = ~std::size_t(0);
  if (!_dirty && !_unsynced) return;
  _staged = batch.size();
  batch.push_back({_dir, _path, encode_consumer_state(_s)});
}

void file_consumer_store::staged_done(const std::vector<snapshot_file>& batch) {
  if (_staged >= batch.size()) return;
  if (batch[_staged].error == 0) _dirty = _unsynced = false;
  _staged = ~std::size_t(0);
}

void file_consumer_store::wait_written() const {
  while (writing()) std::this_thread::sleep_for(std::chrono::microseconds(50));
}

}  // namespace storage
