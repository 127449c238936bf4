#pragma once
// io_uring + O_DIRECT backend. Durable writes carry RWF_DSYNC, so one SQE is one durable
// write (measured as fast as write + linked fsync on this machine). The ring is a
// uring_hub shared with the thread's other backends (make_backend); this one's completions
// are its own (io/uring_hub.h).
#include <memory>

#include "io/backend.h"
#include "io/uring_hub.h"

namespace io {

class uring_backend final : public backend {
 public:
  // direct=false still uses io_uring but buffered (O_DIRECT refused by the filesystem).
  explicit uring_backend(bool direct) : _direct(direct) {}
  // A client of an existing hub (make_backend passes the thread's).
  uring_backend(bool direct, std::shared_ptr<uring_hub> hub);
  // A ring of its own (tests); not needed after the hub constructor.
  base::status init(unsigned entries = 64);

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
  // Queues one synchronous operation and waits for it.
  template <class Prep>
  std::int32_t run_sync(Prep&& prep);

  bool _direct;
  std::shared_ptr<uring_hub> _hub;
  std::uint32_t _client = 0;
  std::uint64_t _next_internal = 1;
};

}  // namespace io
