#pragma once
// net::transport over one DPDK port: rx/tx bursts in the shard's poll, frames handed to the
// user-space stack (net/tcp/ip_stack), outgoing frames written straight into mbufs. Idle
// follows the shard loop: the waiter blocks on the rx-queue interrupt fd where the PMD has
// one (net_tap, most real NICs), else sleeps with an exponential backoff (net_af_packet).
// With fewer queues than shards (software steering), a queue owner passes the mbufs of other
// shards' connections over SPSC rings and rings their eventfd when they sleep; a shard
// without a queue blocks on that eventfd and transmits on a shared tx queue under its lock.
// Only this file's .cc sees DPDK headers.
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "net/dpdk/dpdk_factory.h"
#include "net/tcp/ip_stack.h"

struct rte_mbuf;

namespace net {

class dpdk_transport final : public transport, tcp::frame_io, tcp::stack_handler {
 public:
  struct port_state;  // one shard's DPDK objects (mempool, queue ids, burst arrays)
  struct port_group;  // what the shards of one port share (listening, steering rings, tx locks)
  dpdk_transport(std::unique_ptr<port_state> port, std::shared_ptr<port_group> group, const tcp::stack_config& cfg);
  ~dpdk_transport() override;

  std::string_view name() const override { return "dpdk"; }
  void set_handler(transport_handler* h) override { _handler = h; }
  base::status listen(const std::string& host, int port) override;
  void set_accept_sink(std::function<void(int)>) override {}
  void stop_listening() override;
  int bound_port() const override;
  void adopt(int fd) override;
  std::string& outbuf(conn_handle h) override;
  std::size_t pending_bytes(conn_handle h) const override { return _stack.unsent_bytes(h); }
  void pause_reading(conn_handle h) override { _stack.pause(h); }
  void resume_reading(conn_handle h) override { _stack.resume(h); }
  void flush_now(conn_handle h) override;
  std::size_t flush() override;
  void close(conn_handle h, bool after_flush) override { _stack.close(h, after_flush); }
  void shutdown() override;

  std::size_t poll(base::nanos now) override;
  void wait(base::nanos timeout, int doorbell_fd) override;

  const tcp::stack_stats& stats() const { return _stack.stats(); }
  bool tx_checksum_offload() const override;

 private:
  // frame_io
  std::uint8_t* alloc_frame(std::size_t len) override;
  void commit_frame() override;
  void commit_tcp_offload_frame() override;
  // stack_handler
  void on_open(std::uint64_t id, std::uint32_t peer_ip, std::uint16_t peer_port) override;
  void on_data(std::uint64_t id, std::string_view bytes) override;
  void on_close(std::uint64_t id) override;

  std::size_t receive(base::nanos now);
  // Hands one received frame (its mbuf is freed here) to this shard's stack.
  void deliver(rte_mbuf* m, base::nanos now);
  // Software steering: passes `m` to shard `to`'s ring from this queue (drops it when full).
  void steer_to(std::uint32_t to, rte_mbuf* m);
  std::size_t drain_steered(base::nanos now);
  void wake_steered();
  void tx_flush();

  std::unique_ptr<port_state> _port;
  std::shared_ptr<port_group> _group;
  tcp::ip_stack _stack;
  transport_handler* _handler = nullptr;
  std::unordered_set<conn_handle> _dirty;
  bool _registered = false;
  base::nanos _backoff = 0;
};

}  // namespace net
