#pragma once
// pwrite/pread/fdatasync backend: the fallback when io_uring or O_DIRECT is unavailable,
// and the baseline in benchmarks. Writes run inside submit_write; reap hands back results.
#include <vector>

#include "io/backend.h"

namespace io {

class sync_backend final : public backend {
 public:
  explicit sync_backend(bool direct) : _direct(direct) {}
  std::string_view name() const override { return _direct ? "pwrite+O_DIRECT" : "pwrite"; }
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

 private:
  bool _direct;
  std::vector<completion> _done;
};

// Shared by the backends: plain syscalls with errno mapped to base::error.
base::error sys_error(int err);
base::result<int> open_file(const std::string& path, bool create, bool direct);
base::status allocate_file(int fd, std::uint64_t len);
base::status zero_file_range(int fd, std::uint64_t off, std::uint64_t len);
base::result<std::uint64_t> size_of(int fd);
base::result<std::size_t> pread_full(int fd, std::uint64_t off, void* buf, std::size_t len);

}  // namespace io
