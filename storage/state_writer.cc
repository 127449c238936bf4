#include "storage/state_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
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


void write_snapshot_files(std::vector<snapshot_file>& files) {
  // Each file the durable way (write, fdatasync, rename, directory fsync), many at once: the
  // device merges the concurrent cache flushes, so the batch costs a few flushes' time, where
  // one file after another cost one each (and syncfs would also flush every other dirty file
  // on the filesystem, which on a busy machine took seconds).
  const std::size_t n = files.size();
  const std::size_t workers = std::min<std::size_t>(kSnapshotWriters, (n + 3) / 4);
  auto work = [&files, n, workers](std::size_t w) {
    for (std::size_t i = w; i < n; i += workers) {
      snapshot_file& f = files[i];
      f.error = write_snapshot_file(f.dir, f.path, f.bytes, true);
    }
  };
  if (workers <= 1) return work(0);
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (auto& t : threads) t.join();
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
    // Everything queued at once: many synced snapshots (thousands of consumers acked in one
    // burst, or a shutdown) are written many at once (write_snapshot_files), not one by one.
    std::deque<job> batch;
    batch.swap(_jobs);
    lk.unlock();
    std::vector<snapshot_file> synced;
    std::vector<int> errors(batch.size(), 0);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      job& j = batch[i];
      if (j.sync) {
        synced.push_back({std::move(j.dir), std::move(j.path), std::move(j.bytes)});
      } else {
        errors[i] = write_snapshot_file(j.dir, j.path, j.bytes, false);
      }
    }
    if (synced.size() >= kBatchFrom) {
      write_snapshot_files(synced);
    } else {
      for (auto& f : synced) f.error = write_snapshot_file(f.dir, f.path, f.bytes, true);
    }
    std::vector<int> wake;
    for (std::size_t i = 0, k = 0; i < batch.size(); ++i) {
      job& j = batch[i];
      const int err = j.sync ? synced[k++].error : errors[i];
      if (err != 0) j.t->error.store(err, std::memory_order_relaxed);
      j.t->done.store(j.gen, std::memory_order_release);
      const int fd = j.t->wake_fd.load(std::memory_order_acquire);
      if (fd >= 0 && std::find(wake.begin(), wake.end(), fd) == wake.end()) wake.push_back(fd);
    }
    for (const int fd : wake) (void)::eventfd_write(fd, 1);
    lk.lock();
  }
}

}  // namespace storage
