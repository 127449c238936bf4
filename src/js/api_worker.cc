#include "src/js/api_worker.h"

#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace js {

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
