#pragma once
// Kernel TCP through epoll and non-blocking read/write: the fallback when io_uring is
// unavailable (seccomp, old kernels) or when `--transport socket` asks for it.
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "net/socket_util.h"
#include "net/transport.h"

namespace net {

class epoll_transport final : public transport {
 public:
  epoll_transport();
  ~epoll_transport() override;

  std::string_view name() const override { return "epoll"; }
  void set_handler(transport_handler* h) override { _handler = h; }
  base::status listen(const std::string& host, int port) override;
  void set_accept_sink(std::function<void(int)> sink) override { _accept_sink = std::move(sink); }
  void stop_listening() override;
  int bound_port() const override { return local_port(_listen_fd); }
  void adopt(int fd) override;
  std::string& outbuf(conn_handle h) override;
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

 private:
  struct conn;
  std::size_t process_events(int timeout_ms);
  void read_ready(conn_handle h);
  void write_some(conn_handle h, conn& c);
  void finish(conn_handle h);
  void update_interest(conn_handle h, conn& c);

  int _ep = -1;
  int _listen_fd = -1;
  int _doorbell_registered = -1;
  transport_handler* _handler = nullptr;
  std::function<void(int)> _accept_sink;
  conn_handle _next = 1;
  std::unordered_map<conn_handle, std::unique_ptr<conn>> _conns;
  std::unordered_set<conn_handle> _dirty;
  std::string _rbuf;
};

}  // namespace net
