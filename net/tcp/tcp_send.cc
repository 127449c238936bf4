// The send side of tcp_conn: segmentation under min(peer window, cwnd), ACK processing with
// NewReno (RFC 5681 + 6582), RTO per RFC 6298, zero-window probes, and the timers.
#include <algorithm>

#include "net/tcp/tcp_conn.h"

namespace net::tcp {

std::size_t tcp_conn::unsent_bytes() const {
  const std::uint32_t end = data_end_seq();
  return seq_gt(end, _snd_nxt) ? std::size_t(end - _snd_nxt) : 0;
}

void tcp_conn::emit_data(std::uint32_t seq, std::size_t len, bool with_fin, tcp_output& out) {
  tcp_header h;
  h.seq = seq;
  h.ack = _rcv_nxt;
  h.flags = std::uint8_t(kAck | (len ? kPsh : 0) | (with_fin ? kFin : 0));
  h.window = advertised_window();
  _unacked_segs = 0;  // every segment carries our ACK
  _delack_at = 0;
  if (with_fin) _fin_sent = true;
  const std::size_t off = _snd_off + std::size_t(seq - _snd_una_data);
  out.send(h, std::string_view(_sndbuf).substr(off, len));
}

void tcp_conn::transmit(base::nanos now, tcp_output& out) {
  switch (_state) {
    case tcp_state::established: case tcp_state::close_wait: case tcp_state::fin_wait_1:
    case tcp_state::closing: case tcp_state::last_ack: break;
    default: return;
  }
  const std::uint32_t mss = eff_mss();
  for (;;) {
    const std::uint32_t flight = _snd_nxt - _snd_una;
    const std::uint32_t wnd = std::min(_snd_wnd, _cwnd);
    const std::uint32_t room = wnd > flight ? wnd - flight : 0;
    const std::uint32_t end = data_end_seq();
    const std::uint32_t avail = seq_gt(end, _snd_nxt) ? end - _snd_nxt : 0;
    const std::uint32_t seq = _snd_nxt;
    std::uint32_t len = 0;
    bool fin = false;
    if (avail > 0) {
      len = std::min({avail, mss, room});
      if (len == 0) break;
      fin = _fin_queued && seq + len == _fin_seq;
    } else if (_fin_queued && _snd_nxt == _fin_seq) {
      fin = true;  // a bare FIN needs no window
    } else {
      break;
    }
    emit_data(seq, len, fin, out);
    _snd_nxt = seq + len + (fin ? 1 : 0);
    if (seq_ge(seq, _snd_max) && !_timing && len > 0) {  // only new data is timed (Karn)
      _timing = true;
      _rtt_seq = _snd_nxt;
      _rtt_start = now;
    }
    if (seq_gt(_snd_nxt, _snd_max)) _snd_max = _snd_nxt;
    if (_rto_at == 0) _rto_at = now + _rto;
  }
  // Zero window with data waiting and nothing in flight: only a probe will learn when it opens.
  if (_snd_wnd == 0 && unsent_bytes() > 0 && _snd_una == _snd_max && _persist_at == 0) {
    if (_persist_backoff == 0) _persist_backoff = _rto;
    _persist_at = now + _persist_backoff;
  }
}

std::uint32_t tcp_conn::retransmit_first(tcp_output& out) {
  ++_retransmits;
  _timing = false;  // Karn: never time a retransmitted segment
  if (_state == tcp_state::syn_sent || _state == tcp_state::syn_rcvd) {
    send_syn(_state == tcp_state::syn_rcvd, out);
    return 1;
  }
  const std::uint32_t end = data_end_seq();
  if (seq_lt(_snd_una, end)) {
    const std::uint32_t len = std::min({end - _snd_una, eff_mss(), std::max<std::uint32_t>(_snd_max - _snd_una, 1)});
    const bool fin = _fin_sent && _snd_una + len == _fin_seq;
    emit_data(_snd_una, len, fin, out);
    return len + (fin ? 1 : 0);
  }
  if (_fin_sent) {
    emit_data(_fin_seq, 0, true, out);
    return 1;
  }
  return 0;
}

void tcp_conn::rtt_sample(base::nanos r) {
  if (r <= 0) r = 1;
  if (_srtt == 0) {
    _srtt = r;
    _rttvar = r / 2;
  } else {
    const base::nanos err = _srtt > r ? _srtt - r : r - _srtt;
    _rttvar = (3 * _rttvar + err) / 4;
    _srtt = (7 * _srtt + r) / 8;
  }
  _rto = std::clamp(_srtt + std::max<base::nanos>(base::kMilli, 4 * _rttvar), _cfg.rto_min, _cfg.rto_max);
}

void tcp_conn::process_ack(const tcp_header& h, std::size_t payload_len, base::nanos now, tcp_output& out) {
  const std::uint32_t ack = h.ack;
  const std::uint32_t mss = eff_mss();
  const std::uint32_t new_wnd = std::uint32_t(h.window) << _snd_wscale;
  if (seq_gt(ack, _snd_max)) {  // acknowledges something never sent
    send_ack(out);
    return;
  }
  if (seq_gt(ack, _snd_una)) {
    const std::uint32_t acked = ack - _snd_una;
    if (seq_gt(ack, _snd_nxt)) _snd_nxt = ack;
    const std::uint32_t end = data_end_seq();
    const std::uint32_t data_hi = seq_lt(ack, end) ? ack : end;
    if (seq_gt(data_hi, _snd_una_data)) {
      const std::uint32_t n = data_hi - _snd_una_data;
      _snd_off += n;
      _snd_una_data = data_hi;
      if (_snd_off == _sndbuf.size()) {
        _sndbuf.clear();
        _snd_off = 0;
      } else if (_snd_off >= 65536 && _snd_off * 2 >= _sndbuf.size()) {  // amortised compaction
        _sndbuf.erase(0, _snd_off);
        _snd_off = 0;
      }
    }
    const bool fin_acked = _fin_sent && seq_gt(ack, _fin_seq);
    _snd_una = ack;
    if (_timing && seq_ge(ack, _rtt_seq)) {
      rtt_sample(now - _rtt_start);
      _timing = false;
    }
    _backoffs = 0;
    if (_in_recovery) {
      if (seq_ge(ack, _recover)) {  // full ACK: leave fast recovery
        _in_recovery = false;
        _cwnd = std::min(_ssthresh, (_snd_max - _snd_una) + mss);
      } else {  // partial ACK: the next hole is lost too
        retransmit_first(out);
        _cwnd = _cwnd > acked ? _cwnd - acked + mss : mss;
        _rto_at = now + _rto;
      }
    } else if (_cwnd < _ssthresh) {
      _cwnd += std::min(acked, mss);
    } else {
      _cwnd += std::max<std::uint32_t>(1, mss * mss / _cwnd);
    }
    _dupacks = 0;
    _rto_at = _snd_una == _snd_max ? 0 : now + _rto;
    if (fin_acked) {
      if (_state == tcp_state::fin_wait_1) {
        _state = tcp_state::fin_wait_2;
      } else if (_state == tcp_state::closing) {
        enter_time_wait(now);
      } else if (_state == tcp_state::last_ack) {
        enter_closed(tcp_event::closed, out);
        return;
      }
    }
  } else if (ack == _snd_una && payload_len == 0 && !(h.flags & kFin) && new_wnd == _snd_wnd &&
             _snd_una != _snd_max) {
    ++_dupacks;
    if (_dupacks == 3 && !_in_recovery && seq_ge(ack, _recover)) {
      const std::uint32_t flight = _snd_max - _snd_una;
      _ssthresh = std::max(flight / 2, 2 * mss);
      _recover = _snd_max;
      retransmit_first(out);
      _cwnd = _ssthresh + 3 * mss;
      _in_recovery = true;
    } else if (_in_recovery) {
      _cwnd += mss;  // each dup ACK means a segment left the network
    }
  }
  if (seq_lt(_snd_wl1, h.seq) || (_snd_wl1 == h.seq && seq_le(_snd_wl2, ack))) {
    _snd_wnd = new_wnd;
    _snd_wl1 = h.seq;
    _snd_wl2 = ack;
    if (_snd_wnd > 0) {
      _persist_at = 0;
      _persist_backoff = 0;
    }
  }
}

void tcp_conn::close(base::nanos now, tcp_output& out) {
  switch (_state) {
    case tcp_state::established: _state = tcp_state::fin_wait_1; break;
    case tcp_state::close_wait: _state = tcp_state::last_ack; break;
    case tcp_state::syn_rcvd: case tcp_state::syn_sent: abort(out); return;
    default: return;
  }
  _fin_queued = true;
  _fin_seq = data_end_seq();
  transmit(now, out);
}

void tcp_conn::drop_unsent() {
  if (_fin_queued) return;
  const std::uint32_t sent = seq_gt(_snd_max, _snd_una_data) ? _snd_max - _snd_una_data : 0;
  if (_snd_off + sent < _sndbuf.size()) _sndbuf.resize(_snd_off + sent);
}

void tcp_conn::abort(tcp_output& out) {
  if (_state == tcp_state::closed) return;
  if (_state != tcp_state::syn_sent && _state != tcp_state::time_wait) send_rst(_snd_nxt, out);
  _sndbuf.clear();
  _snd_off = 0;
  enter_closed(tcp_event::closed, out);
}

base::nanos tcp_conn::next_timer() const {
  base::nanos t = 0;
  for (base::nanos x : {_rto_at, _delack_at, _persist_at, _tw_at})
    if (x != 0 && (t == 0 || x < t)) t = x;
  return t;
}

void tcp_conn::on_timer(base::nanos now, tcp_output& out) {
  if (_tw_at != 0 && now >= _tw_at) {
    _tw_at = 0;
    enter_closed(tcp_event::closed, out);
    return;
  }
  if (_delack_at != 0 && now >= _delack_at) send_ack(out);
  if (_rto_at != 0 && now >= _rto_at) {
    if (_snd_una == _snd_max) {
      _rto_at = 0;
    } else if (++_backoffs > (_state == tcp_state::syn_rcvd || _state == tcp_state::syn_sent
                                  ? _cfg.max_syn_retransmits
                                  : _cfg.max_retransmits)) {
      send_rst(_snd_nxt, out);
      enter_closed(tcp_event::reset, out);
      return;
    } else {
      const std::uint32_t mss = eff_mss();
      const std::uint32_t flight = _snd_max - _snd_una;
      if (_state != tcp_state::syn_sent && _state != tcp_state::syn_rcvd) {
        _ssthresh = std::max(flight / 2, 2 * mss);
        _cwnd = mss;
      }
      _in_recovery = false;
      _dupacks = 0;
      _recover = _snd_max;  // RFC 6582 4.1: no fast retransmit for what was sent before
      _rto = std::min(_rto * 2, _cfg.rto_max);
      _snd_nxt = _snd_una + retransmit_first(out);  // go back: resend from the first hole
      _rto_at = now + _rto;
    }
  }
  if (_persist_at != 0 && now >= _persist_at) {
    _persist_at = 0;
    if (_snd_wnd == 0 && unsent_bytes() > 0) {
      tcp_header h;  // an old sequence number: the peer answers with its current window
      h.seq = _snd_una - 1;
      h.ack = _rcv_nxt;
      h.flags = kAck;
      h.window = advertised_window();
      out.send(h, {});
      _persist_backoff = std::min(_persist_backoff * 2, _cfg.rto_max);
      _persist_at = now + _persist_backoff;
    } else {
      transmit(now, out);
    }
  }
}

}  // namespace net::tcp
