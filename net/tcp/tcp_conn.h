#pragma once
// One TCP connection as a pure state machine: inputs are segments, application calls and
// `now`; outputs go to a tcp_output (segments to send, in-order payload, events). No
// threads, no clocks, no DPDK: the transport feeds it, unit tests drive it over a fake link.
// Implements passive and active open, MSS and window-scale options, in-order delivery with
// out-of-order segments held, cumulative and delayed ACK, RFC 6298 RTO, fast retransmit and
// NewReno (RFC 5681/6582), the peer's window, zero-window probes, FIN/RST and TIME_WAIT.
// No SACK, no timestamps, no keepalive, no Nagle (a broker wants every byte out now).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "net/tcp/wire.h"
#include "src/base/clock.h"

namespace net::tcp {

// Sequence-space comparisons (RFC 793 modular arithmetic).
inline bool seq_lt(std::uint32_t a, std::uint32_t b) { return std::int32_t(a - b) < 0; }
inline bool seq_le(std::uint32_t a, std::uint32_t b) { return std::int32_t(a - b) <= 0; }
inline bool seq_gt(std::uint32_t a, std::uint32_t b) { return std::int32_t(a - b) > 0; }
inline bool seq_ge(std::uint32_t a, std::uint32_t b) { return std::int32_t(a - b) >= 0; }

enum class tcp_state { syn_sent, syn_rcvd, established, fin_wait_1, fin_wait_2, closing, time_wait,
                       close_wait, last_ack, closed };
const char* state_name(tcp_state s);

enum class tcp_event {
  established,  // handshake done
  peer_fin,     // the peer will send no more (read EOF)
  reset,        // RST received, or retransmissions gave up: the connection is dead
  closed,       // fully closed (after LAST_ACK or TIME_WAIT): the machine can be freed
};

class tcp_output {
 public:
  virtual ~tcp_output() = default;
  // A segment to put on the wire; ports are left 0 (the caller knows its 4-tuple).
  // `payload` is valid only during the call.
  virtual void send(const tcp_header& h, std::string_view payload) = 0;
  // In-order payload for the application; valid only during the call.
  virtual void deliver(std::string_view data) = 0;
  virtual void event(tcp_event e) = 0;
};

struct tcp_config {
  std::uint16_t mss = 1460;                       // ours; the peer's comes from its SYN
  std::uint8_t wscale = 7;                        // offered; used only if the peer offers too
  std::uint32_t rcv_buf = 1u << 20;               // receive window when nothing is held
  base::nanos rto_initial = base::kSecond;        // RFC 6298 (2.1)
  base::nanos rto_min = 200 * base::kMilli;       // Linux's floor rather than 6298's 1 s
  base::nanos rto_max = 60 * base::kSecond;
  base::nanos delayed_ack = 40 * base::kMilli;
  base::nanos time_wait = 2 * base::kSecond;      // 2*MSL, short: we are a server
  int max_retransmits = 12;
  int max_syn_retransmits = 5;  // a SYN-ACK nobody answers is given up sooner (Linux: 5)
};

class tcp_conn {
 public:
  // Passive open: `syn` arrived on a listener. Emits the SYN-ACK.
  tcp_conn(const tcp_config& cfg, const tcp_header& syn, std::uint32_t iss, base::nanos now, tcp_output& out);
  // Active open: emits the SYN.
  tcp_conn(const tcp_config& cfg, std::uint32_t iss, base::nanos now, tcp_output& out);

  void on_segment(const tcp_header& h, std::string_view payload, base::nanos now, tcp_output& out);
  // Runs whatever timers are due at `now`.
  void on_timer(base::nanos now, tcp_output& out);
  // The earliest time on_timer has work; 0 when no timer is armed.
  base::nanos next_timer() const;

  // Bytes to send: append, then call push().
  std::string& send_buffer() { return _sndbuf; }
  void push(base::nanos now, tcp_output& out) { transmit(now, out); }
  // Sends FIN after every buffered byte (shutdown of the sending side).
  void close(base::nanos now, tcp_output& out);
  // Forgets buffered bytes that were never sent (a close that need not flush).
  void drop_unsent();
  // Drops everything and sends RST.
  void abort(tcp_output& out);
  // Paused: in-order data is held (the window shrinks) instead of delivered.
  void pause_delivery() { _paused = true; }
  void resume_delivery(base::nanos now, tcp_output& out);

  tcp_state state() const { return _state; }
  std::size_t unsent_bytes() const;
  std::size_t unacked_bytes() const { return _sndbuf.size() - _snd_off; }
  std::uint32_t cwnd() const { return _cwnd; }
  base::nanos rto() const { return _rto; }
  std::uint64_t retransmits() const { return _retransmits; }

 private:
  void init_common(std::uint32_t iss, base::nanos now);
  void send_syn(bool with_ack, tcp_output& out);
  void send_ack(tcp_output& out);
  void send_rst(std::uint32_t seq, tcp_output& out);
  void transmit(base::nanos now, tcp_output& out);
  void emit_data(std::uint32_t seq, std::size_t len, bool with_fin, tcp_output& out);
  std::uint32_t retransmit_first(tcp_output& out);  // returns the sequence space it covered
  void process_ack(const tcp_header& h, std::size_t payload_len, base::nanos now, tcp_output& out);
  void process_payload(std::uint32_t seq, std::string_view p, bool fin, base::nanos now, tcp_output& out);
  void accept_fin(base::nanos now, tcp_output& out);
  void deliver_or_hold(std::string_view d, tcp_output& out);
  void pull_out_of_order(tcp_output& out);
  void enter_established(const tcp_header& h, std::uint32_t wnd, base::nanos now, tcp_output& out);
  void enter_closed(tcp_event e, tcp_output& out);
  void enter_time_wait(base::nanos now);
  void rtt_sample(base::nanos r);
  std::uint32_t rcv_window() const;
  std::uint16_t advertised_window() const;
  std::uint32_t eff_mss() const { return _peer_mss < _cfg.mss ? _peer_mss : _cfg.mss; }
  std::uint32_t data_end_seq() const { return _snd_una_data + std::uint32_t(_sndbuf.size() - _snd_off); }

  tcp_config _cfg;
  tcp_state _state = tcp_state::closed;
  // Send side. _sndbuf[_snd_off..] holds bytes from _snd_una_data on (unacked then unsent).
  std::string _sndbuf;
  std::size_t _snd_off = 0;
  std::uint32_t _iss = 0, _snd_una = 0, _snd_nxt = 0, _snd_max = 0, _snd_una_data = 0;
  std::uint32_t _snd_wnd = 0, _snd_wl1 = 0, _snd_wl2 = 0;
  std::uint8_t _snd_wscale = 0, _rcv_wscale = 0;
  std::uint16_t _peer_mss = 536;
  bool _fin_queued = false, _fin_sent = false;
  std::uint32_t _fin_seq = 0;
  // Congestion control (NewReno).
  std::uint32_t _cwnd = 0, _ssthresh = 0xffffffffu, _recover = 0;
  int _dupacks = 0;
  bool _in_recovery = false;
  // RTO (RFC 6298), one timed segment at a time (Karn).
  base::nanos _srtt = 0, _rttvar = 0, _rto = 0;
  bool _timing = false;
  std::uint32_t _rtt_seq = 0;
  base::nanos _rtt_start = 0;
  int _backoffs = 0;
  std::uint64_t _retransmits = 0;
  // Receive side.
  std::uint32_t _irs = 0, _rcv_nxt = 0;
  // Held out-of-order payload keyed by absolute stream offset (immune to sequence wrap).
  std::map<std::uint64_t, std::string> _ooo;
  std::uint64_t _rcv_abs = 0;  // stream offset of _rcv_nxt
  std::size_t _ooo_bytes = 0;
  bool _ooo_fin = false;
  std::uint32_t _ooo_fin_seq = 0;
  std::string _held;  // in-order bytes waiting while paused
  bool _paused = false;
  bool _fin_event_pending = false;  // peer FIN seen while data was still held
  int _unacked_segs = 0;
  // Timers (0 = off).
  base::nanos _rto_at = 0, _delack_at = 0, _persist_at = 0, _tw_at = 0;
  base::nanos _persist_backoff = 0;
};

}  // namespace net::tcp
