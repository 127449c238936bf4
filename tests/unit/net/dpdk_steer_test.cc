// The software steering decision (net/dpdk/steer.h) over hand-built frames, and two
// ip_stacks behind it serving connections as two shards on one rx queue would: each
// connection's segments all reach the one stack that accepted it. No DPDK needed.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "net/dpdk/steer.h"
#include "net/tcp/ip_stack.h"

using namespace net::tcp;
using net::dpdk::connection_shard;
using net::dpdk::steer_frame;
using net::dpdk::steer_kind;

namespace {
constexpr std::uint32_t kUs = 0x0a000002, kPeer = 0x0a000001;
const mac_addr kUsMac{2, 0, 0, 0, 0, 2}, kPeerMac{2, 0, 0, 0, 0, 1};

using frame = std::vector<std::uint8_t>;

tcp_header hdr(std::uint16_t sport, std::uint32_t seq, std::uint32_t ack, std::uint8_t flags) {
  tcp_header h;
  h.src_port = sport;
  h.dst_port = 4222;
  h.seq = seq;
  h.ack = ack;
  h.flags = flags;
  h.window = 65535;
  return h;
}

frame tcp_frame(const tcp_header& h, std::string_view payload = {}, std::uint32_t src = kPeer) {
  const std::size_t hl = tcp_header_len(h);
  frame f(kEtherHdr + kIpv4Hdr + hl + payload.size());
  write_ether(f.data(), kUsMac, kPeerMac, kEtherIpv4);
  write_ipv4(f.data() + kEtherHdr, src, kUs, kProtoTcp, std::uint16_t(hl + payload.size()), 1);
  if (!payload.empty()) std::memcpy(f.data() + kEtherHdr + kIpv4Hdr + hl, payload.data(), payload.size());
  write_tcp(f.data() + kEtherHdr + kIpv4Hdr, h, src, kUs, payload.size());
  return f;
}

frame arp_frame(std::uint16_t op) {
  frame f(kEtherHdr + kArpLen);
  write_ether(f.data(), op == 1 ? kBroadcastMac : kUsMac, kPeerMac, kEtherArp);
  arp_packet a;
  a.op = op;
  a.sha = kPeerMac;
  a.spa = kPeer;
  a.tpa = kUs;
  if (op == 2) a.tha = kUsMac;
  write_arp(f.data() + kEtherHdr, a);
  return f;
}
}  // namespace

TEST(DpdkSteer, EverySegmentOfAConnectionGoesToOneShard) {
  for (std::uint16_t port = 40000; port < 40200; ++port) {
    const auto want = connection_shard(kPeer, port, kUs, 4222, 4);
    ASSERT_LT(want, 4u);
    for (int flags : {int(kSyn), int(kAck), kAck | kPsh, kFin | kAck, int(kRst)}) {
      const auto d = steer_frame(tcp_frame(hdr(port, 1000, 77, std::uint8_t(flags)), flags & kPsh ? "PING\r\n" : ""), 4);
      ASSERT_EQ(d.kind, steer_kind::connection);
      EXPECT_EQ(d.shard, want) << "port " << port << " flags " << flags;
    }
  }
}

TEST(DpdkSteer, SpreadsConnectionsOverAllShards) {
  for (std::uint32_t shards : {2u, 3u, 4u, 8u}) {
    std::map<std::uint32_t, int> per;
    for (std::uint16_t port = 32768; port < 32768 + 800; ++port) ++per[connection_shard(kPeer, port, kUs, 4222, shards)];
    ASSERT_EQ(per.size(), shards);
    for (auto [s, n] : per) EXPECT_GT(n, int(800 / shards / 2)) << "shard " << s << " of " << shards;
  }
}

TEST(DpdkSteer, OneShardTakesEverything) {
  EXPECT_EQ(steer_frame(tcp_frame(hdr(40001, 1, 0, kSyn)), 1).shard, 0u);
  EXPECT_EQ(connection_shard(kPeer, 1, kUs, 2, 1), 0u);
  EXPECT_EQ(connection_shard(kPeer, 1, kUs, 2, 0), 0u);
}

TEST(DpdkSteer, HashIsStableAndUsesTheWholeTuple) {
  // Stable across calls and processes (no seed): a connection never moves.
  EXPECT_EQ(connection_shard(kPeer, 40000, kUs, 4222, 16), connection_shard(kPeer, 40000, kUs, 4222, 16));
  std::set<std::uint32_t> by_peer_ip, by_local_port;
  for (std::uint32_t i = 0; i < 64; ++i) {
    by_peer_ip.insert(connection_shard(kPeer + i, 40000, kUs, 4222, 16));
    by_local_port.insert(connection_shard(kPeer, 40000, kUs, std::uint16_t(4222 + i), 16));
  }
  EXPECT_GT(by_peer_ip.size(), 4u);
  EXPECT_GT(by_local_port.size(), 4u);
}

TEST(DpdkSteer, ArpRequestsStayWithTheReceiverRepliesGoEverywhere) {
  EXPECT_EQ(steer_frame(arp_frame(1), 4).kind, steer_kind::receiver);
  EXPECT_EQ(steer_frame(arp_frame(2), 4).kind, steer_kind::every_shard);
  frame short_arp = arp_frame(2);
  short_arp.resize(kEtherHdr + 7);
  EXPECT_EQ(steer_frame(short_arp, 4).kind, steer_kind::receiver);
}

TEST(DpdkSteer, IcmpFragmentsAndJunkStayWithTheReceiver) {
  frame icmp(kEtherHdr + kIpv4Hdr + 8);
  write_ether(icmp.data(), kUsMac, kPeerMac, kEtherIpv4);
  write_ipv4(icmp.data() + kEtherHdr, kPeer, kUs, kProtoIcmp, 8, 1);
  EXPECT_EQ(steer_frame(icmp, 4).kind, steer_kind::receiver);

  frame frag = tcp_frame(hdr(40000, 1, 0, kSyn));
  frag[kEtherHdr + 6] = 0x20;  // more fragments
  EXPECT_EQ(steer_frame(frag, 4).kind, steer_kind::receiver);
  frag[kEtherHdr + 6] = 0x00;
  frag[kEtherHdr + 7] = 0x10;  // a non-zero offset
  EXPECT_EQ(steer_frame(frag, 4).kind, steer_kind::receiver);
  frame df = tcp_frame(hdr(40000, 1, 0, kSyn));
  df[kEtherHdr + 6] = 0x40;  // don't-fragment alone is an ordinary segment
  EXPECT_EQ(steer_frame(df, 4).kind, steer_kind::connection);

  EXPECT_EQ(steer_frame({}, 4).kind, steer_kind::receiver);
  frame runt = tcp_frame(hdr(40000, 1, 0, kSyn));
  runt.resize(kEtherHdr + kIpv4Hdr + 2);  // ports cut off
  EXPECT_EQ(steer_frame(runt, 4).kind, steer_kind::receiver);
  frame ipv6 = tcp_frame(hdr(40000, 1, 0, kSyn));
  ipv6[12] = 0x86;
  ipv6[13] = 0xdd;
  EXPECT_EQ(steer_frame(ipv6, 4).kind, steer_kind::receiver);
  frame bad_version = tcp_frame(hdr(40000, 1, 0, kSyn));
  bad_version[kEtherHdr] = 0x65;
  EXPECT_EQ(steer_frame(bad_version, 4).kind, steer_kind::receiver);
}

TEST(DpdkSteer, IpOptionsMoveThePortsButNotTheDecision) {
  const tcp_header h = hdr(40123, 1, 0, kSyn);
  frame plain = tcp_frame(h);
  // The same segment with 4 bytes of IP options (a NOP run) before the TCP header.
  frame opt(plain.size() + 4);
  std::memcpy(opt.data(), plain.data(), kEtherHdr + kIpv4Hdr);
  opt[kEtherHdr] = 0x46;
  std::memset(opt.data() + kEtherHdr + kIpv4Hdr, 1, 4);
  std::memcpy(opt.data() + kEtherHdr + kIpv4Hdr + 4, plain.data() + kEtherHdr + kIpv4Hdr,
              plain.size() - kEtherHdr - kIpv4Hdr);
  const auto a = steer_frame(plain, 8), b = steer_frame(opt, 8);
  ASSERT_EQ(b.kind, steer_kind::connection);
  EXPECT_EQ(a.shard, b.shard);
}

namespace {
struct frames final : frame_io {
  std::vector<frame> sent;
  frame building;
  std::uint8_t* alloc_frame(std::size_t len) override {
    building.assign(len, 0);
    return building.data();
  }
  void commit_frame() override { sent.push_back(std::move(building)); }
};
struct app final : stack_handler {
  std::set<std::uint16_t> peers;
  std::string data;
  void on_open(std::uint64_t, std::uint32_t, std::uint16_t port) override { peers.insert(port); }
  void on_data(std::uint64_t, std::string_view b) override { data.append(b); }
  void on_close(std::uint64_t) override {}
};
struct shard_stack {
  frames io;
  app handler;
  ip_stack stack;
  shard_stack() : stack(cfg(), io) {
    stack.set_handler(&handler);
    stack.listen(4222);
  }
  static stack_config cfg() {
    stack_config c;
    c.mac = kUsMac;
    c.ip = kUs;
    c.isn_seed = 7;
    return c;
  }
};
}  // namespace

// Two stacks share one address as two shards on one queue: SYN, the handshake's ACK and the
// data of every connection reach the stack the hash picked, which learnt the peer's MAC
// from the SYN itself and answers without ARP; the other stack never hears of it.
TEST(DpdkSteer, TwoStacksServeTheirOwnConnections) {
  shard_stack shards[2];
  std::set<std::uint16_t> want[2];
  for (std::uint16_t port = 41000; port < 41040; ++port) {
    const frame syn = tcp_frame(hdr(port, 100, 0, kSyn));
    auto d = steer_frame(syn, 2);
    ASSERT_EQ(d.kind, steer_kind::connection);
    shard_stack& s = shards[d.shard];
    want[d.shard].insert(port);
    s.io.sent.clear();
    s.stack.input(syn, 0);
    ASSERT_EQ(s.io.sent.size(), 1u) << "no SYN-ACK on shard " << d.shard;
    auto e = parse_ether(s.io.sent[0]);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->dst, kPeerMac);
    ipv4_packet ip;
    ASSERT_EQ(parse_ipv4(e->payload, ip), ipv4_verdict::ok);
    tcp_segment synack;
    ASSERT_EQ(parse_tcp(ip.payload, ip.src, ip.dst, synack), tcp_verdict::ok);
    ASSERT_EQ(synack.h.flags, kSyn | kAck);
    const frame ack = tcp_frame(hdr(port, 101, synack.h.seq + 1, kAck));
    const frame data = tcp_frame(hdr(port, 101, synack.h.seq + 1, kAck | kPsh), "PING\r\n");
    for (const frame* f : {&ack, &data}) {
      auto df = steer_frame(*f, 2);
      ASSERT_EQ(df.shard, d.shard);
      shards[df.shard].stack.input(*f, 0);
    }
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(want[i].empty()) << "shard " << i << " got no connection out of 40";
    EXPECT_EQ(shards[i].handler.peers, want[i]);
    EXPECT_EQ(shards[i].handler.data.size(), want[i].size() * 6);
    EXPECT_EQ(shards[i].stack.connection_count(), want[i].size());
    EXPECT_EQ(shards[i].stack.stats().rst_sent, 0u);
  }
}
