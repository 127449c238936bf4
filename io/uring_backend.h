#pragma once
// io_uring + O_DIRECT backend. Durable writes carry RWF_DSYNC, so one SQE is one durable
// write (measured as fast as write + linked fsync here, platform-notes §1.3).
#include <deque>

#include "io/backend.h"
#include "io/ring.h"

namespace io {

class uring_backend final : public backend {
 public:
  // direct=false still uses io_uring but buffered (O_DIRECT refused by the filesystem).
  uring_backend(bool direct) : _direct(direct) {}
  base::status init(unsigned entries = 64) { return _ring.init(entries); }

  std::string_view name() const override { return _direct ? "io_uring+O_DIRECT" : "io_uring"; }
  bool direct() const override { return _direct; }
  base::result<int> open(const std::string& path, bool create) override;
  void close(int fh) override;
  base::status allocate(int fh, std::uint64_t len) override;
  base::status zero_range(int fh, std::uint64_t off, std::uint64_t len) override;
  base::result<std::uint64_t> file_size(int fh) override;
  base::result<std::size_t> read_at(int fh, std::uint64_t off, void* buf,
                                    std::size_t len) override;
  base::status datasync(int fh) override;
  base::status submit_write(int fh, std::uint64_t off, const void* buf, std::size_t len,
                            bool durable, std::uint64_t token) override;
  int reap(completion* out, int max, bool wait) override;
  int completion_fd() override;
  bool signal_completions_to(int efd) override;
  ~uring_backend() override;

 private:
  // Waits for the completion tagged token, parking any others for reap().
  std::int32_t wait_for(std::uint64_t token);

  bool _direct;
  ring _ring;
  std::deque<completion> _parked;
  std::uint64_t _next_internal = 1;
  int _efd = -1;
};

}  // namespace io
