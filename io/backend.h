#pragma once
// The file I/O backend a store writes through. Writes are asynchronous (submit, then reap
// completions from the owner's poll loop); reads, allocation and sync are synchronous.
// Implementations: uring_backend (io_uring + O_DIRECT), sync_backend (pwrite/fdatasync),
// fault_backend (wraps another one and injects failures).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/base/result.h"

namespace io {

struct completion {
  std::uint64_t token = 0;
  std::int32_t res = 0;  // bytes written, or -errno
};

class backend {
 public:
  virtual ~backend() = default;
  virtual std::string_view name() const = 0;
  // True when files are opened with O_DIRECT: offsets, lengths and buffers must be aligned
  // (io/aligned_buf.h). Callers align anyway, so both modes see the same requests.
  virtual bool direct() const = 0;

  virtual base::result<int> open(const std::string& path, bool create) = 0;
  virtual void close(int fh) = 0;
  virtual base::status allocate(int fh, std::uint64_t len) = 0;  // preallocate [0, len)
  virtual base::status zero_range(int fh, std::uint64_t off, std::uint64_t len) = 0;
  virtual base::result<std::uint64_t> file_size(int fh) = 0;
  virtual base::result<std::size_t> read_at(int fh, std::uint64_t off, void* buf,
                                            std::size_t len) = 0;
  virtual base::status datasync(int fh) = 0;

  // Queues a write; durable=true makes the completion wait for stable storage (RWF_DSYNC
  // or fdatasync). The buffer must stay valid until the completion is reaped.
  virtual base::status submit_write(int fh, std::uint64_t off, const void* buf, std::size_t len,
                                    bool durable, std::uint64_t token) = 0;
  // Collects up to max completions; with wait, blocks until at least one is available
  // (only call it with something in flight).
  virtual int reap(completion* out, int max, bool wait) = 0;
  // An eventfd that becomes readable when a completion is posted, for loops that block
  // (epoll) instead of spinning; -1 when completions are immediate (sync backend).
  virtual int completion_fd() { return -1; }
  // Signals the caller's eventfd (not owned) on every completion instead of an own one.
  // True when the caller can then block until the fd fires: always for backends whose
  // completions are immediate (nothing to wait for).
  virtual bool signal_completions_to(int /*efd*/) { return true; }
};

enum class backend_kind { automatic, uring, sync };

// Picks io_uring + O_DIRECT when both work in dir, else falls back to pwrite/fdatasync
// (logging one line that says why). Never fails for lack of io_uring or O_DIRECT.
std::unique_ptr<backend> make_backend(const std::string& dir,
                                      backend_kind kind = backend_kind::automatic);

}  // namespace io
