#pragma once
// fault_backend wraps a real backend and injects the failures a store must survive:
// a failed write (EIO), a short write, a torn write at a crash point, a silent bit flip,
// and ENOSPC. Faults are armed one at a time by tests; each fires once.
#include <memory>
#include <vector>

#include "io/backend.h"

namespace io {

class fault_backend final : public backend {
 public:
  explicit fault_backend(std::unique_ptr<backend> inner) : _in(std::move(inner)) {}

  // The next write completes with -err and writes nothing.
  void fail_next_write(int err = 5 /*EIO*/) { _fail_err = err; }
  // The next write transfers only the first `bytes` and reports that count.
  void short_next_write(std::size_t bytes) { _short = bytes; }
  // The next write persists only its first `bytes`, then the process "dies": that write
  // completes with -ECANCELED, as does every later write (nothing more reaches the disk).
  void torn_next_write(std::size_t bytes) { _torn = bytes; }
  // The next write stores byte `at` with bit `bit` flipped and completes normally.
  void flip_bit_next_write(std::size_t at, int bit) {
    _flip_at = at;
    _flip_bit = bit;
  }
  // Writes and allocations reaching past `bytes` total allocated space fail with ENOSPC.
  void set_space_limit(std::uint64_t bytes) { _space = bytes; }
  bool crashed() const { return _crashed; }
  std::uint64_t writes() const { return _writes; }
  std::uint64_t durable_writes() const { return _durable_writes; }

  std::string_view name() const override { return "fault"; }
  bool direct() const override { return _in->direct(); }
  base::result<int> open(const std::string& path, bool create) override {
    return _in->open(path, create);
  }
  void close(int fh) override { _in->close(fh); }
  base::status allocate(int fh, std::uint64_t len) override;
  base::status zero_range(int fh, std::uint64_t off, std::uint64_t len) override {
    if (_crashed) return base::errc::io_error;
    return _in->zero_range(fh, off, len);
  }
  base::result<std::uint64_t> file_size(int fh) override { return _in->file_size(fh); }
  base::result<std::size_t> read_at(int fh, std::uint64_t off, void* buf,
                                    std::size_t len) override {
    return _in->read_at(fh, off, buf, len);
  }
  base::status datasync(int fh) override {
    if (_crashed) return base::errc::io_error;
    return _in->datasync(fh);
  }
  base::status submit_write(int fh, std::uint64_t off, const void* buf, std::size_t len,
                            bool durable, std::uint64_t token) override;
  int reap(completion* out, int max, bool wait) override;
  int completion_fd() override { return _in->completion_fd(); }
  bool signal_completions_to(int efd) override { return _in->signal_completions_to(efd); }

 private:
  std::unique_ptr<backend> _in;
  int _fail_err = 0;
  std::size_t _short = 0;
  std::size_t _torn = 0;
  std::size_t _flip_at = ~std::size_t(0);
  int _flip_bit = 0;
  std::uint64_t _space = ~std::uint64_t(0);
  std::uint64_t _allocated = 0;
  bool _crashed = false;
  std::uint64_t _writes = 0;
  std::uint64_t _durable_writes = 0;
  std::vector<completion> _injected;
  std::vector<std::uint8_t> _scratch;
};

}  // namespace io
