#pragma once
// Thin io_uring wrapper: setup with a feature probe, SQE access, submit, CQE reaping.
// No SQPOLL (its kernel polling thread starves small machines).
#include <liburing.h>

#include <cstdint>

#include "src/base/result.h"

namespace io {

struct ring_features {
  std::uint32_t features = 0;  // IORING_FEAT_* bits from setup
  bool op_write = false;
  bool op_read = false;
  bool op_fsync = false;
  bool rw_dsync = false;  // RWF_DSYNC accepted on writes (kernel >= 5.x)
};

class ring {
 public:
  ring() = default;
  ~ring();
  ring(const ring&) = delete;
  ring& operator=(const ring&) = delete;

  // entries: SQ size. single_issuer adds SINGLE_ISSUER|DEFER_TASKRUN: only the creating
  // thread may then submit, so leave it off for rings created on one thread and driven from
  // another (a store opened at start-up and polled by its owner shard).
  base::status init(unsigned entries, bool single_issuer = false);
  bool ready() const { return _ready; }
  const ring_features& features() const { return _feat; }

  io_uring_sqe* get_sqe();  // submits to make room when the SQ is full
  base::status submit();
  // Returns the next CQE or nullptr; with wait, blocks for one.
  io_uring_cqe* next_cqe(bool wait);
  void seen(io_uring_cqe* cqe) { io_uring_cqe_seen(&_r, cqe); }
  unsigned pending() const { return _inflight; }
  void add_inflight(int n) { _inflight = unsigned(int(_inflight) + n); }
  base::status register_eventfd(int efd);

 private:
  io_uring _r{};
  bool _ready = false;
  bool _defer = false;
  unsigned _inflight = 0;
  ring_features _feat;
};

}  // namespace io
