#include "storage/spare_block.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "io/sync_backend.h"

namespace storage {

namespace {

// Runs on the helper thread: plain buffered I/O (the store's ring belongs to its owner).
base::status prepare(const std::string& path, std::uint64_t size, bool zero) {
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return io::sys_error(errno);
  base::status st = io::allocate_file(fd, size);
  if (st && zero) {
    std::vector<char> zeros(1 << 20, 0);
    for (std::uint64_t off = 0; off < size && st; off += zeros.size()) {
      const std::size_t n = std::size_t(std::min<std::uint64_t>(zeros.size(), size - off));
      if (::pwrite(fd, zeros.data(), n, off_t(off)) != ssize_t(n)) st = io::sys_error(errno ? errno : EIO);
    }
  }
  if (st && ::fdatasync(fd) != 0) st = io::sys_error(errno);
  ::close(fd);
  if (!st) ::unlink(path.c_str());
  return st;
}

}  // namespace

spare_block::~spare_block() { discard(); }

void spare_block::start(std::string path, std::uint64_t size, bool zero) {
  if (started()) return;
  _path = std::move(path);
  _size = size;
  _worker = std::thread([this, size, zero] { _result = prepare(_path, size, zero); });
}

void spare_block::join() {
  if (_worker.joinable()) {
    _worker.join();
    _ready = true;
  }
}

base::status spare_block::take(const std::string& dest) {
  join();
  _ready = false;
  if (!_result) return _result;
  if (::rename(_path.c_str(), dest.c_str()) != 0) {
    auto e = io::sys_error(errno);
    ::unlink(_path.c_str());
    return e;
  }
  return {};
}

void spare_block::discard() {
  join();
  if (_ready && _result) ::unlink(_path.c_str());
  _ready = false;
}

}  // namespace storage
