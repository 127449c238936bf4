// The TCP connection state machine driven segment by segment with an injected clock.
#include <gtest/gtest.h>

#include "net/tcp/tcp_conn.h"
#include "tests/unit/net/tcp_test_util.h"

using namespace net::tcp;
using tcptest::recorder;
using base::kMilli;

namespace {
constexpr std::uint32_t kPeerIss = 1000, kOurIss = 5000;

tcp_header seg(std::uint32_t seq, std::uint32_t ack, std::uint8_t flags, std::uint16_t win = 65535) {
  tcp_header h;
  h.seq = seq;
  h.ack = ack;
  h.flags = flags;
  h.window = win;
  return h;
}

// A server connection in ESTABLISHED: peer SYN (MSS 1000, no wscale), our SYN-ACK, peer ACK.
struct established {
  recorder out;
  tcp_config cfg;
  std::unique_ptr<tcp_conn> c;
  std::uint32_t peer_nxt = kPeerIss + 1;  // the peer's next sequence number
  explicit established(tcp_config conf = {}) : cfg(conf) {
    tcp_header syn = seg(kPeerIss, 0, kSyn);
    syn.mss = 1000;
    c = std::make_unique<tcp_conn>(cfg, syn, kOurIss, 0, out);
    c->on_segment(seg(peer_nxt, kOurIss + 1, kAck), {}, 1 * kMilli, out);
    out.take();
  }
  void data(std::string_view p, base::nanos now) {
    c->on_segment(seg(peer_nxt, kOurIss + 1, kAck | kPsh), p, now, out);
    peer_nxt += std::uint32_t(p.size());
  }
};
}  // namespace

TEST(TcpConn, PassiveOpenSendsSynAckWithOptions) {
  recorder out;
  tcp_header syn = seg(kPeerIss, 0, kSyn, 29200);
  syn.mss = 1400;
  syn.wscale = 7;
  tcp_conn c({}, syn, kOurIss, 0, out);
  ASSERT_EQ(out.segs.size(), 1u);
  const auto& sa = out.segs[0].h;
  EXPECT_EQ(sa.flags, kSyn | kAck);
  EXPECT_EQ(sa.seq, kOurIss);
  EXPECT_EQ(sa.ack, kPeerIss + 1);
  EXPECT_EQ(sa.mss, 1460);
  EXPECT_EQ(sa.wscale, 7);
  EXPECT_EQ(c.state(), tcp_state::syn_rcvd);
  c.on_segment(seg(kPeerIss + 1, kOurIss + 1, kAck, 229), {}, 2 * kMilli, out);
  EXPECT_EQ(c.state(), tcp_state::established);
  EXPECT_TRUE(out.has(tcp_event::established));
  // The peer's window is scaled by its shift: 229 << 7 bytes; our 1400-byte segments follow its MSS.
  c.send_buffer().assign(5000, 'x');
  out.take();
  c.push(3 * kMilli, out);
  ASSERT_GE(out.segs.size(), 3u);
  EXPECT_EQ(out.segs[0].payload.size(), 1400u);
}

TEST(TcpConn, NoWindowScaleWhenPeerDoesNotOfferIt) {
  recorder out;
  tcp_conn c({}, seg(kPeerIss, 0, kSyn), kOurIss, 0, out);
  EXPECT_FALSE(out.segs[0].h.wscale.has_value());
  EXPECT_EQ(out.segs[0].h.mss, 1460);
}

TEST(TcpConn, SynAckIsRetransmittedWithBackoff) {
  recorder out;
  tcp_conn c({}, seg(kPeerIss, 0, kSyn), kOurIss, 0, out);
  out.take();
  EXPECT_EQ(c.next_timer(), base::kSecond);
  c.on_timer(base::kSecond, out);
  ASSERT_EQ(out.segs.size(), 1u);
  EXPECT_EQ(out.segs[0].h.flags, kSyn | kAck);
  EXPECT_EQ(c.next_timer(), 3 * base::kSecond);  // RTO doubled
  out.take();
  c.on_segment(seg(kPeerIss, 0, kSyn), {}, base::kSecond + 1, out);  // a retransmitted SYN
  ASSERT_EQ(out.segs.size(), 1u);
  EXPECT_EQ(out.segs[0].h.flags, kSyn | kAck);
}

TEST(TcpConn, InOrderDataIsDeliveredAndAckIsDelayed) {
  established e;
  e.data("PING\r\n", 10 * kMilli);
  EXPECT_EQ(e.out.data, "PING\r\n");
  EXPECT_TRUE(e.out.segs.empty());  // one segment: the ACK waits
  EXPECT_EQ(e.c->next_timer(), 10 * kMilli + e.cfg.delayed_ack);
  e.c->on_timer(10 * kMilli + e.cfg.delayed_ack, e.out);
  ASSERT_EQ(e.out.segs.size(), 1u);
  EXPECT_EQ(e.out.segs[0].h.ack, e.peer_nxt);
  e.out.take();
  e.data("a", 100 * kMilli);
  e.data("b", 100 * kMilli);  // the second segment is ACKed at once
  ASSERT_EQ(e.out.segs.size(), 1u);
  EXPECT_EQ(e.out.segs[0].h.ack, e.peer_nxt);
}

TEST(TcpConn, ReplyCarriesTheAckSoNoSeparateAckIsSent) {
  established e;
  e.data("PING\r\n", 10 * kMilli);
  e.c->send_buffer() += "PONG\r\n";
  e.c->push(10 * kMilli, e.out);
  ASSERT_EQ(e.out.segs.size(), 1u);
  EXPECT_EQ(e.out.segs[0].payload, "PONG\r\n");
  EXPECT_EQ(e.out.segs[0].h.ack, e.peer_nxt);
  EXPECT_EQ(e.c->next_timer(), 10 * kMilli + e.c->rto());  // only the RTO is armed now
}

TEST(TcpConn, OutOfOrderSegmentsAreHeldThenDelivered) {
  established e;
  const std::uint32_t base_seq = e.peer_nxt;
  e.c->on_segment(seg(base_seq + 3, kOurIss + 1, kAck), "def", 5 * kMilli, e.out);
  EXPECT_EQ(e.out.data, "");
  ASSERT_EQ(e.out.segs.size(), 1u);  // an immediate duplicate ACK
  EXPECT_EQ(e.out.segs[0].h.ack, base_seq);
  e.c->on_segment(seg(base_seq + 6, kOurIss + 1, kAck | kFin), "ghi", 6 * kMilli, e.out);
  EXPECT_FALSE(e.out.has(tcp_event::peer_fin));
  e.out.take();
  e.c->on_segment(seg(base_seq, kOurIss + 1, kAck), "abc", 7 * kMilli, e.out);
  EXPECT_EQ(e.out.data, "abcdefghi");
  EXPECT_TRUE(e.out.has(tcp_event::peer_fin));
  EXPECT_EQ(e.c->state(), tcp_state::close_wait);
  EXPECT_EQ(e.out.segs.back().h.ack, base_seq + 10);  // 9 bytes and the FIN
}

TEST(TcpConn, OverlappingRetransmissionDeliversOnlyNewBytes) {
  established e;
  const std::uint32_t s = e.peer_nxt;
  e.c->on_segment(seg(s, kOurIss + 1, kAck), "abcd", 1 * kMilli, e.out);
  e.c->on_segment(seg(s + 2, kOurIss + 1, kAck), "cdef", 2 * kMilli, e.out);
  e.c->on_segment(seg(s, kOurIss + 1, kAck), "ab", 3 * kMilli, e.out);  // wholly old: just re-ACK
  EXPECT_EQ(e.out.data, "abcdef");
  EXPECT_EQ(e.out.segs.back().h.ack, s + 6);
}

TEST(TcpConn, RtoRetransmitsAndBacksOff) {
  established e;
  e.c->send_buffer() = "hello";
  e.c->push(10 * kMilli, e.out);
  ASSERT_EQ(e.out.take().size(), 1u);
  const base::nanos rto = e.c->rto();
  e.c->on_timer(10 * kMilli + rto, e.out);
  auto r = e.out.take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].payload, "hello");
  EXPECT_EQ(r[0].h.seq, kOurIss + 1);
  EXPECT_EQ(e.c->rto(), 2 * rto);
  EXPECT_EQ(e.c->retransmits(), 1u);
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 6, kAck), {}, 20 * kMilli + rto, e.out);
  EXPECT_EQ(e.c->unacked_bytes(), 0u);
  EXPECT_EQ(e.c->next_timer(), 0);
}

TEST(TcpConn, RttSamplesSetRtoPerRfc6298) {
  tcp_config cfg;
  cfg.rto_min = 1;  // see the raw estimator
  established e(cfg);
  e.c->send_buffer() = "x";
  e.c->push(100 * kMilli, e.out);
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 2, kAck), {}, 150 * kMilli, e.out);
  // First sample R=50ms after the handshake sample of 1ms: the estimator moves towards it.
  EXPECT_GT(e.c->rto(), 50 * kMilli);
  EXPECT_LT(e.c->rto(), 200 * kMilli);
}

TEST(TcpConn, ThreeDupAcksTriggerFastRetransmit) {
  established e;
  e.c->send_buffer().assign(5000, 'z');
  e.c->push(10 * kMilli, e.out);
  auto first = e.out.take();
  ASSERT_EQ(first.size(), 5u);  // 5 x 1000 (the peer's MSS) fits the initial window
  const std::uint32_t cwnd0 = e.c->cwnd();
  for (int i = 0; i < 2; ++i) e.c->on_segment(seg(e.peer_nxt, kOurIss + 1001, kAck), {}, 20 * kMilli, e.out);
  e.out.take();
  for (int i = 0; i < 3; ++i) e.c->on_segment(seg(e.peer_nxt, kOurIss + 1001, kAck), {}, 21 * kMilli, e.out);
  auto r = e.out.take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].h.seq, kOurIss + 1001);
  EXPECT_EQ(r[0].payload.size(), 1000u);
  EXPECT_LT(e.c->cwnd(), cwnd0 + 3000);
  // A partial ACK retransmits the next hole; the full ACK ends recovery.
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 3001, kAck), {}, 22 * kMilli, e.out);
  r = e.out.take();
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].h.seq, kOurIss + 3001);
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 5001, kAck), {}, 23 * kMilli, e.out);
  EXPECT_EQ(e.c->unacked_bytes(), 0u);
}

TEST(TcpConn, ZeroWindowIsProbedUntilItOpens) {
  established e;
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 1, kAck, 0), {}, 5 * kMilli, e.out);  // window closes
  e.c->send_buffer() = "blocked";
  e.c->push(10 * kMilli, e.out);
  EXPECT_TRUE(e.out.take().empty());
  const base::nanos t = e.c->next_timer();
  ASSERT_GT(t, 0);
  e.c->on_timer(t, e.out);
  auto probe = e.out.take();
  ASSERT_EQ(probe.size(), 1u);
  EXPECT_EQ(probe[0].h.seq, kOurIss);  // snd_una - 1: forces an ACK
  EXPECT_GT(e.c->next_timer(), t);    // the next probe backs off
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 1, kAck, 1000), {}, t + 1, e.out);  // opens
  auto d = e.out.take();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].payload, "blocked");
}

TEST(TcpConn, PausedDeliveryShrinksTheWindowAndResumes) {
  tcp_config cfg;
  cfg.rcv_buf = 4000;
  established e(cfg);
  e.c->pause_delivery();
  e.data(std::string(1000, 'a'), 1 * kMilli);
  e.data(std::string(1000, 'b'), 2 * kMilli);
  EXPECT_EQ(e.out.data, "");
  ASSERT_FALSE(e.out.segs.empty());
  EXPECT_EQ(e.out.segs.back().h.window, 2000);
  e.c->resume_delivery(3 * kMilli, e.out);
  EXPECT_EQ(e.out.data.size(), 2000u);
  EXPECT_EQ(e.out.segs.back().h.window, 4000);
}

TEST(TcpConn, PassiveCloseGoesThroughLastAck) {
  established e;
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 1, kAck | kFin), {}, 5 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::close_wait);
  EXPECT_TRUE(e.out.has(tcp_event::peer_fin));
  e.c->send_buffer() = "bye";
  e.c->close(6 * kMilli, e.out);
  auto s = e.out.take();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.back().payload, "bye");
  EXPECT_TRUE(s.back().h.flags & kFin);  // the FIN rides on the last data segment
  EXPECT_EQ(e.c->state(), tcp_state::last_ack);
  e.c->on_segment(seg(e.peer_nxt + 1, kOurIss + 5, kAck), {}, 7 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::closed);
  EXPECT_TRUE(e.out.has(tcp_event::closed));
}

TEST(TcpConn, ActiveCloseEndsInTimeWait) {
  established e;
  e.c->close(5 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::fin_wait_1);
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 2, kAck), {}, 6 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::fin_wait_2);
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 2, kAck | kFin), {}, 7 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::time_wait);
  e.out.take();
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 2, kAck | kFin), {}, 8 * kMilli, e.out);  // FIN again
  ASSERT_EQ(e.out.segs.size(), 1u);
  EXPECT_EQ(e.out.segs[0].h.ack, e.peer_nxt + 1);
  e.c->on_timer(8 * kMilli + e.cfg.time_wait, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::closed);
  EXPECT_TRUE(e.out.has(tcp_event::closed));
}

TEST(TcpConn, SimultaneousCloseGoesThroughClosing) {
  established e;
  e.c->close(5 * kMilli, e.out);
  e.c->on_segment(seg(e.peer_nxt, kOurIss + 1, kAck | kFin), {}, 6 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::closing);
  e.c->on_segment(seg(e.peer_nxt + 1, kOurIss + 2, kAck), {}, 7 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::time_wait);
}

TEST(TcpConn, RstInWindowKillsOutOfWindowIsIgnored) {
  established e;
  e.c->on_segment(seg(e.peer_nxt + 10'000'000, 0, kRst), {}, 5 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::established);
  e.c->on_segment(seg(e.peer_nxt, 0, kRst), {}, 6 * kMilli, e.out);
  EXPECT_EQ(e.c->state(), tcp_state::closed);
  EXPECT_TRUE(e.out.has(tcp_event::reset));
}

TEST(TcpConn, RetransmissionsGiveUpWithReset) {
  tcp_config cfg;
  cfg.max_retransmits = 3;
  established e(cfg);
  e.c->send_buffer() = "lost";
  e.c->push(1 * kMilli, e.out);
  for (int i = 0; i < 10 && e.c->state() != tcp_state::closed; ++i) e.c->on_timer(e.c->next_timer(), e.out);
  EXPECT_EQ(e.c->state(), tcp_state::closed);
  EXPECT_TRUE(e.out.has(tcp_event::reset));
  EXPECT_TRUE(e.out.segs.back().h.flags & kRst);
}

TEST(TcpConn, ActiveOpenHandshake) {
  recorder a, b;
  tcp_conn client({}, 77, 0, a);
  ASSERT_EQ(a.segs.size(), 1u);
  const auto syn = a.take()[0].h;
  EXPECT_EQ(syn.flags, kSyn);
  tcp_conn server({}, syn, 9000, 0, b);
  const auto synack = b.take()[0].h;
  client.on_segment(synack, {}, 1 * kMilli, a);
  EXPECT_EQ(client.state(), tcp_state::established);
  server.on_segment(a.take()[0].h, {}, 2 * kMilli, b);
  EXPECT_EQ(server.state(), tcp_state::established);
}
