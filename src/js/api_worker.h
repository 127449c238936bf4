#pragma once
// A thread for the pure part of big JetStream API requests (JSON decode, config checks,
// overlap index, serialising big replies, writing big metadata files), so they do not hold
// a loop that also serves clients. Jobs run one at a time in submission order; `submit`
// returns a ticket, and `done(ticket)` turns true (acquire: the job's writes are visible)
// once that job ran. Each completion signals `wake_fd` (an eventfd, -1 none) so the owner's
// loop can block instead of spinning while it waits.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <type_traits>
#include <mutex>
#include <thread>

namespace js {

class api_worker {
 public:
  explicit api_worker(int wake_fd);
  ~api_worker();  // waits for the running job; queued ones are dropped
  api_worker(const api_worker&) = delete;
  api_worker& operator=(const api_worker&) = delete;

  // Whether workers run at nice 19, below the loops (main.cc: not when the loops
  // busy-poll). Read when a worker starts.
  static std::atomic<bool> yield_to_loops;

  std::uint64_t submit(std::function<void()> job);
  bool done(std::uint64_t ticket) const { return _completed.load(std::memory_order_acquire) >= ticket; }
  // Frees `what` on the worker: a big request's 74,000 strings or a big reply's JSON tree
  // freed on a loop held it for milliseconds.
  template <typename T>
  void dispose(T&& what) {
    submit([held = std::make_shared<std::decay_t<T>>(std::forward<T>(what))]() mutable { held.reset(); });
  }

 private:
  void run();

  const int _wake_fd;
  std::mutex _mu;
  std::condition_variable _cv;
  std::deque<std::function<void()>> _jobs;
  bool _stop = false;
  std::uint64_t _submitted = 0;
  std::atomic<std::uint64_t> _completed{0};
  std::thread _thread;
};

}  // namespace js
