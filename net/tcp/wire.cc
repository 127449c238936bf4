#include "net/tcp/wire.h"

#include <cstring>

namespace net::tcp {
namespace {
std::uint16_t rd16(const std::uint8_t* p) { return std::uint16_t(p[0] << 8 | p[1]); }
std::uint32_t rd32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}
void wr16(std::uint8_t* p, std::uint16_t v) {
  p[0] = std::uint8_t(v >> 8);
  p[1] = std::uint8_t(v);
}
void wr32(std::uint8_t* p, std::uint32_t v) {
  wr16(p, std::uint16_t(v >> 16));
  wr16(p + 2, std::uint16_t(v));
}
}  // namespace

std::uint32_t sum16(bytes b, std::uint32_t seed) {
  std::uint64_t s = seed;
  std::size_t i = 0;
  for (; i + 1 < b.size(); i += 2) s += std::uint32_t(b[i] << 8 | b[i + 1]);
  if (i < b.size()) s += std::uint32_t(b[i]) << 8;
  while (s >> 32) s = (s & 0xffffffffu) + (s >> 32);
  return std::uint32_t(s);
}

std::uint16_t fold_checksum(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return std::uint16_t(~sum);
}

std::uint32_t pseudo_header_sum(std::uint32_t src, std::uint32_t dst, std::uint8_t proto, std::uint16_t len) {
  std::uint64_t s = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + len;
  return std::uint32_t(s);
}

std::optional<ether_frame> parse_ether(bytes f) {
  if (f.size() < kEtherHdr) return std::nullopt;
  ether_frame e;
  std::memcpy(e.dst.data(), f.data(), 6);
  std::memcpy(e.src.data(), f.data() + 6, 6);
  e.type = rd16(f.data() + 12);
  e.payload = f.subspan(kEtherHdr);
  return e;
}

void write_ether(std::uint8_t* out, const mac_addr& dst, const mac_addr& src, std::uint16_t type) {
  std::memcpy(out, dst.data(), 6);
  std::memcpy(out + 6, src.data(), 6);
  wr16(out + 12, type);
}

std::optional<arp_packet> parse_arp(bytes b) {
  // Ethernet/IPv4 only: htype 1, ptype 0x0800, hlen 6, plen 4.
  if (b.size() < kArpLen || rd16(b.data()) != 1 || rd16(b.data() + 2) != kEtherIpv4 || b[4] != 6 || b[5] != 4)
    return std::nullopt;
  arp_packet a;
  a.op = rd16(b.data() + 6);
  std::memcpy(a.sha.data(), b.data() + 8, 6);
  a.spa = rd32(b.data() + 14);
  std::memcpy(a.tha.data(), b.data() + 18, 6);
  a.tpa = rd32(b.data() + 24);
  return a;
}

void write_arp(std::uint8_t* out, const arp_packet& a) {
  wr16(out, 1);
  wr16(out + 2, kEtherIpv4);
  out[4] = 6;
  out[5] = 4;
  wr16(out + 6, a.op);
  std::memcpy(out + 8, a.sha.data(), 6);
  wr32(out + 14, a.spa);
  std::memcpy(out + 18, a.tha.data(), 6);
  wr32(out + 24, a.tpa);
}

ipv4_verdict parse_ipv4(bytes b, ipv4_packet& out, bool verify_checksum) {
  if (b.size() < kIpv4Hdr || (b[0] >> 4) != 4) return ipv4_verdict::malformed;
  const std::size_t ihl = std::size_t(b[0] & 0xf) * 4;
  const std::size_t total = rd16(b.data() + 2);
  if (ihl < kIpv4Hdr || total < ihl || total > b.size()) return ipv4_verdict::malformed;
  if (verify_checksum && fold_checksum(sum16(b.first(ihl))) != 0) return ipv4_verdict::bad_checksum;
  const std::uint16_t frag = rd16(b.data() + 6);
  if ((frag & 0x2000) || (frag & 0x1fff)) return ipv4_verdict::fragment;  // MF or an offset
  out.ttl = b[8];
  out.proto = b[9];
  out.src = rd32(b.data() + 12);
  out.dst = rd32(b.data() + 16);
  out.payload = b.subspan(ihl, total - ihl);
  return ipv4_verdict::ok;
}

void write_ipv4(std::uint8_t* out, std::uint32_t src, std::uint32_t dst, std::uint8_t proto,
                std::uint16_t payload_len, std::uint16_t id) {
  out[0] = 0x45;
  out[1] = 0;
  wr16(out + 2, std::uint16_t(kIpv4Hdr + payload_len));
  wr16(out + 4, id);
  wr16(out + 6, 0x4000);  // DF
  out[8] = 64;
  out[9] = proto;
  wr16(out + 10, 0);
  wr32(out + 12, src);
  wr32(out + 16, dst);
  wr16(out + 10, fold_checksum(sum16(bytes(out, kIpv4Hdr))));
}

bool icmp_echo_to_reply(std::uint8_t* icmp, std::size_t len) {
  if (len < 8 || icmp[0] != 8 || icmp[1] != 0) return false;
  if (fold_checksum(sum16(bytes(icmp, len))) != 0) return false;
  icmp[0] = 0;
  wr16(icmp + 2, 0);
  wr16(icmp + 2, fold_checksum(sum16(bytes(icmp, len))));
  return true;
}

tcp_verdict parse_tcp(bytes b, std::uint32_t src_ip, std::uint32_t dst_ip, tcp_segment& out, bool verify_checksum) {
  if (b.size() < kTcpHdr || b.size() > 0xffff) return tcp_verdict::malformed;
  const std::size_t hl = std::size_t(b[12] >> 4) * 4;
  if (hl < kTcpHdr || hl > b.size()) return tcp_verdict::malformed;
  if (verify_checksum &&
      fold_checksum(sum16(b, pseudo_header_sum(src_ip, dst_ip, kProtoTcp, std::uint16_t(b.size())))) != 0)
    return tcp_verdict::bad_checksum;
  tcp_header& h = out.h;
  h = tcp_header{};
  h.src_port = rd16(b.data());
  h.dst_port = rd16(b.data() + 2);
  h.seq = rd32(b.data() + 4);
  h.ack = rd32(b.data() + 8);
  h.flags = b[13] & 0x3f;
  h.window = rd16(b.data() + 14);
  // Options: kind 0 ends, 1 pads; the rest carry a length we must respect.
  std::size_t i = kTcpHdr;
  while (i < hl) {
    const std::uint8_t kind = b[i];
    if (kind == 0) break;
    if (kind == 1) {
      ++i;
      continue;
    }
    if (i + 1 >= hl) return tcp_verdict::malformed;
    const std::size_t olen = b[i + 1];
    if (olen < 2 || i + olen > hl) return tcp_verdict::malformed;
    if (kind == 2 && olen == 4) h.mss = rd16(b.data() + i + 2);
    if (kind == 3 && olen == 3) h.wscale = b[i + 2] > 14 ? std::uint8_t(14) : b[i + 2];  // RFC 7323 cap
    i += olen;
  }
  out.payload = b.subspan(hl);
  return tcp_verdict::ok;
}

std::size_t tcp_header_len(const tcp_header& h) {
  std::size_t n = kTcpHdr;
  if (h.mss) n += 4;
  if (h.wscale) n += 4;  // NOP + 3-byte option
  return n;
}

namespace {
void write_tcp_header(std::uint8_t* out, const tcp_header& h) {
  const std::size_t hl = tcp_header_len(h);
  wr16(out, h.src_port);
  wr16(out + 2, h.dst_port);
  wr32(out + 4, h.seq);
  wr32(out + 8, h.ack);
  out[12] = std::uint8_t((hl / 4) << 4);
  out[13] = h.flags;
  wr16(out + 14, h.window);
  wr16(out + 16, 0);
  wr16(out + 18, 0);
  std::uint8_t* o = out + kTcpHdr;
  if (h.mss) {
    o[0] = 2;
    o[1] = 4;
    wr16(o + 2, *h.mss);
    o += 4;
  }
  if (h.wscale) {
    o[0] = 1;
    o[1] = 3;
    o[2] = 3;
    o[3] = *h.wscale;
  }
}
}  // namespace

void write_tcp(std::uint8_t* out, const tcp_header& h, std::uint32_t src_ip, std::uint32_t dst_ip,
               std::size_t payload_len) {
  write_tcp_header(out, h);
  const std::size_t len = tcp_header_len(h) + payload_len;
  const std::uint32_t ps = pseudo_header_sum(src_ip, dst_ip, kProtoTcp, std::uint16_t(len));
  wr16(out + 16, fold_checksum(sum16(bytes(out, len), ps)));
}

void write_tcp_for_offload(std::uint8_t* out, const tcp_header& h, std::uint32_t src_ip, std::uint32_t dst_ip,
                           std::size_t payload_len) {
  write_tcp_header(out, h);
  const std::size_t len = tcp_header_len(h) + payload_len;
  wr16(out + 16, std::uint16_t(~fold_checksum(pseudo_header_sum(src_ip, dst_ip, kProtoTcp, std::uint16_t(len)))));
}

}  // namespace net::tcp
