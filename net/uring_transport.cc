#include "net/uring_transport.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>

#include "net/socket_util.h"
#include "src/base/clock.h"
#include "src/base/log.h"

namespace net {
namespace {
constexpr unsigned kEntries = 1024;
constexpr unsigned kBufCount = 512;        // provided receive buffers per shard
constexpr unsigned kBufSize = 16 * 1024;
constexpr int kBufGroup = 0;
constexpr std::size_t kMaxSendChunk = 1 << 20;

enum tag : std::uint64_t {
  tag_accept = 1, tag_recv = 2, tag_send = 3, tag_doorbell = 4, tag_ignore = 5, tag_watch = 6,
  tag_cancel_all = 7
};
constexpr std::uint64_t encode(tag t, conn_handle h) { return (std::uint64_t(t) << 56) | h; }
constexpr tag tag_of(std::uint64_t ud) { return tag(ud >> 56); }
constexpr conn_handle handle_of(std::uint64_t ud) { return ud & ((1ull << 56) - 1); }
}  // namespace

struct uring_transport::conn {
  int fd = -1;
  std::string inflight;  // being sent
  // Taken whole (append_owned), each after what `out` held when it came; sent before `out`.
  std::deque<std::string> taken;
  std::size_t taken_bytes = 0;
  std::string out;  // filled during the turn
  std::size_t sent = 0;  // bytes of `inflight` the kernel took
  bool sending = false;
  bool recv_armed = false;
  bool closing = false;       // close requested
  bool close_after_flush = false;
  bool peer_gone = false;     // recv ended
  bool read_paused = false;   // back-pressure: recv cancelled on purpose
};

std::unique_ptr<uring_transport> uring_transport::create(std::string& why) {
  std::unique_ptr<uring_transport> t(new uring_transport());
  if (!t->init(why)) return nullptr;
  return t;
}

bool uring_transport::init(std::string& why) {
  io_uring_params p{};
  // The ring is created disabled: SINGLE_ISSUER binds it to the thread that enables it,
  // which must be the shard's thread (see ensure_enabled), not the one constructing it.
  // TASKRUN_FLAG: the kernel flags the SQ ring when deferred completions wait (liburing's
  // peek then enters to run them), so a poll with nothing to submit needs no io_uring_enter
  // of its own (a spinning shard entered the kernel every turn: tens of thousands of
  // syscalls a second, each costly on a VM).
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
            IORING_SETUP_R_DISABLED;
  int r = io_uring_queue_init_params(kEntries, &_ring, &p);
  _taskrun_flag = r >= 0;
  if (r < 0) {
    p = io_uring_params{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
    r = io_uring_queue_init_params(kEntries, &_ring, &p);
  }
  if (r < 0) {
    p = io_uring_params{};
    p.flags = IORING_SETUP_R_DISABLED;
    r = io_uring_queue_init_params(kEntries, &_ring, &p);
  }
  if (r < 0) {
    why = std::string("io_uring_queue_init: ") + std::strerror(-r);
    return false;
  }
  _ring_ok = true;
  _buf_ring_bytes = kBufCount * sizeof(io_uring_buf);
  void* mem = mmap(nullptr, _buf_ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  if (mem == MAP_FAILED) {
    why = "mmap of the provided-buffer ring failed";
    return false;
  }
  _bufs = static_cast<io_uring_buf_ring*>(mem);
  io_uring_buf_ring_init(_bufs);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uint64_t>(_bufs);
  reg.ring_entries = kBufCount;
  reg.bgid = kBufGroup;
  r = io_uring_register_buf_ring(&_ring, &reg, 0);
  if (r < 0) {
    why = std::string("provided buffer rings unsupported: ") + std::strerror(-r);
    return false;
  }
  _buf_mem = static_cast<char*>(std::aligned_alloc(4096, std::size_t(kBufCount) * kBufSize));
  for (unsigned i = 0; i < kBufCount; ++i)
    io_uring_buf_ring_add(_bufs, _buf_mem + std::size_t(i) * kBufSize, kBufSize, i,
                          io_uring_buf_ring_mask(kBufCount), int(i));
  io_uring_buf_ring_advance(_bufs, kBufCount);
  return true;
}

uring_transport::~uring_transport() {
  for (auto& [h, c] : _conns)
    if (c->fd >= 0) ::close(c->fd);
  if (_listen_fd >= 0) ::close(_listen_fd);
  if (_ring_ok) io_uring_queue_exit(&_ring);
  if (_bufs) munmap(_bufs, _buf_ring_bytes);
  std::free(_buf_mem);
}

io_uring_sqe* uring_transport::sqe() {
  io_uring_sqe* s = io_uring_get_sqe(&_ring);
  if (!s) {
    io_uring_submit(&_ring);
    s = io_uring_get_sqe(&_ring);
  }
  if (s) {
    ++_inflight;
    ++_counters.submissions;
  }
  return s;
}

base::status uring_transport::listen(const std::string& host, int port) {
  auto fd = open_listener(host, port, false);
  if (!fd) return fd.err();
  _listen_fd = *fd;
  _accept_pending = true;  // armed from the shard thread on its first poll
  return {};
}

void uring_transport::stop_listening() {
  if (_listen_fd < 0) return;
  // shutdown() takes the socket out of the listening table at once: the port is free and
  // new connects are refused even while the multishot accept still holds the file.
  ::shutdown(_listen_fd, SHUT_RDWR);
  io_uring_sqe* s = sqe();
  io_uring_prep_cancel64(s, encode(tag_accept, 0), 0);
  io_uring_sqe_set_data64(s, encode(tag_ignore, 0));
  io_uring_submit(&_ring);
  ::close(_listen_fd);
  _listen_fd = -1;
}

void uring_transport::arm_accept() {
  io_uring_sqe* s = sqe();
  io_uring_prep_multishot_accept(s, _listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  io_uring_sqe_set_data64(s, encode(tag_accept, 0));
}

void uring_transport::adopt(int fd) {
  tune_accepted(fd);
  const conn_handle h = _next++;
  auto c = std::make_unique<conn>();
  c->fd = fd;
  conn& ref = *c;
  _conns.emplace(h, std::move(c));
  arm_recv(h, ref);
  std::string ip;
  int port = 0;
  peer_of(fd, ip, port);
  if (_handler) _handler->on_open(h, ip, port);
}

void uring_transport::arm_recv(conn_handle h, conn& c) {
  io_uring_sqe* s = sqe();
  io_uring_prep_recv_multishot(s, c.fd, nullptr, 0, 0);
  s->flags |= IOSQE_BUFFER_SELECT;
  s->buf_group = kBufGroup;
  io_uring_sqe_set_data64(s, encode(tag_recv, h));
  c.recv_armed = true;
}

std::string& uring_transport::outbuf(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end()) {
    static thread_local std::string sink;  // a dead connection's bytes go nowhere
    sink.clear();
    return sink;
  }
  _dirty.emplace(h, it->second.get());
  return it->second->out;
}

void uring_transport::append_owned(conn_handle h, std::string&& bytes) {
  auto it = _conns.find(h);
  if (it == _conns.end() || bytes.empty()) return;
  conn& c = *it->second;
  _dirty.emplace(h, &c);
  if (!c.out.empty()) {  // what came before goes first (out starts again empty)
    c.taken_bytes += c.out.size();
    c.taken.push_back(std::exchange(c.out, {}));
  }
  c.taken_bytes += bytes.size();
  c.taken.push_back(std::move(bytes));
}

std::size_t uring_transport::pending_bytes(conn_handle h) const {
  auto it = _conns.find(h);
  if (it == _conns.end()) return 0;
  const conn& c = *it->second;
  return c.out.size() + c.taken_bytes + (c.inflight.size() - c.sent);
}

void uring_transport::drop_outbound(conn& c) {
  c.out.clear();
  c.taken.clear();
  c.taken_bytes = 0;
}

// Once `inflight` has left: the next bytes in order (a taken string, else `out`). False
// when nothing waits.
bool uring_transport::next_inflight(conn& c) {
  if (c.sent < c.inflight.size()) return true;
  c.inflight.clear();  // sent (its capacity stays, for `out` after the swap below)
  c.sent = 0;
  if (!c.taken.empty()) {
    c.taken_bytes -= c.taken.front().size();
    c.inflight = std::move(c.taken.front());
    c.taken.pop_front();
    return true;
  }
  if (c.out.empty()) return false;
  c.inflight.swap(c.out);
  return true;
}

void uring_transport::start_send(conn_handle h, conn& c) {
  if (c.sending || c.fd < 0) return;
  if (!next_inflight(c)) return;
  const std::size_t len = std::min(c.inflight.size() - c.sent, kMaxSendChunk);
  io_uring_sqe* s = sqe();
  io_uring_prep_send(s, c.fd, c.inflight.data() + c.sent, len, MSG_NOSIGNAL);
  io_uring_sqe_set_data64(s, encode(tag_send, h));
  c.sending = true;
}

void uring_transport::flush_now(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end()) return;
  conn& c = *it->second;
  // Only when no io_uring send is in flight, so bytes stay in order on the socket.
  if (c.sending || c.closing) return;
  if (!next_inflight(c)) return;
  const ssize_t n = ::send(c.fd, c.inflight.data() + c.sent, c.inflight.size() - c.sent,
                           MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n > 0) c.sent += std::size_t(n);
  _dirty.emplace(h, &c);  // the rest leaves with the next flush()
}

void uring_transport::pause_reading(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end()) return;
  conn& c = *it->second;
  if (c.read_paused || c.closing) return;
  c.read_paused = true;
  if (!c.recv_armed) return;
  io_uring_sqe* s = sqe();
  io_uring_prep_cancel64(s, encode(tag_recv, h), 0);
  io_uring_sqe_set_data64(s, encode(tag_ignore, 0));
}

void uring_transport::resume_reading(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end()) return;
  conn& c = *it->second;
  if (!c.read_paused) return;
  c.read_paused = false;
  if (!c.recv_armed && !c.closing && !c.peer_gone) arm_recv(h, c);
}

std::size_t uring_transport::flush() {
  std::size_t started = 0;
  for (auto& [h, c] : _dirty) {
    if (!c->sending && (!c->out.empty() || !c->taken.empty() || c->sent < c->inflight.size())) {
      start_send(h, *c);
      ++started;
    }
  }
  _dirty.clear();
  if (started) io_uring_submit(&_ring);
  return started;
}

void uring_transport::close(conn_handle h, bool after_flush) {
  auto it = _conns.find(h);
  if (it == _conns.end()) return;
  conn& c = *it->second;
  if (c.closing) return;
  c.closing = true;
  c.close_after_flush = after_flush;
  if (!after_flush) {
    drop_outbound(c);
    ::shutdown(c.fd, SHUT_RDWR);
  } else {
    _dirty.emplace(h, &c);
  }
  maybe_finish_close(h);
}

void uring_transport::shutdown() {
  _handler = nullptr;
  _accept_sink = nullptr;
  stop_listening();
  for (auto& [h, c] : _conns)
    if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
  // Every armed request (accept, recvs, sends, eventfd reads) holds its file. Cancel them
  // all and wait for their last completions, so the ring holds nothing when it is torn
  // down: io_uring's teardown after exit is asynchronous and used to keep the listener
  // bound for ~8 ms after the process was gone (EADDRINUSE on an immediate restart).
  if (_ring_ok && _enabled) {
    io_uring_sqe* s = sqe();
    io_uring_prep_cancel64(s, 0, IORING_ASYNC_CANCEL_ANY);
    io_uring_sqe_set_data64(s, encode(tag_cancel_all, 0));
    const base::nanos deadline = base::read_clock(CLOCK_MONOTONIC) + 2 * base::kSecond;
    while (_inflight > 0 && base::read_clock(CLOCK_MONOTONIC) < deadline) {
      __kernel_timespec ts{0, 10 * base::kMilli};
      io_uring_cqe* cqe = nullptr;
      io_uring_submit_and_wait_timeout(&_ring, &cqe, 1, &ts, nullptr);
      unsigned head = 0, seen = 0;
      bool cancel_any_refused = false;
      io_uring_for_each_cqe(&_ring, head, cqe) {
        if (!(cqe->flags & IORING_CQE_F_MORE)) --_inflight;
        if (tag_of(io_uring_cqe_get_data64(cqe)) == tag_cancel_all && cqe->res == -EINVAL) cancel_any_refused = true;
        ++seen;
      }
      io_uring_cq_advance(&_ring, seen);
      // Before Linux 5.19 there is no CANCEL_ANY. The sockets' shutdown() ends accept, recvs
      // and sends; the eventfd reads are cancelled one by one.
      if (cancel_any_refused) {
        if (_doorbell_armed) cancel_one(encode(tag_doorbell, 0));
        for (std::size_t i = 0; i < _watched.size(); ++i)
          if (_watched[i].armed) cancel_one(encode(tag_watch, i));
      }
    }
    if (_inflight > 0) PG_WARN("io_uring shutdown: {} requests still in flight", _inflight);
  }
  for (auto& [h, c] : _conns)
    if (c->fd >= 0) ::close(c->fd);
  _conns.clear();
  _dirty.clear();
  if (_ring_ok) io_uring_queue_exit(&_ring);
  _ring_ok = false;
}

void uring_transport::cancel_one(std::uint64_t user_data) {
  io_uring_sqe* s = sqe();
  io_uring_prep_cancel64(s, user_data, 0);
  io_uring_sqe_set_data64(s, encode(tag_ignore, 0));
}

void uring_transport::maybe_finish_close(conn_handle h) {
  auto it = _conns.find(h);
  if (it == _conns.end()) return;
  conn& c = *it->second;
  const bool drained = !c.sending && c.out.empty() && c.taken.empty() && c.sent >= c.inflight.size();
  if (c.closing && c.close_after_flush && drained && !c.peer_gone) {
    ::shutdown(c.fd, SHUT_RDWR);  // ends the multishot recv; the final step follows below
    c.close_after_flush = false;
  }
  if ((c.closing || c.peer_gone) && !c.recv_armed && !c.sending) {
    ::close(c.fd);
    _dirty.erase(h);
    _conns.erase(it);
    if (_handler) _handler->on_close(h);
  } else if (c.peer_gone && !c.closing) {
    c.closing = true;  // the peer left: drop what we had for it
    drop_outbound(c);
    if (c.recv_armed) ::shutdown(c.fd, SHUT_RDWR);
  }
}

void uring_transport::recycle(unsigned bid) {
  io_uring_buf_ring_add(_bufs, _buf_mem + std::size_t(bid) * kBufSize, kBufSize, bid,
                        io_uring_buf_ring_mask(kBufCount), 0);
  io_uring_buf_ring_advance(_bufs, 1);
}

void uring_transport::on_recv(conn_handle h, const io_uring_cqe* cqe) {
  const bool more = cqe->flags & IORING_CQE_F_MORE;
  const bool has_buf = cqe->flags & IORING_CQE_F_BUFFER;
  const unsigned bid = has_buf ? (cqe->flags >> IORING_CQE_BUFFER_SHIFT) : 0;
  auto it = _conns.find(h);
  if (it == _conns.end()) {
    if (has_buf) recycle(bid);
    return;
  }
  conn& c = *it->second;
  if (cqe->res > 0 && has_buf) {
    if (!c.closing && _handler)
      _handler->on_data(h, std::string_view(_buf_mem + std::size_t(bid) * kBufSize, std::size_t(cqe->res)));
    recycle(bid);
  } else if (has_buf) {
    recycle(bid);
  }
  if (more) return;
  c.recv_armed = false;
  if (_conns.find(h) == _conns.end()) return;
  if (cqe->res == -ECANCELED && !c.closing) {
    // Our pause cancelled it. If reading was resumed before this completion arrived,
    // resume_reading saw the recv still armed and left it: re-arm now, or the connection
    // would never be read again (before, this fell through to "peer gone" and closed a
    // publisher that back-pressure had paused and released within one turn).
    if (!c.read_paused) arm_recv(h, c);
    return;
  }
  if (cqe->res == -ENOBUFS && !c.closing) {  // buffers ran dry: they are back now, re-arm
    arm_recv(h, c);
    return;
  }
  if (cqe->res > 0 && !c.closing) {  // multishot ended without error: keep reading
    arm_recv(h, c);
    return;
  }
  c.peer_gone = true;
  maybe_finish_close(h);
}

void uring_transport::on_send(conn_handle h, int res) {
  auto it = _conns.find(h);
  if (it == _conns.end()) return;
  conn& c = *it->second;
  c.sending = false;
  if (res < 0) {
    c.peer_gone = true;
    drop_outbound(c);
    c.inflight.clear();
    c.sent = 0;
    if (c.recv_armed) ::shutdown(c.fd, SHUT_RDWR);
    maybe_finish_close(h);
    return;
  }
  c.sent += std::size_t(res);
  start_send(h, c);
  if (!c.sending) maybe_finish_close(h);
}

void uring_transport::handle_cqe(const io_uring_cqe* cqe) {
  const std::uint64_t ud = io_uring_cqe_get_data64(cqe);
  switch (tag_of(ud)) {
    case tag_accept:
      if (cqe->res >= 0) {
        if (_accept_sink) {
          _accept_sink(cqe->res);
        } else {
          adopt(cqe->res);
        }
      }
      if (!(cqe->flags & IORING_CQE_F_MORE) && _listen_fd >= 0) arm_accept();
      break;
    case tag_recv: on_recv(handle_of(ud), cqe); break;
    case tag_send: on_send(handle_of(ud), cqe->res); break;
    case tag_doorbell: _doorbell_armed = false; break;
    case tag_watch:
      if (handle_of(ud) < _watched.size()) _watched[handle_of(ud)].armed = false;
      break;
    default: break;
  }
}

void uring_transport::ensure_enabled() {
  if (_enabled) return;
  _enabled = true;
  // liburing 2.3 declares io_uring_enable_rings but does not export it: register directly.
  syscall(__NR_io_uring_register, _ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0);
  if (_accept_pending && _listen_fd >= 0) arm_accept();
  _accept_pending = false;
}

std::size_t uring_transport::poll(base::nanos) {
  ensure_enabled();
  // With TASKRUN_FLAG, io_uring_peek_cqe below enters the kernel itself when deferred
  // completions are flagged; an enter is needed here only to submit.
  if (!_taskrun_flag || io_uring_sq_ready(&_ring) > 0) io_uring_submit_and_get_events(&_ring);
  std::size_t n = 0;
  io_uring_cqe* cqe = nullptr;
  // Handlers may queue new SQEs; reap in batches so the CQ drains before we submit again.
  while (n < 64 && io_uring_peek_cqe(&_ring, &cqe) == 0) {
    if (!(cqe->flags & IORING_CQE_F_MORE)) --_inflight;
    handle_cqe(cqe);
    io_uring_cqe_seen(&_ring, cqe);
    ++n;
    ++_counters.completions;
  }
  return n;
}

void uring_transport::wait(base::nanos timeout, int doorbell_fd) {
  ensure_enabled();
  if (!_doorbell_armed) {
    io_uring_sqe* s = sqe();
    io_uring_prep_read(s, doorbell_fd, &_doorbell_val, sizeof _doorbell_val, 0);
    io_uring_sqe_set_data64(s, encode(tag_doorbell, 0));
    _doorbell_armed = true;
  }
  for (std::size_t i = 0; i < _watched.size(); ++i) {
    auto& w = _watched[i];
    if (w.armed) continue;
    io_uring_sqe* s = sqe();
    io_uring_prep_read(s, w.fd, &w.val, sizeof w.val, 0);
    io_uring_sqe_set_data64(s, encode(tag_watch, i));
    w.armed = true;
  }
  __kernel_timespec ts{};
  ts.tv_sec = timeout / base::kSecond;
  ts.tv_nsec = timeout % base::kSecond;
  io_uring_cqe* cqe = nullptr;
  io_uring_submit_and_wait_timeout(&_ring, &cqe, 1, &ts, nullptr);
}

bool uring_transport::watch_fd(int fd) {
  // _watched never shrinks or reallocates while reads are armed: reserve up front.
  if (_watched.capacity() == 0) _watched.reserve(16);
  if (_watched.size() == _watched.capacity()) return false;
  _watched.push_back(watched{fd, false, 0});
  return true;
}

}  // namespace net
