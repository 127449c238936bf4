#include "src/js/api_worker.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace js {

std::atomic<bool> api_worker::yield_to_loops{true};

api_worker::api_worker(int wake_fd) : _wake_fd(wake_fd) {
  _thread = std::thread([this] { run(); });
  pthread_setname_np(_thread.native_handle(), "pg-js-api");
}

api_worker::~api_worker() {
  {
    std::lock_guard lk(_mu);
    _stop = true;
    _jobs.clear();
  }
  _cv.notify_one();
  _thread.join();
}

std::uint64_t api_worker::submit(std::function<void()> job) {
  std::uint64_t ticket;
  {
    std::lock_guard lk(_mu);
    _jobs.push_back(std::move(job));
    ticket = ++_submitted;
  }
  _cv.notify_one();
  return ticket;
}

void api_worker::run() {
  // Started from a shard's thread, it would inherit that shard's pinning (--cpus) and then
  // compete with the very loop it relieves: it takes the main thread's CPUs instead.
  cpu_set_t set;
  if (::sched_getaffinity(::getpid(), sizeof set, &set) == 0)
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  // Below the loop threads: a loop woken by a client's bytes preempts the worker sooner
  // than at equal weight. Beside a 74,000-subject create on 2 vCPUs the slowest PING was
  // 15-18 ms at nice 0, 7-15 ms at nice 19 (the idle class did no better, and it may starve:
  // ~0.3% of a busy core, against nice 19's ~1.5%). Not with busy-polling loops, which never
  // leave a core free. Linux: the nice value of the calling thread alone.
  if (yield_to_loops.load(std::memory_order_relaxed)) (void)::setpriority(PRIO_PROCESS, 0, 19);
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lk(_mu);
      _cv.wait(lk, [this] { return _stop || !_jobs.empty(); });
      if (_stop) return;
      job = std::move(_jobs.front());
      _jobs.pop_front();
    }
    job();
    _completed.fetch_add(1, std::memory_order_release);
    if (_wake_fd >= 0) (void)::eventfd_write(_wake_fd, 1);
  }
}

}  // namespace js
