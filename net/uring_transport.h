#pragma once
// Kernel TCP through io_uring: multishot accept, multishot recv into a provided buffer
// ring, one send in flight per connection with double-buffered outbound bytes (strings
// taken whole by append_owned queue between the two), and a blocking wait that also ends on
// the shard's doorbell.
#include <liburing.h>

#include <memory>
#include <string>
#include <unordered_map>

#include "net/socket_util.h"
#include "net/transport.h"

namespace net {

class uring_transport final : public transport {
 public:
  // Returns null (with the reason in `why`) when io_uring cannot be used here.
  static std::unique_ptr<uring_transport> create(std::string& why);
  ~uring_transport() override;

  std::string_view name() const override { return "io_uring"; }
  transport_counters counters() const override { return _counters; }
  void set_handler(transport_handler* h) override { _handler = h; }
  base::status listen(const std::string& host, int port) override;
  void set_accept_sink(std::function<void(int)> sink) override { _accept_sink = std::move(sink); }
  void stop_listening() override;
  int bound_port() const override { return local_port(_listen_fd); }
  void adopt(int fd) override;
  std::string& outbuf(conn_handle h) override;
  void append_owned(conn_handle h, std::string&& bytes) override;
  std::size_t pending_bytes(conn_handle h) const override;
  void flush_now(conn_handle h) override;
  void pause_reading(conn_handle h) override;
  void resume_reading(conn_handle h) override;
  std::size_t flush() override;
  void close(conn_handle h, bool after_flush) override;
  void shutdown() override;

  std::size_t poll(base::nanos now) override;
  void wait(base::nanos timeout, int doorbell_fd) override;
  bool watch_fd(int fd) override;
  bool drains_doorbell() const override { return true; }  // an armed read takes the count

 private:
  struct conn;
  uring_transport() = default;
  bool init(std::string& why);
  io_uring_sqe* sqe();
  transport_counters _counters;
  void arm_accept();
  void arm_recv(conn_handle h, conn& c);
  void start_send(conn_handle h, conn& c);
  bool next_inflight(conn& c);
  static void drop_outbound(conn& c);
  void handle_cqe(const io_uring_cqe* cqe);
  void on_recv(conn_handle h, const io_uring_cqe* cqe);
  void on_send(conn_handle h, int res);
  void maybe_finish_close(conn_handle h);
  void cancel_one(std::uint64_t user_data);
  void recycle(unsigned bid);
  void ensure_enabled();

  io_uring _ring{};
  bool _ring_ok = false;
  bool _taskrun_flag = false;  // the SQ ring flags pending completions (poll may skip the enter)
  io_uring_buf_ring* _bufs = nullptr;
  char* _buf_mem = nullptr;
  std::size_t _buf_ring_bytes = 0;
  transport_handler* _handler = nullptr;
  std::function<void(int)> _accept_sink;
  int _listen_fd = -1;
  bool _doorbell_armed = false;
  bool _enabled = false;
  bool _accept_pending = false;
  std::size_t _inflight = 0;  // SQEs whose final CQE (no IORING_CQE_F_MORE) has not arrived
  std::uint64_t _doorbell_val = 0;
  struct watched {
    int fd = -1;
    bool armed = false;
    std::uint64_t val = 0;
  };
  std::vector<watched> _watched;  // eventfds that end a wait (drained by a pending read)
  conn_handle _next = 1;
  std::unordered_map<conn_handle, std::unique_ptr<conn>> _conns;
  std::unordered_map<conn_handle, conn*> _dirty;  // outbound bytes waiting for flush()
};

}  // namespace net
