// Opening, the segment-arrival procedure (RFC 793 3.9 as amended by RFC 1122/5681) and the
// receive side. The send side, ACK processing and timers are in tcp_send.cc.
#include "net/tcp/tcp_conn.h"

#include <algorithm>

namespace net::tcp {

const char* state_name(tcp_state s) {
  switch (s) {
    case tcp_state::syn_sent: return "SYN_SENT";
    case tcp_state::syn_rcvd: return "SYN_RCVD";
    case tcp_state::established: return "ESTABLISHED";
    case tcp_state::fin_wait_1: return "FIN_WAIT_1";
    case tcp_state::fin_wait_2: return "FIN_WAIT_2";
    case tcp_state::closing: return "CLOSING";
    case tcp_state::time_wait: return "TIME_WAIT";
    case tcp_state::close_wait: return "CLOSE_WAIT";
    case tcp_state::last_ack: return "LAST_ACK";
    case tcp_state::closed: return "CLOSED";
  }
  return "?";
}

void tcp_conn::init_common(std::uint32_t iss, base::nanos now) {
  _iss = iss;
  _snd_una = iss;
  _snd_nxt = _snd_max = _snd_una_data = iss + 1;
  _recover = iss;
  _rto = _cfg.rto_initial;
  _rto_at = now + _rto;
  _timing = true;  // the SYN gives the first RTT sample
  _rtt_seq = iss + 1;
  _rtt_start = now;
}

tcp_conn::tcp_conn(const tcp_config& cfg, const tcp_header& syn, std::uint32_t iss, base::nanos now, tcp_output& out)
    : _cfg(cfg) {
  _state = tcp_state::syn_rcvd;
  _irs = syn.seq;
  _rcv_nxt = syn.seq + 1;
  _peer_mss = syn.mss.value_or(536);
  if (syn.wscale) {  // scaling is on only when both sides offer it (RFC 7323 2.2)
    _snd_wscale = *syn.wscale;
    _rcv_wscale = cfg.wscale;
  }
  _snd_wnd = syn.window;
  _snd_wl1 = syn.seq;
  init_common(iss, now);
  _cwnd = 10 * eff_mss();
  send_syn(true, out);
}

tcp_conn::tcp_conn(const tcp_config& cfg, std::uint32_t iss, base::nanos now, tcp_output& out) : _cfg(cfg) {
  _state = tcp_state::syn_sent;
  _rcv_wscale = cfg.wscale;
  init_common(iss, now);
  _cwnd = 10 * eff_mss();
  send_syn(false, out);
}

void tcp_conn::send_syn(bool with_ack, tcp_output& out) {
  tcp_header h;
  h.seq = _iss;
  h.ack = with_ack ? _rcv_nxt : 0;
  h.flags = std::uint8_t(kSyn | (with_ack ? kAck : 0));
  h.window = std::uint16_t(std::min<std::uint32_t>(rcv_window(), 0xffff));  // never scaled in a SYN
  h.mss = _cfg.mss;
  if (!with_ack || _rcv_wscale) h.wscale = _cfg.wscale;
  out.send(h, {});
}

void tcp_conn::send_ack(tcp_output& out) {
  tcp_header h;
  h.seq = _snd_nxt;
  h.ack = _rcv_nxt;
  h.flags = kAck;
  h.window = advertised_window();
  _unacked_segs = 0;
  _delack_at = 0;
  out.send(h, {});
}

void tcp_conn::send_rst(std::uint32_t seq, tcp_output& out) {
  tcp_header h;
  h.seq = seq;
  h.ack = _rcv_nxt;
  h.flags = kRst | kAck;
  out.send(h, {});
}

std::uint32_t tcp_conn::rcv_window() const {
  const std::size_t used = _held.size() + _ooo_bytes;
  std::size_t w = used < _cfg.rcv_buf ? _cfg.rcv_buf - used : 0;
  w = std::min<std::size_t>(w, std::size_t(0xffff) << _rcv_wscale);
  return std::uint32_t(w);
}

std::uint16_t tcp_conn::advertised_window() const {
  return std::uint16_t(std::min<std::uint32_t>(rcv_window() >> _rcv_wscale, 0xffff));
}

// Our SYN is acknowledged (by the peer's SYN-ACK, or by the last ACK of its handshake): the
// send window starts at `wnd` and the handshake's RTT sample is taken.
void tcp_conn::enter_established(const tcp_header& h, std::uint32_t wnd, base::nanos now, tcp_output& out) {
  _snd_una = h.ack;
  _snd_wnd = wnd;
  _snd_wl1 = h.seq;
  _snd_wl2 = h.ack;
  if (_timing) rtt_sample(now - _rtt_start);
  _timing = false;
  _rto_at = 0;
  _backoffs = 0;
  _state = tcp_state::established;
  out.event(tcp_event::established);
}

void tcp_conn::enter_closed(tcp_event e, tcp_output& out) {
  _state = tcp_state::closed;
  _rto_at = _delack_at = _persist_at = _tw_at = 0;
  out.event(e);
}

void tcp_conn::enter_time_wait(base::nanos now) {
  _state = tcp_state::time_wait;
  _rto_at = _delack_at = _persist_at = 0;
  _tw_at = now + _cfg.time_wait;
}

void tcp_conn::on_segment(const tcp_header& h, std::string_view payload, base::nanos now, tcp_output& out) {
  if (_state == tcp_state::closed) return;
  const bool syn = h.flags & kSyn, fin = h.flags & kFin, rst = h.flags & kRst, ack = h.flags & kAck;

  if (_state == tcp_state::syn_sent) {
    const bool ack_ok = ack && seq_gt(h.ack, _iss) && seq_le(h.ack, _snd_max);
    if (ack && !ack_ok) {
      if (!rst) send_rst(h.ack, out);
      return;
    }
    if (rst) {
      if (ack_ok) enter_closed(tcp_event::reset, out);
      return;
    }
    if (!syn || !ack_ok) return;  // simultaneous open is not supported
    _irs = h.seq;
    _rcv_nxt = h.seq + 1;
    _peer_mss = h.mss.value_or(536);
    if (h.wscale) {
      _snd_wscale = *h.wscale;
    } else {
      _rcv_wscale = 0;
    }
    _cwnd = 10 * eff_mss();
    enter_established(h, h.window, now, out);  // a SYN-ACK's window is never scaled
    send_ack(out);
    transmit(now, out);
    return;
  }

  if (_state == tcp_state::syn_rcvd && syn && !ack && h.seq == _irs) {  // our SYN-ACK was lost
    send_syn(true, out);
    return;
  }
  if (_state == tcp_state::time_wait) {
    if (rst) return;  // RFC 1337: do not let a RST end TIME_WAIT early
    if (fin) _tw_at = now + _cfg.time_wait;
    send_ack(out);
    return;
  }

  // Acceptability (RFC 793 p.69).
  const std::uint32_t seg_len = std::uint32_t(payload.size()) + (syn ? 1 : 0) + (fin ? 1 : 0);
  const std::uint32_t wnd = rcv_window();
  bool acceptable;
  if (seg_len == 0) {
    acceptable = wnd == 0 ? h.seq == _rcv_nxt : (seq_ge(h.seq, _rcv_nxt) && seq_lt(h.seq, _rcv_nxt + wnd));
    if (h.seq == _rcv_nxt) acceptable = true;
  } else if (wnd == 0) {
    acceptable = false;
  } else {
    const std::uint32_t last = h.seq + seg_len - 1;
    acceptable = (seq_ge(h.seq, _rcv_nxt) && seq_lt(h.seq, _rcv_nxt + wnd)) ||
                 (seq_ge(last, _rcv_nxt) && seq_lt(last, _rcv_nxt + wnd));
  }
  if (!acceptable) {
    if (rst) return;
    // Still take the ACK field (as BSD does): after a go-back retransmission the peer's
    // pure ACKs carry an old sequence number but a newer acknowledgement.
    if (ack && _state != tcp_state::syn_rcvd) {
      process_ack(h, payload.size(), now, out);
      if (_state == tcp_state::closed || _state == tcp_state::time_wait) return;
    }
    send_ack(out);  // duplicates and window probes get our current ACK
    transmit(now, out);
    return;
  }
  if (rst) {
    enter_closed(tcp_event::reset, out);
    return;
  }
  if (syn) {  // a SYN inside a synchronized connection: challenge ACK (RFC 5961 4)
    send_ack(out);
    return;
  }
  if (!ack) return;

  if (_state == tcp_state::syn_rcvd) {
    if (!(seq_gt(h.ack, _snd_una) && seq_le(h.ack, _snd_max))) {
      send_rst(h.ack, out);
      return;
    }
    enter_established(h, std::uint32_t(h.window) << _snd_wscale, now, out);
    if (_state == tcp_state::closed) return;
  } else {
    process_ack(h, payload.size(), now, out);
    if (_state == tcp_state::closed || _state == tcp_state::time_wait) {
      if (_state == tcp_state::time_wait && fin) send_ack(out);
      return;
    }
  }
  process_payload(h.seq, payload, fin, now, out);
  if (_state != tcp_state::closed) transmit(now, out);
}

void tcp_conn::process_payload(std::uint32_t seq, std::string_view p, bool fin, base::nanos now, tcp_output& out) {
  if (_state != tcp_state::established && _state != tcp_state::fin_wait_1 && _state != tcp_state::fin_wait_2)
    return;  // the peer already sent its FIN: anything more is noise
  if (seq_lt(seq, _rcv_nxt)) {
    const std::uint32_t cut = _rcv_nxt - seq;
    if (cut > p.size()) {  // everything, and a FIN if any, was seen before
      send_ack(out);
      return;
    }
    p.remove_prefix(cut);
    seq = _rcv_nxt;
  }
  const std::uint32_t wnd = rcv_window();
  const std::uint32_t offset = seq - _rcv_nxt;
  const std::uint32_t room = wnd > offset ? wnd - offset : 0;
  if (p.size() > room) {
    p = p.substr(0, room);
    fin = false;
  }
  if (p.empty() && !fin) return;

  if (seq != _rcv_nxt) {  // a hole before it: hold it and tell the sender at once (dup ACK)
    if (!p.empty()) {
      const std::uint64_t abs = _rcv_abs + offset;
      auto it = _ooo.find(abs);
      if (it == _ooo.end() || it->second.size() < p.size()) {
        if (it != _ooo.end()) _ooo_bytes -= it->second.size();
        _ooo[abs] = std::string(p);
        _ooo_bytes += p.size();
      }
    }
    if (fin) {
      _ooo_fin = true;
      _ooo_fin_seq = seq + std::uint32_t(p.size());
    }
    send_ack(out);
    return;
  }

  const bool filled_hole = !_ooo.empty();
  if (!p.empty()) {
    _rcv_nxt += std::uint32_t(p.size());
    _rcv_abs += p.size();
    deliver_or_hold(p, out);
    if (_state == tcp_state::closed) return;
  }
  if (filled_hole) pull_out_of_order(out);
  if (fin || (_ooo_fin && _ooo_fin_seq == _rcv_nxt)) {
    accept_fin(now, out);
    return;
  }
  if (filled_hole) {
    send_ack(out);
  } else if (++_unacked_segs >= 2) {  // RFC 5681 4.2: ACK at least every second segment
    send_ack(out);
  } else if (_delack_at == 0) {
    _delack_at = now + _cfg.delayed_ack;
  }
}

void tcp_conn::pull_out_of_order(tcp_output& out) {
  while (!_ooo.empty()) {
    auto it = _ooo.begin();
    if (it->first > _rcv_abs) break;
    std::string data = std::move(it->second);
    const std::uint64_t start = it->first;
    _ooo_bytes -= data.size();
    _ooo.erase(it);
    if (start + data.size() <= _rcv_abs) continue;  // wholly duplicate
    const std::size_t skip = std::size_t(_rcv_abs - start);
    const std::string_view fresh = std::string_view(data).substr(skip);
    _rcv_nxt += std::uint32_t(fresh.size());
    _rcv_abs += fresh.size();
    deliver_or_hold(fresh, out);
  }
}

void tcp_conn::deliver_or_hold(std::string_view d, tcp_output& out) {
  if (_paused || !_held.empty()) {
    _held.append(d);
  } else {
    out.deliver(d);
  }
}

void tcp_conn::accept_fin(base::nanos now, tcp_output& out) {
  _rcv_nxt += 1;
  _ooo_fin = false;
  send_ack(out);
  switch (_state) {
    case tcp_state::established: _state = tcp_state::close_wait; break;
    case tcp_state::fin_wait_1: _state = tcp_state::closing; break;
    case tcp_state::fin_wait_2: enter_time_wait(now); break;
    default: break;
  }
  if (_held.empty()) {
    out.event(tcp_event::peer_fin);
  } else {
    _fin_event_pending = true;
  }
}

void tcp_conn::resume_delivery(base::nanos, tcp_output& out) {
  _paused = false;
  if (_held.empty()) return;
  const std::string held = std::move(_held);
  _held.clear();
  out.deliver(held);
  if (_state == tcp_state::closed) return;
  send_ack(out);  // the window just reopened
  if (_fin_event_pending && _held.empty()) {
    _fin_event_pending = false;
    out.event(tcp_event::peer_fin);
  }
}

}  // namespace net::tcp
