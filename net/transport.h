#pragma once
// The interface between a shard's dispatcher and whatever moves its bytes: kernel sockets
// (io_uring or epoll) or the DPDK user-space TCP stack. One transport instance per shard;
// every call happens on that shard's thread.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/result.h"
#include "src/shard/loop.h"

namespace net {

using conn_handle = std::uint64_t;

class transport_handler {
 public:
  virtual ~transport_handler() = default;
  virtual void on_open(conn_handle h, std::string_view peer_ip, int peer_port) = 0;
  // `bytes` is valid only during the call.
  virtual void on_data(conn_handle h, std::string_view bytes) = 0;
  // Called exactly once per connection, after which `h` is dead.
  virtual void on_close(conn_handle h) = 0;
};

// Work counts for monitoring (/metrics); transports without them report zeros.
struct transport_counters {
  std::uint64_t submissions = 0;  // io_uring SQEs queued
  std::uint64_t completions = 0;  // io_uring CQEs handled
};

class transport : public shard::poller, public shard::waiter {
 public:
  virtual transport_counters counters() const { return {}; }
  virtual std::string_view name() const = 0;
  virtual void set_handler(transport_handler* h) = 0;
  // Starts accepting on host:port. Accepted sockets go to the accept sink when one is set
  // (to spread them over shards), else they are adopted here.
  virtual base::status listen(const std::string& host, int port) = 0;
  virtual void set_accept_sink(std::function<void(int fd)> sink) = 0;
  virtual void stop_listening() = 0;
  // The port actually bound (differs from the requested one when that was 0).
  virtual int bound_port() const = 0;
  // Takes ownership of an accepted kernel socket (kernel transports only).
  virtual void adopt(int fd) = 0;
  // Takes a socket whose bytes stay plaintext under a TLS layer: cluster routes, which the
  // client listener's TLS settings do not cover.
  virtual void adopt_plain(int fd) { adopt(fd); }
  // Takes a route socket under the cluster's TLS (set up by the TLS layer): the handshake
  // comes first, as the client side when `dialed` (verifying `server_name`), else the server
  // side. False when this transport has no route TLS; the socket is then not taken.
  virtual bool adopt_route_tls(int /*fd*/, bool /*dialed*/, const std::string& /*server_name*/) { return false; }
  // The connection's outbound buffer: append protocol bytes, they leave on flush().
  virtual std::string& outbuf(conn_handle h) = 0;
  // Appends `bytes` after what the outbound buffer holds, taking the string instead of
  // copying it where the transport can: a big reply built on another thread leaves without
  // the loop first touching as many fresh pages (a 3 MB copy cost 8-12 ms on a VM).
  virtual void append_owned(conn_handle h, std::string&& bytes) { outbuf(h).append(bytes); }
  // Bytes appended but not yet acknowledged by the kernel/stack.
  virtual std::size_t pending_bytes(conn_handle h) const = 0;
  // Stops reading from the connection (TCP flow control then holds the peer) / restarts it.
  virtual void pause_reading(conn_handle h) = 0;
  virtual void resume_reading(conn_handle h) = 0;
  // Under outbound pressure: pushes what the kernel takes right now, synchronously.
  virtual void flush_now(conn_handle h) = 0;
  // Starts sending every non-empty outbound buffer; returns the number of sends started.
  virtual std::size_t flush() = 0;
  // Closes the connection; with `after_flush` once its outbound bytes have left.
  virtual void close(conn_handle h, bool after_flush) = 0;
  // Process shutdown, on the shard's thread after its loop ended: closes the listener and
  // every connection and releases what the kernel holds for them before returning, so a
  // server restarted on the same port the moment this process exits can bind it. No
  // handler is called; nothing but the destructor may follow.
  virtual void shutdown() {}
  // The names of the client certificate a TLS connection presented, in the order
  // nats-server's verify_and_map tries them: e-mail SANs, DNS SANs, then the subject (RFC 2253,
  // "CN=alice,O=Peregrine"). Empty for plaintext connections or without a certificate.
  virtual std::vector<std::string> tls_peer_names(conn_handle) const { return {}; }
  // A TLS connection's protocol ("1.3") and cipher suite in Go's names
  // ("TLS_AES_256_GCM_SHA384"), as nats-server's /connz shows them; false for plaintext.
  virtual bool tls_info(conn_handle, std::string& /*version*/, std::string& /*cipher*/) const { return false; }
};

}  // namespace net
