#include "io/sync_backend.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace io {

base::error sys_error(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return {base::errc::no_space, err};
    case ENOENT:
      return {base::errc::not_found, err};
    case EEXIST:
      return {base::errc::already_exists, err};
    case EINVAL:
      return {base::errc::invalid_argument, err};
    case EOPNOTSUPP:
      return {base::errc::unsupported, err};
    default:
      return {base::errc::io_error, err};
  }
}

base::result<int> open_file(const std::string& path, bool create, bool direct) {
  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0) | (direct ? O_DIRECT : 0);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return sys_error(errno);
  return fd;
}

base::status allocate_file(int fd, std::uint64_t len) {
  if (::fallocate(fd, 0, 0, static_cast<off_t>(len)) == 0) return {};
  int err = errno;
  if (err != EOPNOTSUPP) return sys_error(err);
  // Filesystems without fallocate: extend with ftruncate.
  if (::ftruncate(fd, static_cast<off_t>(len)) != 0) return sys_error(errno);
  return {};
}

base::status zero_file_range(int fd, std::uint64_t off, std::uint64_t len) {
  if (len == 0) return {};
  if (::fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off),
                  static_cast<off_t>(len)) == 0)
    return {};
  if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off),
                  static_cast<off_t>(len)) == 0)
    return {};
  return sys_error(errno);
}

base::result<std::uint64_t> size_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error(errno);
  return std::uint64_t(st.st_size);
}

base::result<std::size_t> pread_full(int fd, std::uint64_t off, void* buf, std::size_t len) {
  std::size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, static_cast<char*>(buf) + done, len - done,
                        static_cast<off_t>(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error(errno);
    }
    if (n == 0) break;
    done += std::size_t(n);
  }
  return done;
}

base::result<int> sync_backend::open(const std::string& path, bool create) {
  return open_file(path, create, _direct);
}

void sync_backend::close(int fh) { ::close(fh); }

base::status sync_backend::allocate(int fh, std::uint64_t len) { return allocate_file(fh, len); }

base::status sync_backend::zero_range(int fh, std::uint64_t off, std::uint64_t len) {
  return zero_file_range(fh, off, len);
}

base::result<std::uint64_t> sync_backend::file_size(int fh) { return size_of(fh); }

base::result<std::size_t> sync_backend::read_at(int fh, std::uint64_t off, void* buf,
                                                std::size_t len) {
  return pread_full(fh, off, buf, len);
}

base::status sync_backend::datasync(int fh) {
  if (::fdatasync(fh) != 0) return sys_error(errno);
  return {};
}

base::status sync_backend::submit_write(int fh, std::uint64_t off, const void* buf,
                                        std::size_t len, bool durable, std::uint64_t token) {
  ssize_t n;
  do {
    n = ::pwrite(fh, buf, len, static_cast<off_t>(off));
  } while (n < 0 && errno == EINTR);
  std::int32_t res = n < 0 ? -errno : static_cast<std::int32_t>(n);
  if (res >= 0 && durable && ::fdatasync(fh) != 0) res = -errno;
  _done.push_back({token, res});
  return {};
}

int sync_backend::reap(completion* out, int max, bool) {
  int n = 0;
  while (n < max && std::size_t(n) < _done.size()) {
    out[n] = _done[std::size_t(n)];
    ++n;
  }
  _done.erase(_done.begin(), _done.begin() + n);
  return n;
}

}  // namespace io
