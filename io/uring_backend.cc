#include "io/uring_backend.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>

#include "io/aligned_buf.h"
#include "io/sync_backend.h"
#include "src/base/log.h"

namespace io {
namespace {

constexpr std::uint64_t kInternal = 1ull << 63;  // tokens of synchronous ops we wait on

}  // namespace

uring_backend::~uring_backend() {
  if (_efd >= 0) ::close(_efd);
}

int uring_backend::completion_fd() {
  if (_efd < 0) {
    int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return -1;
    if (!_ring.register_eventfd(fd)) {
      ::close(fd);
      return -1;
    }
    _efd = fd;
  }
  return _efd;
}

bool uring_backend::signal_completions_to(int efd) {
  if (_efd >= 0 || efd < 0) return false;  // a ring has one eventfd; ours is taken
  return _ring.register_eventfd(efd).ok();
}

base::result<int> uring_backend::open(const std::string& path, bool create) {
  return open_file(path, create, _direct);
}

void uring_backend::close(int fh) { ::close(fh); }

base::status uring_backend::allocate(int fh, std::uint64_t len) { return allocate_file(fh, len); }

base::status uring_backend::zero_range(int fh, std::uint64_t off, std::uint64_t len) {
  return zero_file_range(fh, off, len);
}

base::result<std::uint64_t> uring_backend::file_size(int fh) { return size_of(fh); }

std::int32_t uring_backend::wait_for(std::uint64_t token) {
  if (auto st = _ring.submit(); !st) return -st.err().sys_errno;
  while (true) {
    io_uring_cqe* cqe = _ring.next_cqe(true);
    if (!cqe) return -EIO;
    completion c{cqe->user_data, cqe->res};
    _ring.seen(cqe);
    _ring.add_inflight(-1);
    if (c.token == token) return c.res;
    _parked.push_back(c);
  }
}

base::result<std::size_t> uring_backend::read_at(int fh, std::uint64_t off, void* buf,
                                                 std::size_t len) {
  if (_direct) assert_dio(off, buf, len);
  std::size_t done = 0;
  while (done < len) {
    io_uring_sqe* sqe = _ring.get_sqe();
    if (!sqe) return base::errc::io_error;
    std::uint64_t token = kInternal | _next_internal++;
    io_uring_prep_read(sqe, fh, static_cast<char*>(buf) + done, unsigned(len - done), off + done);
    sqe->user_data = token;
    _ring.add_inflight(1);
    std::int32_t res = wait_for(token);
    if (res < 0) return sys_error(-res);
    if (res == 0) break;
    done += std::size_t(res);
  }
  return done;
}

base::status uring_backend::datasync(int fh) {
  io_uring_sqe* sqe = _ring.get_sqe();
  if (!sqe) return base::errc::io_error;
  std::uint64_t token = kInternal | _next_internal++;
  io_uring_prep_fsync(sqe, fh, IORING_FSYNC_DATASYNC);
  sqe->user_data = token;
  _ring.add_inflight(1);
  std::int32_t res = wait_for(token);
  if (res < 0) return sys_error(-res);
  return {};
}

base::status uring_backend::submit_write(int fh, std::uint64_t off, const void* buf,
                                         std::size_t len, bool durable, std::uint64_t token) {
  PG_ASSERT((token & kInternal) == 0);
  if (_direct) assert_dio(off, buf, len);
  io_uring_sqe* sqe = _ring.get_sqe();
  if (!sqe) return base::errc::io_error;
  io_uring_prep_write(sqe, fh, buf, unsigned(len), off);
  if (durable) sqe->rw_flags = RWF_DSYNC;
  sqe->user_data = token;
  _ring.add_inflight(1);
  return _ring.submit();
}

int uring_backend::reap(completion* out, int max, bool wait) {
  int n = 0;
  while (n < max && !_parked.empty()) {
    out[n++] = _parked.front();
    _parked.pop_front();
  }
  while (n < max) {
    io_uring_cqe* cqe = _ring.next_cqe(wait && n == 0);
    if (!cqe) break;
    out[n++] = {cqe->user_data, cqe->res};
    _ring.seen(cqe);
    _ring.add_inflight(-1);
  }
  return n;
}

namespace {

// Probes O_DIRECT with a real aligned write in dir (tmpfs on old kernels refuses it).
bool probe_direct(const std::string& dir) {
  std::string path = dir + "/.dio_probe";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  aligned_buf b(kDioAlign);
  b.resize(kDioAlign);
  bool ok = ::pwrite(fd, b.data(), kDioAlign, 0) == ssize_t(kDioAlign);
  ::close(fd);
  ::unlink(path.c_str());
  return ok;
}

// The probe's answer per filesystem: a server opening thousands of stores (every stream has
// one) would otherwise create, write and unlink a probe file, two journaled metadata changes,
// for each of them.
bool direct_supported(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return probe_direct(dir);
  static std::mutex mu;
  static std::map<dev_t, bool> known;
  std::lock_guard lock(mu);
  auto it = known.find(st.st_dev);
  if (it == known.end()) it = known.emplace(st.st_dev, probe_direct(dir)).first;
  return it->second;
}

}  // namespace

std::unique_ptr<backend> make_backend(const std::string& dir, backend_kind kind) {
  bool direct = direct_supported(dir);
  if (kind != backend_kind::sync) {
    auto u = std::make_unique<uring_backend>(direct);
    auto st = u->init(64);
    if (st) {
      if (!direct)
        PG_WARN("storage: O_DIRECT refused in {}, using buffered io_uring writes + RWF_DSYNC", dir);
      return u;
    }
    PG_WARN("storage: io_uring unavailable ({}), falling back to pwrite/fdatasync",
            st.err().sys_errno);
  }
  if (kind == backend_kind::automatic && !direct)
    PG_WARN("storage: O_DIRECT refused in {}, using buffered pwrite/fdatasync", dir);
  return std::make_unique<sync_backend>(direct);
}

}  // namespace io
