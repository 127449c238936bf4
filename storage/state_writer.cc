#include "storage/state_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace storage {

int write_snapshot_file(const std::string& dir, const std::string& path, const std::string& bytes, bool sync) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      return err;
    }
    done += std::size_t(n);
  }
  if (sync && ::fdatasync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return err;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errno;
  if (!sync) return 0;
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return 0;
}

state_writer& state_writer::instance() {
  static state_writer w;
  return w;
}

state_writer::state_writer() {
  _thread = std::thread([this] { run(); });
  pthread_setname_np(_thread.native_handle(), "pg-state-write");
}

state_writer::~state_writer() {
  {
    std::lock_guard<std::mutex> g(_mu);
    _stop = true;
  }
  _cv.notify_one();
  _thread.join();
}

void state_writer::submit(std::shared_ptr<ticket> t, std::uint64_t gen, std::string dir, std::string path,
                          std::string bytes, bool sync) {
  {
    std::lock_guard<std::mutex> g(_mu);
    _jobs.push_back(job{std::move(t), gen, std::move(dir), std::move(path), std::move(bytes), sync});
  }
  _cv.notify_one();
}

void state_writer::run() {
  std::unique_lock<std::mutex> lk(_mu);
  for (;;) {
    _cv.wait(lk, [this] { return _stop || !_jobs.empty(); });
    if (_jobs.empty()) return;  // stopping, and everything queued is written
    job j = std::move(_jobs.front());
    _jobs.pop_front();
    lk.unlock();
    const int err = write_snapshot_file(j.dir, j.path, j.bytes, j.sync);
    if (err != 0) j.t->error.store(err, std::memory_order_relaxed);
    j.t->done.store(j.gen, std::memory_order_release);
    if (const int fd = j.t->wake_fd.load(std::memory_order_acquire); fd >= 0) (void)::eventfd_write(fd, 1);
    lk.lock();
  }
}

}  // namespace storage
