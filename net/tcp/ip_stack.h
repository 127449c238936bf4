#pragma once
// A host on one Ethernet port: ARP (reply, learn, resolve), IPv4 (fragments dropped), ICMP
// echo, and TCP connections (tcp_conn) demultiplexed by 4-tuple behind listening ports.
// Pure code over frames: the caller feeds received frames and `now`, and provides a
// frame_io to write outgoing frames into (a DPDK mbuf, or a test buffer). Everything runs
// on one thread; handler callbacks never re-enter the stack (closes and resumes are deferred).
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "net/tcp/tcp_conn.h"
#include "net/tcp/wire.h"

namespace net::tcp {

class frame_io {
 public:
  virtual ~frame_io() = default;
  // A writable buffer for one outgoing frame of exactly `len` bytes; nullptr drops it
  // (TCP retransmits). The frame leaves on commit_frame().
  virtual std::uint8_t* alloc_frame(std::size_t len) = 0;
  virtual void commit_frame() = 0;
  // True when the port computes IPv4 and TCP checksums on transmit: TCP frames then carry a
  // zero IPv4 checksum and the pseudo-header sum in the TCP one, committed through
  // commit_tcp_offload_frame() so the port knows to finish them.
  virtual bool tx_checksum_offload() const { return false; }
  virtual void commit_tcp_offload_frame() { commit_frame(); }
};

class stack_handler {
 public:
  virtual ~stack_handler() = default;
  virtual void on_open(std::uint64_t id, std::uint32_t peer_ip, std::uint16_t peer_port) = 0;
  virtual void on_data(std::uint64_t id, std::string_view bytes) = 0;
  // Exactly once per opened connection; afterwards `id` is dead for the handler.
  virtual void on_close(std::uint64_t id) = 0;
};

struct stack_config {
  mac_addr mac{};
  std::uint32_t ip = 0, netmask = 0xffffff00u, gateway = 0;  // host order; gateway 0 = none
  tcp_config tcp;
  std::size_t max_connections = 65536;  // beyond it new SYNs are dropped (a SYN flood's bound)
  bool verify_ip_checksum = true;   // false only for fuzzing: the NIC's verdict comes per frame
  bool verify_tcp_checksum = true;
  std::uint64_t isn_seed = 0;       // seeds ISNs when no isn_source is given (tests replay)
  // Unpredictable initial sequence numbers for real traffic (the transport reads the
  // kernel's CSPRNG); a seeded generator is guessable after enough observed ISNs.
  std::function<std::uint32_t()> isn_source;
};

struct stack_stats {
  std::uint64_t rx_frames = 0, tx_frames = 0, arp_replies = 0, icmp_echo = 0, dropped_bad = 0,
                dropped_fragment = 0, rst_sent = 0, accepted = 0, syn_dropped_full = 0, tx_no_buffer = 0, no_route = 0;
};

class ip_stack {
 public:
  ip_stack(stack_config cfg, frame_io& io);
  ~ip_stack();

  void set_handler(stack_handler* h) { _handler = h; }
  void listen(std::uint16_t port) { _listening.insert(port); }
  void stop_listening() { _listening.clear(); }

  // One received Ethernet frame (valid only during the call). `hw_ip_ok`/`hw_l4_ok`: the
  // NIC verified that checksum as good, so software skips it.
  void input(bytes frame, base::nanos now, bool hw_ip_ok = false, bool hw_l4_ok = false);
  // Timers and deferred work; returns the amount of work done.
  std::size_t poll(base::nanos now);
  // Earliest time poll() has timer work; 0 when none.
  base::nanos next_timer() const { return _next_timer; }

  // Per-connection calls from the application (ids from on_open).
  std::string* send_buffer(std::uint64_t id);
  void push(std::uint64_t id, base::nanos now);
  std::size_t unsent_bytes(std::uint64_t id) const;
  void pause(std::uint64_t id);
  void resume(std::uint64_t id);  // deferred to the next poll()
  // Ends the application's use of `id`: FIN after the buffered bytes (or after only what is
  // in flight when !after_flush). on_close follows from the next poll().
  void close(std::uint64_t id, bool after_flush);
  // Process shutdown: stops listening and resets every connection (after exit nothing
  // would answer its peer, which would wait for its own timeout); no handler is called.
  void abort_all();

  const stack_stats& stats() const { return _stats; }
  std::size_t connection_count() const { return _conns.size(); }

 private:
  struct conn_entry;
  struct conn_output;
  void handle_arp(const ether_frame& e, base::nanos now);
  void handle_ipv4(const ether_frame& e, base::nanos now, bool hw_ip_ok, bool hw_l4_ok);
  void handle_tcp(const ipv4_packet& ip, base::nanos now, bool verify);
  void send_rst_for(const ipv4_packet& ip, const tcp_segment& s);
  // Writes Ethernet+IPv4+TCP around `payload` towards the peer; false without a route/MAC.
  bool send_tcp(std::uint32_t dst_ip, const tcp_header& h, std::string_view payload);
  bool resolve(std::uint32_t dst_ip, mac_addr& mac);
  void send_arp_request(std::uint32_t target);
  void learn(std::uint32_t ip, const mac_addr& mac);
  void after_event(conn_entry& c);
  void reap(std::uint64_t id);
  void note_timer(const tcp_conn& c);
  std::uint32_t next_hop(std::uint32_t dst) const {
    return ((dst ^ _cfg.ip) & _cfg.netmask) == 0 || _cfg.gateway == 0 ? dst : _cfg.gateway;
  }

  stack_config _cfg;
  frame_io& _io;
  stack_handler* _handler = nullptr;
  std::mt19937_64 _rng;
  std::unordered_set<std::uint16_t> _listening;
  std::unordered_map<std::uint32_t, mac_addr> _arp;
  std::unordered_map<std::uint32_t, base::nanos> _arp_asked;  // rate-limits requests
  std::unordered_map<std::uint64_t, std::unique_ptr<conn_entry>> _conns;
  std::unordered_map<std::uint64_t, std::uint64_t> _by_tuple;  // peer ip|port|local port -> id
  std::vector<std::uint64_t> _deferred;  // connections with pending closes/resumes/events
  std::uint64_t _next_id = 1;
  std::uint16_t _ip_id = 0;
  base::nanos _next_timer = 0;
  base::nanos _last_scan = 0;
  stack_stats _stats;
};

std::string ipv4_to_string(std::uint32_t ip);
bool parse_ipv4_addr(const std::string& s, std::uint32_t& out);

}  // namespace net::tcp
