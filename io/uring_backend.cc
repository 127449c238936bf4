#include "io/uring_backend.h"

#include <fcntl.h>
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

uring_backend::uring_backend(bool direct, std::shared_ptr<uring_hub> hub)
    : _direct(direct), _hub(std::move(hub)), _client(_hub->attach()) {}

base::status uring_backend::init(unsigned entries) {
  auto hub = std::make_shared<uring_hub>();
  if (auto st = hub->init(entries); !st) return st;
  _hub = std::move(hub);
  _client = _hub->attach();
  return {};
}

uring_backend::~uring_backend() {
  if (_hub) _hub->detach(_client);
}

int uring_backend::completion_fd() { return _hub->completion_fd(); }

bool uring_backend::signal_completions_to(int efd) { return _hub->signal_completions_to(efd); }

base::result<int> uring_backend::open(const std::string& path, bool create) {
  return open_file(path, create, _direct);
}

void uring_backend::close(int fh) { ::close(fh); }

base::status uring_backend::allocate(int fh, std::uint64_t len) { return allocate_file(fh, len); }

base::status uring_backend::zero_range(int fh, std::uint64_t off, std::uint64_t len) {
  return zero_file_range(fh, off, len);
}

base::result<std::uint64_t> uring_backend::file_size(int fh) { return size_of(fh); }

template <class Prep>
std::int32_t uring_backend::run_sync(Prep&& prep) {
  const std::uint64_t token = kInternal | _next_internal++;
  if (auto st = _hub->queue(_client, token, prep); !st) return -EIO;
  return _hub->wait_for(_client, token);
}

base::result<std::size_t> uring_backend::read_at(int fh, std::uint64_t off, void* buf,
                                                 std::size_t len) {
  if (_direct) assert_dio(off, buf, len);
  std::size_t done = 0;
  while (done < len) {
    std::int32_t res = run_sync([&](io_uring_sqe* sqe) {
      io_uring_prep_read(sqe, fh, static_cast<char*>(buf) + done, unsigned(len - done), off + done);
    });
    if (res < 0) return sys_error(-res);
    if (res == 0) break;
    done += std::size_t(res);
  }
  return done;
}

base::status uring_backend::datasync(int fh) {
  std::int32_t res =
      run_sync([&](io_uring_sqe* sqe) { io_uring_prep_fsync(sqe, fh, IORING_FSYNC_DATASYNC); });
  if (res < 0) return sys_error(-res);
  return {};
}

base::status uring_backend::submit_write(int fh, std::uint64_t off, const void* buf,
                                         std::size_t len, bool durable, std::uint64_t token) {
  PG_ASSERT((token & kInternal) == 0);
  if (_direct) assert_dio(off, buf, len);
  auto st = _hub->queue(_client, token, [&](io_uring_sqe* sqe) {
    io_uring_prep_write(sqe, fh, buf, unsigned(len), off);
    if (durable) sqe->rw_flags = RWF_DSYNC;
  });
  if (!st) return st;
  return _hub->submit();
}

int uring_backend::reap(completion* out, int max, bool wait) {
  return _hub->reap(_client, out, max, wait);
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
    auto hub = uring_hub::for_this_thread();
    if (hub) {
      if (!direct)
        PG_WARN("storage: O_DIRECT refused in {}, using buffered io_uring writes + RWF_DSYNC", dir);
      return std::make_unique<uring_backend>(direct, std::move(*hub));
    }
    PG_WARN("storage: io_uring unavailable ({}), falling back to pwrite/fdatasync",
            hub.err().sys_errno);
  }
  if (kind == backend_kind::automatic && !direct)
    PG_WARN("storage: O_DIRECT refused in {}, using buffered pwrite/fdatasync", dir);
  return std::make_unique<sync_backend>(direct);
}

}  // namespace io
