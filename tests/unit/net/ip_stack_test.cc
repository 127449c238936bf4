// The host layer of the user-space stack over recorded frames: ARP, ICMP echo, fragments,
// RST for closed ports, and a full connection (handshake, data both ways, FIN) as the
// DPDK transport drives it, without DPDK.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "net/tcp/ip_stack.h"

using namespace net::tcp;
using base::kMilli;

namespace {
constexpr std::uint32_t kUs = 0x0a000002, kPeer = 0x0a000001;  // 10.0.0.2 (stack), 10.0.0.1
const mac_addr kUsMac{2, 0, 0, 0, 0, 2}, kPeerMac{2, 0, 0, 0, 0, 1};

struct frames final : frame_io {
  std::vector<std::vector<std::uint8_t>> sent;
  std::vector<std::uint8_t> building;
  bool fail = false;
  std::uint8_t* alloc_frame(std::size_t len) override {
    if (fail) return nullptr;
    building.assign(len, 0);
    return building.data();
  }
  void commit_frame() override { sent.push_back(std::move(building)); }
};

struct app final : stack_handler {
  std::vector<std::uint64_t> opened, closed;
  std::string data;
  std::uint32_t peer_ip = 0;
  void on_open(std::uint64_t id, std::uint32_t ip, std::uint16_t) override {
    opened.push_back(id);
    peer_ip = ip;
  }
  void on_data(std::uint64_t, std::string_view b) override { data.append(b); }
  void on_close(std::uint64_t id) override { closed.push_back(id); }
};

std::vector<std::uint8_t> tcp_frame(const tcp_header& h, std::string_view payload, mac_addr dst = kUsMac) {
  const std::size_t hl = tcp_header_len(h);
  std::vector<std::uint8_t> f(kEtherHdr + kIpv4Hdr + hl + payload.size());
  write_ether(f.data(), dst, kPeerMac, kEtherIpv4);
  write_ipv4(f.data() + kEtherHdr, kPeer, kUs, kProtoTcp, std::uint16_t(hl + payload.size()), 1);
  if (!payload.empty()) std::memcpy(f.data() + kEtherHdr + kIpv4Hdr + hl, payload.data(), payload.size());
  write_tcp(f.data() + kEtherHdr + kIpv4Hdr, h, kPeer, kUs, payload.size());
  return f;
}

// Parses a frame the stack sent as TCP towards the peer.
tcp_segment sent_tcp(const std::vector<std::uint8_t>& f) {
  auto e = parse_ether(f);
  EXPECT_TRUE(e);
  EXPECT_EQ(e->dst, kPeerMac);
  ipv4_packet ip;
  EXPECT_EQ(parse_ipv4(e->payload, ip), ipv4_verdict::ok);
  EXPECT_EQ(ip.dst, kPeer);
  tcp_segment s;
  EXPECT_EQ(parse_tcp(ip.payload, ip.src, ip.dst, s), tcp_verdict::ok);  // checksums verified
  return s;
}

struct fixture {
  frames io;
  app handler;
  ip_stack stack;
  fixture() : stack(make_cfg(), io) {
    stack.set_handler(&handler);
    stack.listen(4222);
  }
  static stack_config make_cfg() {
    stack_config c;
    c.mac = kUsMac;
    c.ip = kUs;
    c.isn_seed = 1;
    return c;
  }
  void in(const std::vector<std::uint8_t>& f, base::nanos now) { stack.input(f, now); }
};

tcp_header hdr(std::uint32_t seq, std::uint32_t ack, std::uint8_t flags, std::uint16_t dport = 4222) {
  tcp_header h;
  h.src_port = 50000;
  h.dst_port = dport;
  h.seq = seq;
  h.ack = ack;
  h.flags = flags;
  h.window = 65535;
  return h;
}
}  // namespace

TEST(IpStack, AnswersArpForItsAddressOnly) {
  fixture t;
  std::vector<std::uint8_t> f(kEtherHdr + kArpLen);
  write_ether(f.data(), kBroadcastMac, kPeerMac, kEtherArp);
  arp_packet a;
  a.op = 1;
  a.sha = kPeerMac;
  a.spa = kPeer;
  a.tpa = kUs;
  write_arp(f.data() + kEtherHdr, a);
  t.in(f, 0);
  ASSERT_EQ(t.io.sent.size(), 1u);
  EXPECT_EQ(t.io.sent[0].size(), 60u);  // padded to the Ethernet minimum
  auto r = parse_arp(std::span(t.io.sent[0]).subspan(kEtherHdr));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->op, 2);
  EXPECT_EQ(r->sha, kUsMac);
  EXPECT_EQ(r->spa, kUs);
  EXPECT_EQ(r->tpa, kPeer);
  a.tpa = kUs + 1;  // someone else's address
  write_arp(f.data() + kEtherHdr, a);
  t.in(f, 0);
  EXPECT_EQ(t.io.sent.size(), 1u);
}

TEST(IpStack, RepliesToIcmpEcho) {
  fixture t;
  std::vector<std::uint8_t> f(kEtherHdr + kIpv4Hdr + 12);
  write_ether(f.data(), kUsMac, kPeerMac, kEtherIpv4);
  write_ipv4(f.data() + kEtherHdr, kPeer, kUs, kProtoIcmp, 12, 9);
  std::uint8_t* icmp = f.data() + kEtherHdr + kIpv4Hdr;
  icmp[0] = 8;
  std::memcpy(icmp + 8, "abcd", 4);
  const std::uint16_t c = fold_checksum(sum16(std::span<const std::uint8_t>(icmp, 12)));
  icmp[2] = std::uint8_t(c >> 8);
  icmp[3] = std::uint8_t(c);
  t.in(f, 0);
  ASSERT_EQ(t.io.sent.size(), 1u);
  ipv4_packet ip;
  ASSERT_EQ(parse_ipv4(std::span(t.io.sent[0]).subspan(kEtherHdr), ip), ipv4_verdict::ok);
  EXPECT_EQ(ip.proto, kProtoIcmp);
  EXPECT_EQ(ip.dst, kPeer);
  EXPECT_EQ(ip.payload[0], 0);  // echo reply
  EXPECT_EQ(std::string(ip.payload.begin() + 8, ip.payload.end()), "abcd");
  EXPECT_EQ(t.stack.stats().icmp_echo, 1u);
}

TEST(IpStack, DropsFragmentsAndBadChecksums) {
  fixture t;
  auto f = tcp_frame(hdr(100, 0, kSyn), {});
  f[kEtherHdr + 6] |= 0x20;  // MF: the header checksum is now wrong too, so turn checks off
  f[kEtherHdr + 10] = f[kEtherHdr + 11] = 0;
  const std::uint16_t c = fold_checksum(sum16(std::span(f).subspan(kEtherHdr, kIpv4Hdr)));
  f[kEtherHdr + 10] = std::uint8_t(c >> 8);
  f[kEtherHdr + 11] = std::uint8_t(c);
  t.in(f, 0);
  EXPECT_EQ(t.stack.stats().dropped_fragment, 1u);
  auto g = tcp_frame(hdr(100, 0, kSyn), {});
  g.back() ^= 0xff;  // corrupt the TCP checksum
  t.in(g, 0);
  EXPECT_EQ(t.stack.stats().dropped_bad, 1u);
  EXPECT_TRUE(t.io.sent.empty());
  // When the NIC reports the checksums good, software does not check them again.
  t.stack.input(g, 0, true, true);
  EXPECT_EQ(t.stack.stats().accepted, 1u);
}

TEST(IpStack, ClosedPortGetsRst) {
  fixture t;
  t.in(tcp_frame(hdr(100, 0, kSyn, 9999), {}), 0);
  ASSERT_EQ(t.io.sent.size(), 1u);
  auto s = sent_tcp(t.io.sent[0]);
  EXPECT_EQ(s.h.flags, kRst | kAck);
  EXPECT_EQ(s.h.ack, 101u);
  EXPECT_EQ(s.h.src_port, 9999);
  EXPECT_EQ(s.h.dst_port, 50000);
}

TEST(IpStack, ConnectionLifecycle) {
  fixture t;
  tcp_header syn = hdr(1000, 0, kSyn);
  syn.mss = 1460;
  t.in(tcp_frame(syn, {}), 0);
  ASSERT_EQ(t.io.sent.size(), 1u);
  auto synack = sent_tcp(t.io.sent[0]);
  EXPECT_EQ(synack.h.flags, kSyn | kAck);
  EXPECT_EQ(synack.h.ack, 1001u);
  const std::uint32_t iss = synack.h.seq;
  // The handshake's ACK carries the first bytes: on_open comes before on_data.
  t.in(tcp_frame(hdr(1001, iss + 1, kAck | kPsh), "CONNECT {}\r\n"), 1 * kMilli);
  ASSERT_EQ(t.handler.opened.size(), 1u);
  EXPECT_EQ(t.handler.peer_ip, kPeer);
  EXPECT_EQ(t.handler.data, "CONNECT {}\r\n");
  const std::uint64_t id = t.handler.opened[0];
  std::string* out = t.stack.send_buffer(id);
  ASSERT_NE(out, nullptr);
  out->append("PONG\r\n");
  t.io.sent.clear();
  t.stack.push(id, 2 * kMilli);
  ASSERT_EQ(t.io.sent.size(), 1u);
  auto pong = sent_tcp(t.io.sent[0]);
  EXPECT_EQ(std::string(pong.payload.begin(), pong.payload.end()), "PONG\r\n");
  EXPECT_EQ(pong.h.ack, 1001u + 12);
  // The peer closes: the application hears on_close at the next poll, and our FIN follows.
  t.io.sent.clear();
  t.in(tcp_frame(hdr(1013, iss + 7, kAck | kFin), {}), 3 * kMilli);
  EXPECT_TRUE(t.handler.closed.empty());
  t.stack.poll(3 * kMilli);
  ASSERT_EQ(t.handler.closed.size(), 1u);
  EXPECT_EQ(t.stack.send_buffer(id), nullptr);
  ASSERT_FALSE(t.io.sent.empty());
  EXPECT_TRUE(sent_tcp(t.io.sent.back()).h.flags & kFin);
  t.in(tcp_frame(hdr(1014, iss + 8, kAck), {}), 4 * kMilli);  // ACK of our FIN: LAST_ACK -> CLOSED
  t.stack.poll(4 * kMilli);
  EXPECT_EQ(t.stack.connection_count(), 0u);
  EXPECT_EQ(t.handler.closed.size(), 1u);  // exactly once
}

TEST(IpStack, ApplicationCloseFlushesThenFins) {
  fixture t;
  t.in(tcp_frame(hdr(1000, 0, kSyn), {}), 0);
  const std::uint32_t iss = sent_tcp(t.io.sent[0]).h.seq;
  t.in(tcp_frame(hdr(1001, iss + 1, kAck), {}), 1 * kMilli);
  const std::uint64_t id = t.handler.opened.at(0);
  t.stack.send_buffer(id)->append("-ERR 'Authorization Violation'\r\n");
  t.stack.close(id, true);
  t.io.sent.clear();
  t.stack.poll(2 * kMilli);
  ASSERT_EQ(t.handler.closed.size(), 1u);
  ASSERT_FALSE(t.io.sent.empty());
  auto last = sent_tcp(t.io.sent.back());
  EXPECT_EQ(std::string(last.payload.begin(), last.payload.end()), "-ERR 'Authorization Violation'\r\n");
  EXPECT_TRUE(last.h.flags & kFin);
}

TEST(IpStack, UnknownPeerMacIsResolvedByArp) {
  stack_config c = fixture::make_cfg();
  c.gateway = 0x0a0000fe;  // 10.0.0.254
  frames io;
  ip_stack s(c, io);
  s.listen(4222);
  // A SYN from off-subnet arrives via the gateway: its MAC is learnt for the gateway.
  tcp_header h = hdr(5, 0, kSyn);
  auto f = tcp_frame(h, {});
  write_ipv4(f.data() + kEtherHdr, 0xc0000201, kUs, kProtoTcp, std::uint16_t(kTcpHdr), 1);  // 192.0.2.1
  write_tcp(f.data() + kEtherHdr + kIpv4Hdr, h, 0xc0000201, kUs, 0);
  s.input(f, 0);
  ASSERT_EQ(io.sent.size(), 1u);  // the SYN-ACK went to the gateway's MAC without asking
  EXPECT_EQ(parse_ether(io.sent[0])->dst, kPeerMac);
}

TEST(IpStack, SynsBeyondTheConnectionCapAreDroppedAndHalfOpenOnesExpire) {
  stack_config c = fixture::make_cfg();
  c.max_connections = 2;
  frames io;
  app handler;
  ip_stack s(c, io);
  s.set_handler(&handler);
  s.listen(4222);
  for (std::uint16_t port = 1; port <= 3; ++port) {
    tcp_header h = hdr(100, 0, kSyn);
    h.src_port = port;
    s.input(tcp_frame(h, {}), 0);
  }
  EXPECT_EQ(s.connection_count(), 2u);
  EXPECT_EQ(s.stats().syn_dropped_full, 1u);
  // Nobody completes the handshakes: SYN-ACKs are retried 5 times, then the entries go.
  base::nanos now = 0;
  for (int i = 0; i < 20 && s.connection_count() > 0; ++i) {
    now = s.next_timer();
    ASSERT_GT(now, 0);
    s.poll(now);
    s.poll(now);  // deferred reaping
  }
  EXPECT_EQ(s.connection_count(), 0u);
  EXPECT_TRUE(handler.opened.empty());
  EXPECT_TRUE(handler.closed.empty());
}

TEST(IpStack, TxChecksumOffloadLeavesThePseudoHeaderSumForTheNic) {
  struct offload_frames final : frame_io {
    std::vector<std::vector<std::uint8_t>> sent;
    std::vector<std::uint8_t> building;
    int offloaded = 0;
    std::uint8_t* alloc_frame(std::size_t len) override {
      building.assign(len, 0);
      return building.data();
    }
    void commit_frame() override { sent.push_back(std::move(building)); }
    bool tx_checksum_offload() const override { return true; }
    void commit_tcp_offload_frame() override {
      ++offloaded;
      // What the NIC does: IPv4 header checksum, then the TCP sum seeded with the field.
      std::uint8_t* ip = building.data() + kEtherHdr;
      const std::uint16_t ipc = fold_checksum(sum16(std::span<const std::uint8_t>(ip, kIpv4Hdr)));
      ip[10] = std::uint8_t(ipc >> 8);
      ip[11] = std::uint8_t(ipc);
      std::uint8_t* t = ip + kIpv4Hdr;
      const std::size_t tl = building.size() - kEtherHdr - kIpv4Hdr;
      const std::uint16_t tc = fold_checksum(sum16(std::span<const std::uint8_t>(t, tl)));
      t[16] = std::uint8_t(tc >> 8);
      t[17] = std::uint8_t(tc);
      commit_frame();
    }
  };
  offload_frames io;
  ip_stack s(fixture::make_cfg(), io);
  s.listen(4222);
  tcp_header syn = hdr(1000, 0, kSyn);
  syn.mss = 1460;
  s.input(tcp_frame(syn, {}), 0);
  ASSERT_EQ(io.offloaded, 1);
  ASSERT_EQ(io.sent.size(), 1u);
  // After the "NIC" finished it, the frame verifies like a software-checksummed one.
  auto synack = sent_tcp(io.sent[0]);
  EXPECT_EQ(synack.h.flags, kSyn | kAck);
}
