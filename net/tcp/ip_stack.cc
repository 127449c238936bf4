#include "net/tcp/ip_stack.h"

#include <arpa/inet.h>

#include <cstring>

namespace net::tcp {

struct ip_stack::conn_output final : tcp_output {
  ip_stack* s = nullptr;
  conn_entry* c = nullptr;
  void send(const tcp_header& h, std::string_view p) override;
  void deliver(std::string_view d) override;
  void event(tcp_event e) override;
};

struct ip_stack::conn_entry {
  std::uint64_t id = 0, tuple = 0;
  std::uint32_t peer_ip = 0;
  std::uint16_t peer_port = 0, local_port = 0;
  conn_output out;
  std::unique_ptr<tcp_conn> tcp;
  bool app_open = false;     // the handler knows this id
  bool app_closing = false, after_flush = true;
  bool resume = false, peer_fin = false, dead = false;
};

void ip_stack::conn_output::send(const tcp_header& h, std::string_view p) {
  tcp_header w = h;
  w.src_port = c->local_port;
  w.dst_port = c->peer_port;
  s->send_tcp(c->peer_ip, w, p);
}

void ip_stack::conn_output::deliver(std::string_view d) {
  if (c->app_open && !c->app_closing && s->_handler) s->_handler->on_data(c->id, d);
}

void ip_stack::conn_output::event(tcp_event e) {
  switch (e) {
    case tcp_event::established:
      // At once: the handshake's last ACK may carry data that is delivered next.
      c->app_open = true;
      if (s->_handler) s->_handler->on_open(c->id, c->peer_ip, c->peer_port);
      return;
    case tcp_event::peer_fin: c->peer_fin = true; break;
    case tcp_event::reset: case tcp_event::closed: c->dead = true; break;
  }
  s->_deferred.push_back(c->id);
}

ip_stack::ip_stack(stack_config cfg, frame_io& io) : _cfg(cfg), _io(io), _rng(cfg.isn_seed) {}
ip_stack::~ip_stack() = default;

void ip_stack::input(bytes frame, base::nanos now, bool hw_ip_ok, bool hw_l4_ok) {
  ++_stats.rx_frames;
  auto e = parse_ether(frame);
  if (!e) {
    ++_stats.dropped_bad;
    return;
  }
  if (e->dst != _cfg.mac && e->dst != kBroadcastMac) return;
  if (e->type == kEtherArp) {
    handle_arp(*e, now);
  } else if (e->type == kEtherIpv4) {
    handle_ipv4(*e, now, hw_ip_ok, hw_l4_ok);
  }
}

void ip_stack::learn(std::uint32_t ip, const mac_addr& mac) {
  if (ip == 0) return;
  auto [it, fresh] = _arp.try_emplace(ip, mac);
  if (!fresh) it->second = mac;
  _arp_asked.erase(ip);
}

void ip_stack::handle_arp(const ether_frame& e, base::nanos) {
  auto a = parse_arp(e.payload);
  if (!a) {
    ++_stats.dropped_bad;
    return;
  }
  learn(a->spa, a->sha);
  if (a->op != 1 || a->tpa != _cfg.ip) return;
  constexpr std::size_t len = 60;  // the Ethernet minimum, zero padded
  std::uint8_t* b = _io.alloc_frame(len);
  if (b == nullptr) {
    ++_stats.tx_no_buffer;
    return;
  }
  std::memset(b, 0, len);
  write_ether(b, a->sha, _cfg.mac, kEtherArp);
  arp_packet r;
  r.op = 2;
  r.sha = _cfg.mac;
  r.spa = _cfg.ip;
  r.tha = a->sha;
  r.tpa = a->spa;
  write_arp(b + kEtherHdr, r);
  _io.commit_frame();
  ++_stats.arp_replies;
  ++_stats.tx_frames;
}

void ip_stack::send_arp_request(std::uint32_t target) {
  constexpr std::size_t len = 60;
  std::uint8_t* b = _io.alloc_frame(len);
  if (b == nullptr) return;
  std::memset(b, 0, len);
  write_ether(b, kBroadcastMac, _cfg.mac, kEtherArp);
  arp_packet r;
  r.op = 1;
  r.sha = _cfg.mac;
  r.spa = _cfg.ip;
  r.tpa = target;
  write_arp(b + kEtherHdr, r);
  _io.commit_frame();
  ++_stats.tx_frames;
}

bool ip_stack::resolve(std::uint32_t dst_ip, mac_addr& mac) {
  const std::uint32_t hop = next_hop(dst_ip);
  auto it = _arp.find(hop);
  if (it != _arp.end()) {
    mac = it->second;
    return true;
  }
  ++_stats.no_route;
  // Ask at most once per poll turn that finds it missing; the answer is learnt in handle_arp.
  if (_arp_asked.emplace(hop, 0).second) send_arp_request(hop);
  return false;
}

void ip_stack::handle_ipv4(const ether_frame& e, base::nanos now, bool hw_ip_ok, bool hw_l4_ok) {
  ipv4_packet ip;
  switch (parse_ipv4(e.payload, ip, _cfg.verify_ip_checksum && !hw_ip_ok)) {
    case ipv4_verdict::ok: break;
    case ipv4_verdict::fragment: ++_stats.dropped_fragment; return;
    default: ++_stats.dropped_bad; return;
  }
  if (ip.dst != _cfg.ip) return;
  learn(next_hop(ip.src), e.src);
  if (ip.proto == kProtoTcp) {
    handle_tcp(ip, now, _cfg.verify_tcp_checksum && !hw_l4_ok);
    return;
  }
  if (ip.proto != kProtoIcmp || ip.payload.size() < 8 || ip.payload[0] != 8) return;
  std::string icmp(ip.payload.begin(), ip.payload.end());
  auto* p = reinterpret_cast<std::uint8_t*>(icmp.data());
  if (!icmp_echo_to_reply(p, icmp.size())) return;
  const std::size_t len = kEtherHdr + kIpv4Hdr + icmp.size();
  std::uint8_t* b = _io.alloc_frame(len);
  if (b == nullptr) return;
  write_ether(b, e.src, _cfg.mac, kEtherIpv4);
  write_ipv4(b + kEtherHdr, _cfg.ip, ip.src, kProtoIcmp, std::uint16_t(icmp.size()), _ip_id++);
  std::memcpy(b + kEtherHdr + kIpv4Hdr, icmp.data(), icmp.size());
  _io.commit_frame();
  ++_stats.icmp_echo;
  ++_stats.tx_frames;
}

bool ip_stack::send_tcp(std::uint32_t dst_ip, const tcp_header& h, std::string_view payload) {
  mac_addr mac;
  if (!resolve(dst_ip, mac)) return false;
  const std::size_t hl = tcp_header_len(h);
  const std::size_t len = kEtherHdr + kIpv4Hdr + hl + payload.size();
  std::uint8_t* b = _io.alloc_frame(len);
  if (b == nullptr) {
    ++_stats.tx_no_buffer;
    return false;
  }
  write_ether(b, mac, _cfg.mac, kEtherIpv4);
  write_ipv4(b + kEtherHdr, _cfg.ip, dst_ip, kProtoTcp, std::uint16_t(hl + payload.size()), _ip_id++);
  std::uint8_t* t = b + kEtherHdr + kIpv4Hdr;
  if (!payload.empty()) std::memcpy(t + hl, payload.data(), payload.size());
  if (_io.tx_checksum_offload()) {
    b[kEtherHdr + 10] = b[kEtherHdr + 11] = 0;  // the port fills the IPv4 checksum
    write_tcp_for_offload(t, h, _cfg.ip, dst_ip, payload.size());
    _io.commit_tcp_offload_frame();
  } else {
    write_tcp(t, h, _cfg.ip, dst_ip, payload.size());
    _io.commit_frame();
  }
  ++_stats.tx_frames;
  return true;
}

void ip_stack::send_rst_for(const ipv4_packet& ip, const tcp_segment& s) {
  if (s.h.flags & kRst) return;
  tcp_header r;
  r.src_port = s.h.dst_port;
  r.dst_port = s.h.src_port;
  if (s.h.flags & kAck) {
    r.seq = s.h.ack;
    r.flags = kRst;
  } else {
    r.ack = s.h.seq + std::uint32_t(s.payload.size()) + ((s.h.flags & kSyn) ? 1 : 0) + ((s.h.flags & kFin) ? 1 : 0);
    r.flags = kRst | kAck;
  }
  if (send_tcp(ip.src, r, {})) ++_stats.rst_sent;
}

void ip_stack::handle_tcp(const ipv4_packet& ip, base::nanos now, bool verify) {
  tcp_segment s;
  if (parse_tcp(ip.payload, ip.src, ip.dst, s, verify) != tcp_verdict::ok) {
    ++_stats.dropped_bad;
    return;
  }
  const std::uint64_t tuple = std::uint64_t(ip.src) << 32 | std::uint64_t(s.h.src_port) << 16 | s.h.dst_port;
  const std::string_view payload(reinterpret_cast<const char*>(s.payload.data()), s.payload.size());
  const bool bare_syn = (s.h.flags & (kSyn | kAck | kRst)) == kSyn;
  if (auto it = _by_tuple.find(tuple); it != _by_tuple.end()) {
    conn_entry& c = *_conns.at(it->second);
    const tcp_state st = c.tcp->state();
    if (!(bare_syn && (st == tcp_state::time_wait || st == tcp_state::closed))) {
      c.tcp->on_segment(s.h, payload, now, c.out);
      note_timer(*c.tcp);
      return;
    }
    // A new connection reusing a tuple in TIME_WAIT: the old one gives way.
    if (c.app_open && _handler) _handler->on_close(c.id);
    c.app_open = false;
    reap(c.id);
  }
  if (!bare_syn || !_listening.count(s.h.dst_port)) {
    send_rst_for(ip, s);
    return;
  }
  if (_conns.size() >= _cfg.max_connections) {  // silently: the peer retries later
    ++_stats.syn_dropped_full;
    return;
  }
  auto c = std::make_unique<conn_entry>();
  c->id = _next_id++;
  c->tuple = tuple;
  c->peer_ip = ip.src;
  c->peer_port = s.h.src_port;
  c->local_port = s.h.dst_port;
  c->out.s = this;
  c->out.c = c.get();
  conn_entry& ref = *c;
  _by_tuple.emplace(tuple, c->id);
  _conns.emplace(c->id, std::move(c));
  const std::uint32_t iss = _cfg.isn_source ? _cfg.isn_source() : std::uint32_t(_rng());
  ref.tcp = std::make_unique<tcp_conn>(_cfg.tcp, s.h, iss, now, ref.out);
  note_timer(*ref.tcp);
  ++_stats.accepted;
}

void ip_stack::note_timer(const tcp_conn& c) {
  const base::nanos t = c.next_timer();
  if (t != 0 && (_next_timer == 0 || t < _next_timer)) _next_timer = t;
}

void ip_stack::reap(std::uint64_t id) {
  auto it = _conns.find(id);
  if (it == _conns.end()) return;
  _by_tuple.erase(it->second->tuple);
  _conns.erase(it);
}

std::size_t ip_stack::poll(base::nanos now) {
  std::size_t work = 0;
  for (int round = 0; round < 4 && !_deferred.empty(); ++round) {
    std::vector<std::uint64_t> ids;
    ids.swap(_deferred);
    for (std::uint64_t id : ids) {
      auto it = _conns.find(id);
      if (it == _conns.end()) continue;
      conn_entry& c = *it->second;
      ++work;
      if (c.resume) {
        c.resume = false;
        if (c.app_open && !c.app_closing) c.tcp->resume_delivery(now, c.out);
      }
      if (c.app_open && (c.app_closing || c.peer_fin || c.dead)) {
        // nats-server closes on read EOF too; our FIN follows whatever is still buffered.
        c.app_open = false;
        if (!c.after_flush) c.tcp->drop_unsent();
        if (_handler) _handler->on_close(c.id);
        c.tcp->close(now, c.out);
        note_timer(*c.tcp);
      }
      if (c.dead) reap(id);
    }
  }
  if (_next_timer != 0 && now >= _next_timer) {
    _next_timer = 0;
    std::vector<std::uint64_t> dead;
    for (auto& [id, c] : _conns) {
      const base::nanos t = c->tcp->next_timer();
      if (t != 0 && t <= now) {
        c->tcp->on_timer(now, c->out);
        ++work;
      }
      note_timer(*c->tcp);
    }
  }
  return work;
}

std::string* ip_stack::send_buffer(std::uint64_t id) {
  auto it = _conns.find(id);
  if (it == _conns.end() || !it->second->app_open) return nullptr;
  return &it->second->tcp->send_buffer();
}

void ip_stack::push(std::uint64_t id, base::nanos now) {
  auto it = _conns.find(id);
  if (it == _conns.end()) return;
  it->second->tcp->push(now, it->second->out);
  note_timer(*it->second->tcp);
}

std::size_t ip_stack::unsent_bytes(std::uint64_t id) const {
  auto it = _conns.find(id);
  return it == _conns.end() ? 0 : it->second->tcp->unsent_bytes();
}

void ip_stack::pause(std::uint64_t id) {
  auto it = _conns.find(id);
  if (it != _conns.end()) it->second->tcp->pause_delivery();
}

void ip_stack::resume(std::uint64_t id) {
  auto it = _conns.find(id);
  if (it == _conns.end()) return;
  it->second->resume = true;
  _deferred.push_back(id);
}

void ip_stack::close(std::uint64_t id, bool after_flush) {
  auto it = _conns.find(id);
  if (it == _conns.end() || !it->second->app_open || it->second->app_closing) return;
  it->second->app_closing = true;
  it->second->after_flush = after_flush;
  _deferred.push_back(id);
}

void ip_stack::abort_all() {
  _handler = nullptr;
  _listening.clear();
  for (auto& [id, c] : _conns)
    if (c->tcp) c->tcp->abort(c->out);
  _conns.clear();
  _by_tuple.clear();
  _deferred.clear();
}

std::string ipv4_to_string(std::uint32_t ip) {
  char buf[INET_ADDRSTRLEN];
  const std::uint32_t be = htonl(ip);
  inet_ntop(AF_INET, &be, buf, sizeof buf);
  return buf;
}

bool parse_ipv4_addr(const std::string& s, std::uint32_t& out) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  out = ntohl(a.s_addr);
  return true;
}

}  // namespace net::tcp
