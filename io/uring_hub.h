#pragma once
// One io_uring shared by every store of a thread (thousands of small streams would otherwise
// hold one ring descriptor each). Each uring_backend is a client: it submits into the shared
// ring under hub-level tags and reaps only its own completions; a completion reaped on behalf
// of another client is parked for that client. A mutex guards the ring, so a store opened on
// one thread and polled on another stays correct (same-thread use never contends).
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "io/backend.h"
#include "io/ring.h"

namespace io {

class uring_hub {
 public:
  // The calling thread's hub, created on first use (and again after its last client went).
  static base::result<std::shared_ptr<uring_hub>> for_this_thread();
  static constexpr unsigned kEntries = 256;

  base::status init(unsigned entries);
  std::uint32_t attach();
  // Waits for the client's in-flight operations (their buffers belong to it), then forgets it.
  void detach(std::uint32_t client);

  // Prepares one SQE of client's, tagged token; prep fills in the operation.
  template <class Prep>
  base::status queue(std::uint32_t client, std::uint64_t token, Prep&& prep) {
    std::lock_guard lock(_mu);
    io_uring_sqe* sqe = _ring.get_sqe();
    if (!sqe) return base::errc::io_error;
    prep(sqe);
    sqe->user_data = tag(client, token);
    return {};
  }
  base::status submit();
  // Up to max of client's completions; with wait, blocks until one (0 at once when the client
  // has nothing in flight).
  int reap(std::uint32_t client, completion* out, int max, bool wait);
  // Blocks until client's completion tagged token; others go to their owners' queues.
  std::int32_t wait_for(std::uint32_t client, std::uint64_t token);

  // One eventfd per ring: every client signals the same one. True if efd is (now) it.
  bool signal_completions_to(int efd);
  int completion_fd();  // an own eventfd, unless the hub already signals another
  std::size_t clients() const;
  ~uring_hub();

 private:
  struct client_state {
    std::deque<completion> parked;
    unsigned inflight = 0;
  };
  struct route {
    std::uint32_t client;
    std::uint64_t token;
  };
  std::uint64_t tag(std::uint32_t client, std::uint64_t token);
  // Moves one CQE to its owner; true when it was `client`'s (then in *out).
  bool dispatch(io_uring_cqe* cqe, std::uint32_t client, completion* out);

  mutable std::mutex _mu;
  ring _ring;
  std::unordered_map<std::uint32_t, client_state> _clients;
  std::unordered_map<std::uint64_t, route> _routes;  // ring tag -> (client, its token)
  std::uint64_t _next_tag = 1;
  std::uint32_t _next_client = 1;
  int _efd = -1;
  bool _own_efd = false;
};

}  // namespace io
