// file_store compaction: rewrite sealed blocks that are mostly dead, keeping live messages
// and every control record, then atomically rename the new file over the old one. Record
// order (and so sequence order across blocks) is unchanged, which recovery relies on.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <unordered_map>

#include "io/sync_backend.h"
#include "src/base/log.h"
#include "storage/file_store.h"
#include "storage/record.h"

namespace storage {
namespace {

std::uint64_t make_loc(std::uint32_t block, std::uint64_t off) {
  return (std::uint64_t(block) << 40) | off;
}

}  // namespace

base::result<std::uint64_t> file_store::compact(double max_live_ratio) {
  if (auto st = check_writable(); !st) return st.err();
  drain();
  _win_block = 0;  // blocks are rewritten below
  if (_blocks.size() < 2) return std::uint64_t{0};
  // Live bytes per block from the index.
  std::unordered_map<std::uint32_t, std::uint64_t> live_bytes;
  for_each_live([&](std::uint64_t, const msg_entry& e) {
    live_bytes[std::uint32_t(e.loc >> 40)] += e.rec_len;
  });
  std::uint64_t reclaimed = 0;
  io::aligned_buf data, out;
  for (std::size_t bi = 0; bi + 1 < _blocks.size(); ++bi) {
    block_file& b = _blocks[bi];
    if (block_busy(b.id)) continue;
    auto fd = pin_block(b);
    if (!fd) return fd.err();
    auto size = _be->file_size(fd->fd());
    if (!size) return size.err();
    data.resize_uninit(io::align_up(*size));
    auto n = _be->read_at(fd->fd(), 0, data.data(), data.size());
    fd->reset();
    if (!n) return n.err();
    data.resize_uninit(*n);
    // Walk the records; stop at the end of data. A damaged block is left alone.
    std::uint64_t off = 0, used = 0;
    bool damaged = false;
    out.clear();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> moved;  // seq, new offset
    while (off + 4 <= data.size()) {
      record_view r;
      decode_result d = decode_record(data.data() + off, data.size() - off, &r);
      if (d == decode_result::end) break;
      if (d != decode_result::ok) {
        damaged = true;
        break;
      }
      std::size_t len = rec_pad(r.len);
      bool keep = r.kind != rec_kind::erased;
      if (r.kind == rec_kind::msg) {
        const msg_entry* e = find(r.seq);
        keep = e && e->loc == make_loc(b.id, off);
        if (keep) moved.emplace_back(r.seq, out.size());
      }
      if (keep) out.append(data.data() + off, len);
      off += len;
    }
    used = off;
    if (damaged || used == 0 || double(live_bytes[b.id]) > max_live_ratio * double(used)) continue;
    // Write the new block beside the old one, make it durable, then swap names.
    std::string path = block_path(b.id), tmp = path + ".compact";
    auto fh = _be->open(tmp, true);
    if (!fh) return fh.err();
    std::size_t wlen = out.padded_size();
    base::status st;
    if (wlen) {
      st = _be->submit_write(*fh, 0, out.data(), wlen, true, 1ull << 61);
      io::completion c{};
      while (st && _be->reap(&c, 1, true) == 0) {
      }
      if (st && c.res != std::int32_t(wlen)) st = io::sys_error(c.res < 0 ? -c.res : EIO);
    }
    if (st && ::rename(tmp.c_str(), path.c_str()) != 0) st = io::sys_error(errno);
    if (!st) {
      _be->close(*fh);
      ::unlink(tmp.c_str());
      return st.err();
    }
    int dfd = ::open(_cfg.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    _fds->drop(b.fd_key);
    b.fd_key = _fds->add(*fh);
    b.size = wlen;
    for (const auto& [seq, noff] : moved) set_loc(seq, make_loc(b.id, noff));
    reclaimed += *size > wlen ? *size - wlen : 0;
  }
  if (reclaimed)
    PG_INFO("storage: {} compacted, {} bytes reclaimed", _cfg.dir, reclaimed);
  return reclaimed;
}

}  // namespace storage
