#pragma once
// A background thread that writes small state snapshots (consumer state) atomically: temp
// file, fdatasync, rename, directory fsync (several synced ones queued together: one batch,
// write_snapshot_files). The owner's loop hands over encoded bytes and
// reads the outcome later, so a flush (0.3-4 ms of fdatasync on the test VMs) never blocks
// the thread that delivers messages. Not a hot path: at most one snapshot per consumer per
// flush interval, so a mutex-guarded queue is enough.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace storage {

// Writes bytes to path atomically: path.tmp, rename; with `sync` also fdatasync before the
// rename and fsync of dir after it. Without sync the snapshot survives a process crash (it
// is in the page cache) but not necessarily power loss. Returns 0 or errno.
int write_snapshot_file(const std::string& dir, const std::string& path, const std::string& bytes,
                        bool sync = true);

// Many snapshots at once (a graceful shutdown writes every consumer's; the writer thread
// takes what queued up together): each written as write_snapshot_file(sync) does, up to
// kSnapshotWriters at a time on helper threads, so the device merges their cache flushes.
// One after another, 3,000 consumers took 41 s. error: 0, or the errno of the failed step.
constexpr std::size_t kSnapshotWriters = 32;
struct snapshot_file {
  std::string dir, path, bytes;
  int error = 0;
};
void write_snapshot_files(std::vector<snapshot_file>& files);

class state_writer {
 public:
  // Shared between the owner (submits, polls) and the writer thread (completes).
  struct ticket {
    std::atomic<std::uint64_t> done{0};  // highest generation written (or failed)
    std::atomic<int> error{0};           // errno of the last failed write, 0 if none
    std::atomic<int> wake_fd{-1};        // eventfd signalled after each completion, -1 none
  };

  // The process-wide writer, started on first use, joined at exit.
  static state_writer& instance();
  ~state_writer();

  // Queues one snapshot; `t->done` becomes `gen` once it is written or failed, and then
  // `t->wake_fd` (when set) is signalled so the owner's loop need not poll for it.
  void submit(std::shared_ptr<ticket> t, std::uint64_t gen, std::string dir, std::string path, std::string bytes,
              bool sync);

 private:
  struct job {
    std::shared_ptr<ticket> t;
    std::uint64_t gen;
    std::string dir, path, bytes;
    bool sync;
  };
  state_writer();
  void run();
  // From this many synced snapshots queued together, write_snapshot_files takes them.
  static constexpr std::size_t kBatchFrom = 4;

  std::mutex _mu;
  std::condition_variable _cv;
  std::deque<job> _jobs;
  bool _stop = false;
  std::thread _thread;
};

}  // namespace storage
