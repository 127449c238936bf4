// Wire formats of the user-space stack: checksums, Ethernet/ARP/IPv4/ICMP/TCP round trips,
// and the malformed inputs the parser must refuse.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "net/tcp/wire.h"

using namespace net::tcp;

namespace {
constexpr std::uint32_t kA = 0x0a000001, kB = 0x0a000002;  // 10.0.0.1, 10.0.0.2
}

TEST(TcpWire, ChecksumMatchesRfc1071Example) {
  // RFC 1071 section 3: the bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2 (before complement).
  const std::uint8_t b[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(fold_checksum(sum16(b)), std::uint16_t(~0xddf2));
  const std::uint8_t odd[] = {0x01};  // an odd tail is padded with a zero byte
  EXPECT_EQ(fold_checksum(sum16(odd)), std::uint16_t(~0x0100));
}

TEST(TcpWire, Ipv4RoundTripAndChecksum) {
  std::vector<std::uint8_t> p(kIpv4Hdr + 4, 0);
  write_ipv4(p.data(), kA, kB, kProtoTcp, 4, 7);
  std::memcpy(p.data() + kIpv4Hdr, "abcd", 4);
  p.push_back(0);  // Ethernet padding after total_length is ignored
  ipv4_packet ip;
  ASSERT_EQ(parse_ipv4(p, ip), ipv4_verdict::ok);
  EXPECT_EQ(ip.src, kA);
  EXPECT_EQ(ip.dst, kB);
  EXPECT_EQ(ip.proto, kProtoTcp);
  EXPECT_EQ(ip.payload.size(), 4u);
  p[8] ^= 1;  // corrupt the TTL
  EXPECT_EQ(parse_ipv4(p, ip), ipv4_verdict::bad_checksum);
  EXPECT_EQ(parse_ipv4(p, ip, false), ipv4_verdict::ok);
}

TEST(TcpWire, Ipv4FragmentsAndGarbageAreRefused) {
  std::vector<std::uint8_t> p(kIpv4Hdr + 8, 0);
  write_ipv4(p.data(), kA, kB, kProtoTcp, 8, 1);
  p[6] = 0x20;  // MF
  p[10] = p[11] = 0;
  p[10] = std::uint8_t(fold_checksum(sum16(std::span(p.data(), kIpv4Hdr))) >> 8);
  p[11] = std::uint8_t(fold_checksum(sum16(std::span(p.data(), kIpv4Hdr))) & 0xff);
  ipv4_packet ip;
  EXPECT_EQ(parse_ipv4(p, ip, false), ipv4_verdict::fragment);
  std::vector<std::uint8_t> shortp(10, 0x45);
  EXPECT_EQ(parse_ipv4(shortp, ip), ipv4_verdict::malformed);
  write_ipv4(p.data(), kA, kB, kProtoTcp, 200, 1);  // total_length beyond the buffer
  EXPECT_EQ(parse_ipv4(p, ip), ipv4_verdict::malformed);
}

TEST(TcpWire, TcpRoundTripWithOptions) {
  tcp_header h;
  h.src_port = 4222;
  h.dst_port = 50000;
  h.seq = 0xfffffff0u;
  h.ack = 12345;
  h.flags = kSyn | kAck;
  h.window = 65535;
  h.mss = 1460;
  h.wscale = 7;
  const std::size_t hl = tcp_header_len(h);
  ASSERT_EQ(hl, 28u);
  std::vector<std::uint8_t> seg(hl + 5);
  std::memcpy(seg.data() + hl, "hello", 5);
  write_tcp(seg.data(), h, kA, kB, 5);
  tcp_segment s;
  ASSERT_EQ(parse_tcp(seg, kA, kB, s), tcp_verdict::ok);
  EXPECT_EQ(s.h.src_port, 4222);
  EXPECT_EQ(s.h.dst_port, 50000);
  EXPECT_EQ(s.h.seq, 0xfffffff0u);
  EXPECT_EQ(s.h.ack, 12345u);
  EXPECT_EQ(s.h.flags, kSyn | kAck);
  EXPECT_EQ(s.h.window, 65535);
  EXPECT_EQ(s.h.mss, 1460);
  EXPECT_EQ(s.h.wscale, 7);
  EXPECT_EQ(std::string(s.payload.begin(), s.payload.end()), "hello");
  // The pseudo-header covers the addresses: the same bytes from another source fail.
  EXPECT_EQ(parse_tcp(seg, kB, kA, s), tcp_verdict::ok);  // swapping is sum-neutral...
  EXPECT_EQ(parse_tcp(seg, kA + 1, kB, s), tcp_verdict::bad_checksum);  // ...a new address is not
  seg.back() ^= 0x40;
  EXPECT_EQ(parse_tcp(seg, kA, kB, s), tcp_verdict::bad_checksum);
}

TEST(TcpWire, TcpBadOptionsAreMalformed) {
  std::vector<std::uint8_t> seg(24, 0);
  seg[12] = 6 << 4;  // 24-byte header
  seg[20] = 2;       // MSS kind with a length running past the header
  seg[21] = 9;
  tcp_segment s;
  EXPECT_EQ(parse_tcp(seg, kA, kB, s, false), tcp_verdict::malformed);
  seg[21] = 0;  // zero length would loop forever
  EXPECT_EQ(parse_tcp(seg, kA, kB, s, false), tcp_verdict::malformed);
  seg[12] = 15 << 4;  // data offset beyond the segment
  EXPECT_EQ(parse_tcp(seg, kA, kB, s, false), tcp_verdict::malformed);
  seg[12] = 6 << 4;
  seg[20] = 3, seg[21] = 3, seg[22] = 30, seg[23] = 0;  // wscale above 14 is capped
  ASSERT_EQ(parse_tcp(seg, kA, kB, s, false), tcp_verdict::ok);
  EXPECT_EQ(s.h.wscale, 14);
}

TEST(TcpWire, ArpRoundTrip) {
  arp_packet a;
  a.op = 1;
  a.sha = {1, 2, 3, 4, 5, 6};
  a.spa = kA;
  a.tpa = kB;
  std::uint8_t buf[kArpLen];
  write_arp(buf, a);
  auto p = parse_arp(buf);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->op, 1);
  EXPECT_EQ(p->sha, a.sha);
  EXPECT_EQ(p->spa, kA);
  EXPECT_EQ(p->tpa, kB);
  buf[5] = 16;  // IPv6-sized protocol address: not ours
  EXPECT_FALSE(parse_arp(buf));
}

TEST(TcpWire, EtherAndIcmpEcho) {
  std::uint8_t f[kEtherHdr + 12] = {};
  write_ether(f, kBroadcastMac, {2, 0, 0, 0, 0, 1}, kEtherIpv4);
  auto e = parse_ether(f);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->dst, kBroadcastMac);
  EXPECT_EQ(e->type, kEtherIpv4);
  std::uint8_t* icmp = f + kEtherHdr;
  icmp[0] = 8;  // echo request, id 1 seq 2, payload "ping"
  icmp[5] = 1;
  icmp[7] = 2;
  std::memcpy(icmp + 8, "ping", 4);
  const std::uint16_t c = fold_checksum(sum16(std::span<const std::uint8_t>(icmp, 12)));
  icmp[2] = std::uint8_t(c >> 8);
  icmp[3] = std::uint8_t(c);
  ASSERT_TRUE(icmp_echo_to_reply(icmp, 12));
  EXPECT_EQ(icmp[0], 0);
  EXPECT_EQ(fold_checksum(sum16(std::span<const std::uint8_t>(icmp, 12))), 0);
  EXPECT_FALSE(icmp_echo_to_reply(icmp, 12));  // a reply is not answered again
}
