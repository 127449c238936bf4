#include "io/ring.h"

#include <cerrno>

#include "io/sync_backend.h"

namespace io {

ring::~ring() {
  if (_ready) io_uring_queue_exit(&_r);
}

base::status ring::init(unsigned entries, bool single_issuer) {
  io_uring_params p{};
  p.flags = IORING_SETUP_COOP_TASKRUN;
  if (single_issuer) p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int rc = io_uring_queue_init_params(entries, &_r, &p);
  _defer = rc == 0 && single_issuer;
  if (rc < 0) {
    p = io_uring_params{};
    rc = io_uring_queue_init_params(entries, &_r, &p);
  }
  if (rc < 0) return sys_error(-rc);
  _ready = true;
  _feat.features = p.features;
  if (io_uring_probe* pr = io_uring_get_probe_ring(&_r)) {
    _feat.op_write = io_uring_opcode_supported(pr, IORING_OP_WRITE);
    _feat.op_read = io_uring_opcode_supported(pr, IORING_OP_READ);
    _feat.op_fsync = io_uring_opcode_supported(pr, IORING_OP_FSYNC);
    io_uring_free_probe(pr);
  }
  _feat.rw_dsync = _feat.op_write;  // RWF_DSYNC predates IORING_OP_WRITE (5.6)
  return {};
}

base::status ring::register_eventfd(int efd) {
  int rc = io_uring_register_eventfd(&_r, efd);
  if (rc < 0) return sys_error(-rc);
  return {};
}

io_uring_sqe* ring::get_sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&_r);
  if (!sqe) {
    io_uring_submit(&_r);
    sqe = io_uring_get_sqe(&_r);
  }
  return sqe;
}

base::status ring::submit() {
  int rc;
  do {
    rc = io_uring_submit(&_r);
  } while (rc == -EINTR);
  if (rc < 0) return sys_error(-rc);
  return {};
}

io_uring_cqe* ring::next_cqe(bool wait) {
  io_uring_cqe* cqe = nullptr;
  if (io_uring_peek_cqe(&_r, &cqe) == 0) return cqe;
  if (!wait && _inflight == 0) return nullptr;  // nothing to reap: skip the syscall
  if (_defer && !wait) {
    // DEFER_TASKRUN: completions only post when we enter the kernel.
    io_uring_get_events(&_r);
    if (io_uring_peek_cqe(&_r, &cqe) == 0) return cqe;
  }
  if (!wait) return nullptr;
  int rc;
  do {
    rc = io_uring_wait_cqe(&_r, &cqe);
  } while (rc == -EINTR);
  return rc == 0 ? cqe : nullptr;
}

}  // namespace io
